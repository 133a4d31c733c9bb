"""The edits of one method, with libcst: its body replaced or reduced, its delegate swapped for ``super()``,
its parameters slimmed, its marks, the mixin's hook code, and the statements a hook takes over trimmed.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from codemod.analyse.analysis import Nested
from codemod.analyse.copies import IGNORE_COPY
from codemod.rules._pattern import findall_of
from codemod.sources import MARK, METHOD, MIXIN_CLASS
from codemod.transform.cst_code import (
    BLANK_LINE,
    RewriteError,
    as_statement,
    class_statements,
    code_block,
    comment_line,
    in_module_style,
    is_comment,
    is_copy_marker,
    is_docstring,
    names_used,
    returns_at_end,
    with_indented_body,
    without_runs,
)
from codemod.transform.edits import Edit, HookCode
from codemod.transform.formatting import BODY_INDENT, CLASS_INDENT, LINE_LENGTH, fitted_mark, laid_out


def replace_body(
    module: cst.Module,
    function: cst.FunctionDef,
    body: str,
    keep: Sequence[int] = (),
    keep_after: Sequence[int] = (),
    cuts: Sequence[Nested] = (),
    line_length: int = LINE_LENGTH,
) -> cst.FunctionDef:
    """Same header (decorators, signature, comments above), new body; the statements at ``keep``
    (indices into the old body) stay, in their order, in front of it, and those at ``keep_after`` right
    after its first statement (the super() call), with their comments, less the runs of statements ``cuts``
    names inside them."""
    function = with_indented_body(function)
    assert isinstance(function.body, cst.IndentedBlock)
    old = function.body.body
    if any(i >= len(old) for i in (*keep, *keep_after)):
        raise RewriteError(f"cannot keep statements {sorted({*keep, *keep_after})} of a body of {len(old)}")
    new = code_block(module, laid_out(body, BODY_INDENT, line_length))

    def kept(indices: Sequence[int]) -> list[cst.SimpleStatementLine | cst.BaseCompoundStatement]:
        statements = (
            without_runs(as_statement(old[i]), [(c.path[1:], c.count) for c in cuts if c.path[0] == i])
            for i in indices
        )
        return [s for s in statements if s is not None]

    head = [*kept(keep), *new[:1]]
    if keep:  # the first statement kept in front opens the body now: no blank line parts it from the signature
        first_kept = as_statement(head[0])
        leading = list(first_kept.leading_lines)
        while leading and leading[0].comment is None:
            leading.pop(0)
        head[0] = first_kept.with_changes(leading_lines=leading)
    after = kept(keep_after)
    # the ``# Overwritten --`` line heads the body: a statement kept after super() leaves its own there
    marks = [line for s in after for line in s.leading_lines if is_comment(line, MARK)]
    if marks:
        after = [
            s.with_changes(leading_lines=[line for line in s.leading_lines if not is_comment(line, MARK)])
            for s in after
        ]
        first = as_statement(head[0])
        head[0] = first.with_changes(leading_lines=[*marks, *first.leading_lines])
    return function.with_changes(body=function.body.with_changes(body=[*head, *after, *new[1:]]))


def method_with_moved(
    module: cst.Module, source: cst.FunctionDef, edit: Edit, line_length: int = LINE_LENGTH
) -> cst.FunctionDef:
    """``ADD_METHOD``: the edit's method with the statements of ``source`` at ``edit.keep`` moved in front of its
    ``return``, their comments with them (not an ``# Overwritten --`` mark: it spoke of ``source``). One moved
    assignment to the name the method returns becomes the return itself, as a person writes it."""
    source = with_indented_body(source)
    assert isinstance(source.body, cst.IndentedBlock)
    old = source.body.body
    if any(i >= len(old) for i in edit.keep):
        raise RewriteError(f"cannot move statements {sorted(edit.keep)} of a body of {len(old)}")
    (new,) = class_statements(module, laid_out(edit.text, CLASS_INDENT, line_length))
    if not isinstance(new, cst.FunctionDef) or not isinstance(new.body, cst.IndentedBlock):
        raise RewriteError(f"not one method: {edit.text!r}")
    moved = [as_statement(old[i]) for i in edit.keep]
    moved = [
        s.with_changes(leading_lines=[line for line in s.leading_lines if not is_comment(line, MARK)]) for s in moved
    ]
    body = list(new.body.body)
    returned = body[-1]
    if (
        len(moved) == 1
        and m.matches(moved[0], m.SimpleStatementLine([m.Assign([m.AssignTarget(m.Name())])]))
        and m.matches(returned, m.SimpleStatementLine([m.Return(m.Name())]))
    ):
        assign = cst.ensure_type(cst.ensure_type(moved[0], cst.SimpleStatementLine).body[0], cst.Assign)
        name = cst.ensure_type(assign.targets[0].target, cst.Name).value
        value = cst.ensure_type(cst.ensure_type(returned, cst.SimpleStatementLine).body[0], cst.Return).value
        if value is not None and m.matches(value, m.Name(name)):
            statement = cst.ensure_type(moved[0], cst.SimpleStatementLine)
            return new.with_changes(
                body=new.body.with_changes(
                    body=[*body[:-1], statement.with_changes(body=[cst.Return(value=assign.value)])]
                )
            )
    return new.with_changes(body=new.body.with_changes(body=[*body[:-1], *moved, returned]))


def replace_function(module: cst.Module, function: cst.FunctionDef, code: str) -> list[cst.FunctionDef]:
    """Whole new methods (the hoisted implementation, and the variant after it), where the old one stood."""
    cls = in_module_style(module, "class _:", code).body[0]
    assert isinstance(cls, cst.ClassDef) and isinstance(cls.body, cst.IndentedBlock)
    new = [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]
    assert new and len(new) == len(cls.body.body)
    return [new[0].with_changes(leading_lines=function.leading_lines), *new[1:]]


class _SuperInsteadOfSubmodel(cst.CSTTransformer):
    """``self.<sub-model>.prepare_inputs_for_generation(...)`` -> ``super().prepare_inputs_for_generation(...)``."""

    def __init__(self) -> None:
        self.swapped = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if m.matches(updated.func, m.Attribute(value=m.Attribute(value=m.Name("self")), attr=m.Name(METHOD))):
            self.swapped += 1
            return updated.with_changes(func=updated.func.with_changes(value=cst.parse_expression("super()")))
        return updated


def swap_delegate(
    module: cst.Module, function: cst.FunctionDef, keep_params: Sequence[str] = (), line_length: int = LINE_LENGTH
) -> cst.FunctionDef:
    """The delegation asks super(); with ``keep_params``, the other parameters leave the signature and
    the call (``name=name`` there), reaching super() through ``**kwargs``."""
    swapper = _SuperInsteadOfSubmodel()
    swapped = function.visit(swapper)
    if swapper.swapped != 1:
        raise RewriteError(f"expected one call to self.<sub-model>.{METHOD}, found {swapper.swapped}")
    assert isinstance(swapped, cst.FunctionDef)
    if not keep_params:
        return swapped
    dropped = (
        {p.name.value for p in (*swapped.params.params, *swapped.params.kwonly_params)} - set(keep_params) - {"self"}
    )
    body = list(cst.ensure_type(swapped.body, cst.IndentedBlock).body)
    super_call = m.Call(func=m.Attribute(value=m.Call(func=m.Name("super"))))
    call_at = next((i for i, s in enumerate(body) if m.findall(s, super_call)), None)
    statement = body[call_at] if call_at is not None else None
    # the slimmed call is rebuilt as one statement of the body: ``x = super()...(...)`` or ``return super()...(...)``
    if not (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and m.matches(
            statement.body[0], m.Assign(targets=[m.AssignTarget()], value=super_call) | m.Return(value=super_call)
        )
    ):
        raise RewriteError("the delegated call is not a statement of the body of its own: its parameters stay")
    assert call_at is not None
    small = statement.body[0]
    assert isinstance(small, (cst.Assign, cst.Return)) and isinstance(small.value, cst.Call)
    kept = [
        a
        for a in small.value.args
        if not (a.keyword is not None and a.keyword.value in dropped and m.matches(a.value, m.Name(a.keyword.value)))
    ]
    target = (
        cst.Module(body=[]).code_for_node(small.targets[0].target) + " = "
        if isinstance(small, cst.Assign)
        else "return "
    )
    new = _super_call_statement(module, target, kept, statement.leading_lines, line_length)
    body[call_at] = new
    if names_used([new, *body]) & dropped:
        raise RewriteError(f"parameters to drop are still read: {sorted(names_used(body) & dropped)}")
    slim = with_slim_parameters(
        module, swapped.with_changes(body=swapped.body.with_changes(body=body)), keep_params, line_length
    )
    return slim


def _super_call_statement(
    module: cst.Module,
    target: str,
    arguments: Sequence[cst.Arg],
    leading_lines: Sequence[cst.EmptyLine],
    line_length: int = LINE_LENGTH,
) -> cst.BaseStatement:
    """``<target>super().<method>(<arguments>)`` as one statement, laid out as ruff would, with the comments and
    blank lines above it that the statement it replaces had."""
    code = cst.Module(body=[])
    texts = [
        code.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip().rstrip(",") for a in arguments
    ]
    call = f"{target}super().{METHOD}({', '.join(texts)})\n"
    new = code_block(module, laid_out(call, BODY_INDENT, line_length))[0]
    return new.with_changes(leading_lines=leading_lines)


def direct_return(module: cst.Module, function: cst.FunctionDef, line_length: int = LINE_LENGTH) -> cst.FunctionDef:
    """``model_inputs = super().<method>(...)`` and then ``return model_inputs`` as one ``return super().<method>(...)``,
    laid out again (``Edit.direct_return``); left as it is where a comment would be lost (on the return, or among
    the call's arguments) or the two statements are not the body's last."""
    if not isinstance(function.body, cst.IndentedBlock) or len(function.body.body) < 2:
        return function
    *rest, call_line, return_line = function.body.body
    super_call = m.Call(func=m.Attribute(value=m.Call(func=m.Name("super")), attr=m.Name(METHOD)))
    if not (
        m.matches(call_line, m.SimpleStatementLine([m.Assign(targets=[m.AssignTarget(m.Name())], value=super_call)]))
        and m.matches(return_line, m.SimpleStatementLine([m.Return(m.Name())]))
    ):
        return function
    assert isinstance(call_line, cst.SimpleStatementLine) and isinstance(return_line, cst.SimpleStatementLine)
    assign, returned = call_line.body[0], return_line.body[0]
    assert isinstance(assign, cst.Assign) and isinstance(returned, cst.Return)
    name, value = (
        cst.ensure_type(assign.targets[0].target, cst.Name).value,
        cst.ensure_type(returned.value, cst.Name).value,
    )
    call = cst.ensure_type(assign.value, cst.Call)
    if (
        name != value
        or m.findall(return_line, m.Comment())
        or m.findall(call_line.body[0], m.Comment())
        or call_line.trailing_whitespace.comment
        or names_used(rest) & {name}
    ):
        # (a name the kept statements also use stays: RWKV keeps a dict of its own under it in front)
        return function
    new = _super_call_statement(module, "return ", call.args, call_line.leading_lines, line_length)
    return function.with_changes(body=function.body.with_changes(body=[*rest, new]))


def before_return(
    module: cst.Module, function: cst.FunctionDef, code: str, line_length: int = LINE_LENGTH
) -> cst.FunctionDef:
    """``code`` (statements on the prepared dict) right before the body's final ``return model_inputs``:
    what a swapped delegation's sub-model did that super() does not (verification's repair)."""
    body = list(cst.ensure_type(function.body, cst.IndentedBlock).body)
    if not body or not m.matches(body[-1], m.SimpleStatementLine(body=[m.Return(value=m.Name("model_inputs"))])):
        raise RewriteError("the body does not end in `return model_inputs`: nothing to add the repair before")
    added = code_block(module, laid_out(code, BODY_INDENT, line_length))
    return function.with_changes(body=function.body.with_changes(body=[*body[:-1], *added, body[-1]]))


def with_slim_parameters(
    module: cst.Module, function: cst.FunctionDef, keep: Sequence[str], line_length: int = LINE_LENGTH
) -> cst.FunctionDef:
    """Keep only the named parameters (with their annotations and defaults), laid out as ruff would at
    ``line_length`` (on one line if it fits)."""
    params = function.params
    positional = [p for p in params.params if p.name.value in keep or p.name.value == "self"]
    keyword_only = [p for p in params.kwonly_params if p.name.value in keep]
    star = params.star_arg if isinstance(params.star_arg, cst.Param) else (cst.ParamStar() if keyword_only else None)
    parts = [_param_code(p) for p in positional]
    if isinstance(star, cst.Param):
        parts.append(_param_code(star))
    elif star is not None:
        parts.append("*")
    parts += [_param_code(p) for p in keyword_only]
    if params.star_kwarg is not None:
        parts.append(_param_code(params.star_kwarg))
    # a method of a class: laid out at the class body's indent; lines are written at the method's level, and
    # in_module_style indents them into the class
    header = laid_out(f"def {function.name.value}({', '.join(parts)}):\n    pass\n", CLASS_INDENT, line_length)
    parsed = in_module_style(module, "class _:", header).body[0]
    assert isinstance(parsed, cst.ClassDef) and isinstance(parsed.body, cst.IndentedBlock)
    new = parsed.body.body[0]
    assert isinstance(new, cst.FunctionDef)
    return function.with_changes(params=new.params, whitespace_before_params=new.whitespace_before_params)


def _param_code(param: cst.Param) -> str:
    return (
        cst.Module(body=[])
        .code_for_node(
            param.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_param=cst.SimpleWhitespace(""))
        )
        .strip()
    )


def with_mark(function: cst.FunctionDef, reason: str, line_length: int = LINE_LENGTH) -> cst.FunctionDef:
    """``# Overwritten -- reason`` as the first line of the body (transformers' convention)."""
    function = with_indented_body(function)
    assert isinstance(function.body, cst.IndentedBlock)
    first = function.body.body[0]
    assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement))  # every BaseStatement
    if any(is_comment(line, MARK) for line in first.leading_lines):
        return function
    mark = comment_line(fitted_mark(f"{MARK} {reason}", BODY_INDENT, line_length))
    marked = first.with_changes(leading_lines=[mark, *first.leading_lines])
    return function.with_changes(body=function.body.with_changes(body=[marked, *function.body.body[1:]]))


def drop_marker(function: cst.FunctionDef) -> cst.FunctionDef:
    """Remove a ``# Copied from`` comment above the method (its source changed: it is no copy now)."""
    return function.with_changes(
        leading_lines=[line for line in function.leading_lines if not is_copy_marker(line)],
        lines_after_decorators=[line for line in function.lines_after_decorators if not is_copy_marker(line)],
    )


def ignore_copy(function: cst.FunctionDef) -> cst.FunctionDef:
    """``# Ignore copy`` right above the method: a class-level copy no longer covers it."""
    if any(is_comment(line, IGNORE_COPY) for line in function.leading_lines):
        return function
    return function.with_changes(leading_lines=[*function.leading_lines, comment_line(IGNORE_COPY)])


def hook_method(
    module: cst.Module, function: cst.FunctionDef, hook: HookCode, line_length: int = LINE_LENGTH
) -> cst.FunctionDef:
    """The mixin's method with the hook's prologue after its docstring and its epilogue right before its
    final ``return model_inputs`` (once: a method that already reads the attribute is left as it is)."""
    function = with_indented_body(function)
    assert isinstance(function.body, cst.IndentedBlock)
    if m.findall(function, m.Attribute(value=m.Name("self"), attr=m.Name(hook.attribute))):
        return function
    body = list(function.body.body)
    if not body or not m.matches(body[-1], m.SimpleStatementLine([m.Return(m.Name("model_inputs"))])):
        raise RewriteError(
            f"{MIXIN_CLASS}.{METHOD} does not end in 'return model_inputs': no place for the {hook.attribute} hook"
        )
    # the hook's code says why in its own first comment; without one, where to read about it
    comment = comment_line(f"# see {MIXIN_CLASS}.{hook.attribute}")
    prologue = (
        list(code_block(module, laid_out(hook.prologue, BODY_INDENT, line_length))) if hook.prologue.strip() else []
    )
    epilogue = (
        list(code_block(module, laid_out(hook.epilogue, BODY_INDENT, line_length))) if hook.epilogue.strip() else []
    )
    for statement in prologue:
        if returns_at_end(statement):
            continue  # what it assigns never reaches the method's own statements: it returns first
        for target in findall_of(cst.AssignTarget, statement, m.AssignTarget(target=m.Name())):
            assert isinstance(target.target, cst.Name)  # what the matcher asked for
            local = target.target.value
            if m.findall(function, m.Name(local)):
                raise RewriteError(f"{MIXIN_CLASS}.{METHOD} already uses the name {local!r} the hook needs")
    if prologue:
        first = as_statement(prologue[0])
        prologue[0] = first.with_changes(leading_lines=list(first.leading_lines) or [comment])
        start = 1 if is_docstring(body[0]) else 0
        following = as_statement(body[start]) if start < len(body) else None
        if following is not None and not (following.leading_lines and following.leading_lines[0].comment is None):
            # a blank line between the hook's statements and the method's own (and the comment above them)
            body[start] = following.with_changes(leading_lines=[BLANK_LINE, *following.leading_lines])
        body = [*body[:start], *prologue, *body[start:]]
    if epilogue:
        first = as_statement(epilogue[0])
        epilogue[0] = first.with_changes(leading_lines=[BLANK_LINE, *(first.leading_lines or [comment])])
        last = as_statement(body[-1])
        if not last.leading_lines:
            last = last.with_changes(leading_lines=[BLANK_LINE])
        body = [*body[:-1], *epilogue, last]
    return function.with_changes(body=function.body.with_changes(body=body))


def trim(
    function: cst.FunctionDef, remove: Sequence[int], mark: str = "", line_length: int = LINE_LENGTH
) -> cst.FunctionDef:
    """The method without its top-level statements at ``remove`` (with the comments above them); ``mark``: the
    new reason of the ``# Overwritten --`` comment on its first statement (one this tool wrote, which named what
    the removed statements did)."""
    function = with_indented_body(function)
    assert isinstance(function.body, cst.IndentedBlock)
    old = list(function.body.body)
    if not remove or any(i >= len(old) for i in remove):
        raise RewriteError(f"cannot remove statements {list(remove)} of a body of {len(old)}")
    kept = [s for i, s in enumerate(old) if i not in set(remove)]
    if not kept:
        raise RewriteError("a trim may not remove every statement")
    first = as_statement(kept[0])
    if mark and any(is_comment(line, MARK) for line in first.leading_lines):
        new_mark = comment_line(fitted_mark(f"{MARK} {mark}", BODY_INDENT, line_length))
        lines = [new_mark if is_comment(line, MARK) else line for line in first.leading_lines]
        kept[0] = first.with_changes(leading_lines=lines)
    return function.with_changes(body=function.body.with_changes(body=kept))

"""The edits of one class, with libcst: its method's edits, the class attributes it sets, the mixin's hook
attributes, and the mixin among its bases.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from codemod.sources import METHOD, MIXIN_CLASS
from codemod.transform.alias import ASSIGNMENT, bare_forwarding
from codemod.transform.cst_code import BLANK_LINE, RewriteError, as_statement, class_statements, is_docstring
from codemod.transform.edits import Edit, EditKind, HookCode
from codemod.transform.formatting import CLASS_INDENT, LINE_LENGTH, laid_out
from codemod.transform.method_edits import (
    before_return,
    direct_return,
    drop_marker,
    hook_method,
    ignore_copy,
    method_with_moved,
    replace_body,
    replace_function,
    swap_delegate,
    trim,
    with_mark,
    with_slim_parameters,
)


def _add_mixin_base(cls: cst.ClassDef) -> cst.ClassDef:
    """``class X(XPreTrainedModel, GenerationMixin)``, as transformers writes generative classes."""
    if any(m.matches(arg.value, m.Name(MIXIN_CLASS) | m.Attribute(attr=m.Name(MIXIN_CLASS))) for arg in cls.bases):
        return cls
    bases = list(cls.bases)
    if bases and bases[-1].comma is not cst.MaybeSentinel.DEFAULT:
        new = cst.Arg(cst.Name(MIXIN_CLASS), comma=bases[-1].comma)
        bases[-1] = bases[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    else:
        if bases:
            bases[-1] = bases[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = cst.Arg(cst.Name(MIXIN_CLASS))
    return cls.with_changes(bases=[*bases, new], lpar=cst.LeftParen(), rpar=cst.RightParen())


_CLASS_LEVEL_EDITS = (EditKind.SET_ATTRIBUTE, EditKind.HOOK)


def _assigned_name(statement: cst.CSTNode) -> str | None:
    """The name a class-level ``name = …`` / ``name: T = …`` assigns, or None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        return small.target.value
    return None


def _literal(statement: cst.CSTNode) -> object:
    """The value a class-level assignment gives, when it is a literal (None otherwise)."""
    if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(
        statement.body[0], (cst.Assign, cst.AnnAssign)
    ):
        return None
    value = statement.body[0].value
    try:
        return ast.literal_eval(cst.Module(body=[]).code_for_node(value)) if value is not None else None
    except (ValueError, SyntaxError):
        return None


def _literal_code(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _merged_value(existing: cst.CSTNode, new: cst.CSTNode) -> str | None:
    """A hook attribute the class sets already (a first pass's, when a second one mines the tree it left) keeps
    what it names: a tuple of names gets the new ones after its own, a dict the new keys; None: replace it."""
    old_value, new_value = _literal(existing), _literal(new)
    if isinstance(old_value, tuple) and isinstance(new_value, tuple):
        names = tuple(dict.fromkeys((*old_value, *new_value)))
        return "(" + ", ".join(_literal_code(n) for n in names) + ("," if len(names) == 1 else "") + ")"
    if isinstance(old_value, dict) and isinstance(new_value, dict):
        items = {**old_value, **new_value}
        return "{" + ", ".join(f"{_literal_code(k)}: {_literal_code(v)}" for k, v in items.items()) + "}"
    return None


def _set_attribute(
    module: cst.Module, body: list[cst.BaseStatement], code: str, line_length: int = LINE_LENGTH
) -> list[cst.BaseStatement]:
    """``code`` (one class-level assignment) among the class attributes at the top of the body, after
    the last of them (or first, with a blank line before the member that follows); an assignment to the
    same name is merged with it (:func:`_merged_value`)."""
    new = class_statements(module, laid_out(code, CLASS_INDENT, line_length))
    if len(new) != 1 or _assigned_name(new[0]) is None:
        raise RewriteError(f"not one class attribute assignment: {code!r}")
    statement, name = new[0], _assigned_name(new[0])
    statement = as_statement(statement)
    for i, existing in enumerate(body):
        if _assigned_name(existing) == name:
            merged = _merged_value(existing, statement)
            if merged is not None:
                merged_code = laid_out(f"{name} = {merged}", CLASS_INDENT, line_length)
                statement = as_statement(class_statements(module, merged_code)[0])
            body[i] = statement.with_changes(leading_lines=as_statement(existing).leading_lines)
            return body
    if len(body) == 1 and m.matches(body[0], m.SimpleStatementLine([m.Pass()])):
        return [statement]
    position = 0
    while position < len(body) and isinstance(body[position], cst.SimpleStatementLine):
        position += 1
    if position == 0:
        follower = as_statement(body[0])
        if not follower.leading_lines:
            body[0] = follower.with_changes(leading_lines=[BLANK_LINE])
        return [statement, *body]
    if is_docstring(body[position - 1]):
        statement = statement.with_changes(leading_lines=[BLANK_LINE])
    following = as_statement(body[position]) if position < len(body) else None
    if following is not None and not following.leading_lines:
        body[position] = following.with_changes(leading_lines=[BLANK_LINE])
    return [*body[:position], statement, *body[position:]]


def _declare(
    module: cst.Module, body: list[cst.BaseStatement], position: int, hook: HookCode, line_length: int = LINE_LENGTH
) -> list[cst.BaseStatement]:
    """The hook's attribute declared right above the mixin's method (once)."""
    if any(_assigned_name(s) == hook.attribute for s in body):
        return body
    statements = class_statements(module, laid_out(hook.declaration, CLASS_INDENT, line_length))
    first = as_statement(statements[0])
    statements[0] = first.with_changes(leading_lines=[BLANK_LINE, *first.leading_lines])
    method = as_statement(body[position])
    if not method.leading_lines:
        body[position] = method.with_changes(leading_lines=[BLANK_LINE])
    return [*body[:position], *statements, *body[position:]]


def _class_level(module: cst.Module, cls: cst.ClassDef, edits: Sequence[Edit], line_length: int) -> cst.ClassDef:
    """The class attributes a model class sets (``SET_ATTRIBUTE``), after its method's edits."""
    assert isinstance(cls.body, cst.IndentedBlock)
    body = list(cls.body.body)
    for edit in edits:
        if edit.kind is EditKind.SET_ATTRIBUTE:
            body = _set_attribute(module, body, edit.text, line_length)
    return cls.with_changes(body=cls.body.with_changes(body=body))


def apply_to_class(module: cst.Module, cls: cst.ClassDef, edits: Sequence[Edit], line_length: int) -> cst.ClassDef:
    """``cls`` with ``edits`` (those of one class) made, its new code laid out at ``line_length``."""
    attributes = [e for e in edits if e.kind is EditKind.SET_ATTRIBUTE]
    if attributes:
        edits = [e for e in edits if e.kind is not EditKind.SET_ATTRIBUTE]
        if edits:
            cls = apply_to_class(module, cls, edits, line_length)
        return _class_level(module, cls, attributes, line_length)
    if any(e.kind is EditKind.ADD_MIXIN_BASE and not e.alias for e in edits):
        cls = _add_mixin_base(cls)
    # a base the class needs only where its method becomes the mixin's variant (``codemod.transform.alias``)
    base_with_alias = any(e.kind is EditKind.ADD_MIXIN_BASE and e.alias for e in edits)
    edits = [e for e in edits if e.kind is not EditKind.ADD_MIXIN_BASE]
    if not edits:
        return cls
    assert isinstance(cls.body, cst.IndentedBlock)
    body: list[cst.BaseStatement] = list(cls.body.body)
    position = next((i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == METHOD), None)
    if position is None:
        raise RewriteError(f"{cls.name.value} has no {METHOD}")
    method = body[position]
    assert isinstance(method, cst.FunctionDef)
    # methods that take statements of the override with them: built from it as it was
    added = [method_with_moved(module, method, e, line_length) for e in edits if e.kind is EditKind.ADD_METHOD]
    # where the override stood, with its blank line (not its comments: they spoke of it); after a kept one, a blank
    blank = [line for line in method.leading_lines if line.comment is None][:1]
    added = [
        a.with_changes(
            leading_lines=blank if i == 0 and any(e.kind is EditKind.DELETE for e in edits) else [BLANK_LINE]
        )
        for i, a in enumerate(added)
    ]
    function, hoisted, deleted, hooks = _edited_method(module, method, edits, line_length)
    added = [*hoisted, *added]
    if not deleted and any(e.direct_return for e in edits):
        function = direct_return(module, function, line_length)
    # a method that is nothing but a super() call kept for its signature: a class attribute naming the mixin's variant,
    # among the attributes at the top of the class (check_copies wants a class's unnamed block first)
    aliased = not deleted and any(e.alias for e in edits) and bare_forwarding(function)
    deleted = deleted or aliased
    if deleted and added:
        body[position : position + 1] = added  # where the override stood, the method that took its statements
    elif deleted:
        body = _without_method(body, position, method)
    else:
        body[position : position + 1] = [function, *added]
        for hook in hooks:
            before = len(body)
            body = _declare(module, body, position, hook, line_length)
            position += len(body) - before
    if aliased:
        body = _set_attribute(module, body, ASSIGNMENT, line_length)
        if base_with_alias:
            cls = _add_mixin_base(cls)
    return cls.with_changes(body=cls.body.with_changes(body=body))


def _edited_method(
    module: cst.Module, method: cst.FunctionDef, edits: Sequence[Edit], line_length: int
) -> tuple[cst.FunctionDef, list[cst.FunctionDef], bool, list[HookCode]]:
    """``method`` with the method-level ``edits`` made, in their order: (the method, the methods a hoist puts in
    front of what else is added, whether a deletion ends it, the hooks whose attributes the class declares)."""
    function = method
    hoisted_all: list[cst.FunctionDef] = []
    hooks: list[HookCode] = []
    for edit in edits:
        if edit.kind is EditKind.DELETE:
            return function, hoisted_all, True, hooks
        if edit.kind in (EditKind.REDUCE, EditKind.REMOVE):
            function = replace_body(module, function, edit.text, edit.keep, edit.keep_after, edit.cuts, line_length)
            if edit.keep_params:
                function = with_slim_parameters(module, function, edit.keep_params, line_length)
        elif edit.kind is EditKind.HOIST:
            function, *hoisted = replace_function(module, function, edit.text)
            hoisted_all = [*hoisted, *hoisted_all]
        elif edit.kind is EditKind.SWAP_DELEGATE:
            function = swap_delegate(module, function, edit.keep_params, line_length)
            if edit.text:
                function = before_return(module, function, edit.text, line_length)
        elif edit.kind is EditKind.MARK:
            function = with_mark(function, edit.text, line_length)
        elif edit.kind is EditKind.DROP_MARKER:
            function = drop_marker(function)
        elif edit.kind is EditKind.IGNORE_COPY:
            function = ignore_copy(function)
        elif edit.kind is EditKind.TRIM:
            function = trim(function, edit.remove, edit.text, line_length)
            if edit.keep_params:
                function = with_slim_parameters(module, function, edit.keep_params, line_length)
        elif edit.kind is EditKind.HOOK and edit.hook is not None:
            function = hook_method(module, function, edit.hook, line_length)
            hooks.append(edit.hook)
    return function, hoisted_all, False, hooks


def _without_method(body: list[cst.BaseStatement], position: int, method: cst.FunctionDef) -> list[cst.BaseStatement]:
    """The class body without the method at ``position``, the blank line in front of it kept."""
    body.pop(position)  # the method
    following = body[position] if position < len(body) else None
    assert isinstance(following, (cst.SimpleStatementLine, cst.BaseCompoundStatement, type(None)))
    if following is not None and not following.leading_lines and method.leading_lines:
        # keep the blank line that separated the removed method from the previous member
        blank = [line for line in method.leading_lines if line.comment is None][:1]
        body[position] = following.with_changes(leading_lines=blank)
    if not body:
        body = [cst.SimpleStatementLine(body=[cst.Pass()])]
    return body

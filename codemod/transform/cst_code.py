"""Code as libcst nodes for the rewrite: new code laid out in a module's style, comments and statements,
runs of statements cut out of a block, and the names a module binds and uses.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence

import libcst as cst
import libcst.matchers as m

from codemod.analyse.copies import parse_marker
from codemod.errors import CodemodError
from codemod.rules._pattern import findall_of


class RewriteError(CodemodError):
    pass


def comment_line(text: str) -> cst.EmptyLine:
    return cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(text))


def is_comment(line: cst.EmptyLine, prefix: str) -> bool:
    return line.comment is not None and line.comment.value.lstrip().startswith(prefix)


def is_copy_marker(line: cst.EmptyLine) -> bool:
    """A ``# Copied from`` marker as the index (and check_copies) reads one: ``#Copied from`` too, and not a
    comment that only starts with those words."""
    return line.comment is not None and parse_marker(line.comment.value, 0) is not None


def in_module_style(module: cst.Module, header: str, code: str) -> cst.Module:
    """Parse ``code`` (4-space indented) one level below ``header``, in the module's newline and indent."""
    indent, newline = module.default_indent, module.default_newline
    converted = []
    for line in textwrap.dedent(code).strip("\n").splitlines():
        stripped = line.lstrip(" ")
        depth, rest = divmod(len(line) - len(stripped), 4)
        converted.append(indent * (depth + 1) + " " * rest + stripped if stripped else "")
    return cst.parse_module(header + newline + newline.join(converted) + newline, config=module.config_for_parsing)


def code_block(module: cst.Module, body: str) -> Sequence[cst.BaseStatement]:
    """Statements for a method body, in the module's style."""
    parsed = in_module_style(module, "def _():", body)
    function = parsed.body[0]
    assert isinstance(function, cst.FunctionDef) and isinstance(function.body, cst.IndentedBlock)
    return function.body.body


def with_indented_body(function: cst.FunctionDef) -> cst.FunctionDef:
    """``def f(): return x`` as ``def f():`` + an indented block, so that lines can go into the body."""
    if isinstance(function.body, cst.IndentedBlock):
        return function
    suite = function.body
    assert isinstance(suite, cst.SimpleStatementSuite)
    line = cst.SimpleStatementLine(body=list(suite.body))
    return function.with_changes(body=cst.IndentedBlock(body=[line]), whitespace_before_colon=cst.SimpleWhitespace(""))


def is_docstring(statement: cst.CSTNode) -> bool:
    return m.matches(statement, m.SimpleStatementLine([m.Expr(m.SimpleString() | m.ConcatenatedString())]))


def class_statements(module: cst.Module, code: str) -> list[cst.BaseStatement]:
    """Statements for a class body (4-space indented code at level 0), in the module's style."""
    parsed = in_module_style(module, "class _:", code)
    cls = parsed.body[0]
    assert isinstance(cls, cst.ClassDef) and isinstance(cls.body, cst.IndentedBlock)
    return list(cls.body.body)


BLANK_LINE = cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""))


#: a run to cut: its path below the statement that holds it (``("body", 0)``), and its length
Run = tuple[tuple[int | str, ...], int]


def without_runs(
    statement: cst.SimpleStatementLine | cst.BaseCompoundStatement, runs: Sequence[Run]
) -> cst.SimpleStatementLine | cst.BaseCompoundStatement | None:
    """``statement`` less the ``runs`` inside it; None when nothing is left. An ``if`` whose branch is left empty
    keeps the other under the opposite test (Jamba: ``if not empty_past_kv: <slicing> else: <cache>`` becomes
    ``if empty_past_kv: <cache>``); the comments above it go when the first thing it did goes (they describe it)."""
    if not runs:
        return statement
    if not isinstance(statement, cst.If) or not isinstance(statement.body, cst.IndentedBlock):
        raise RewriteError(f"cannot cut inside {type(statement).__name__}: only inside an if, in its indented blocks")
    body = _block_without(statement.body.body, [(path[1:], n) for path, n in runs if path[:1] == ("body",)])
    else_runs = [(path[1:], n) for path, n in runs if path[:1] == ("orelse",)]
    orelse: cst.If | cst.Else | None = statement.orelse
    if isinstance(orelse, cst.Else):
        if not isinstance(orelse.body, cst.IndentedBlock):
            raise RewriteError("cannot cut inside a one-line else")
        rest = _block_without(orelse.body.body, else_runs)
        orelse = orelse.with_changes(body=orelse.body.with_changes(body=rest)) if rest else None
    elif isinstance(orelse, cst.If):
        rest = _block_without([orelse], else_runs)
        orelse = as_statement(rest[0]) if rest else None  # type: ignore[assignment]
        assert orelse is None or isinstance(orelse, cst.If)
    if any(path[:2] == ("body", 0) for path, _ in runs):
        statement = statement.with_changes(
            leading_lines=[line for line in statement.leading_lines if line.comment is None]
        )
    if body:
        return statement.with_changes(body=statement.body.with_changes(body=body), orelse=orelse)
    if orelse is None:
        return None
    branch = orelse.body.body if isinstance(orelse, cst.Else) else [orelse.with_changes(leading_lines=[])]
    return statement.with_changes(
        test=negated(statement.test), body=statement.body.with_changes(body=branch), orelse=None
    )


def _block_without(block: Sequence[cst.BaseStatement], runs: Sequence[Run]) -> list[cst.BaseStatement]:
    out = list(block)
    # from the last run up, so that the indices before it stay right
    for path, count in sorted(runs, key=lambda run: run[0], reverse=True):
        index = path[0]
        if not isinstance(index, int) or index + (count if len(path) == 1 else 1) > len(out):
            raise RewriteError(f"no statements at {path} to cut")
        if len(path) == 1:
            del out[index : index + count]
        else:
            inner = without_runs(as_statement(out[index]), [(path[1:], count)])
            out[index : index + 1] = [inner] if inner is not None else []
    if out and len(out) < len(block):  # no blank line opens a block
        first = as_statement(out[0])
        lines = list(first.leading_lines)
        while lines and lines[0].comment is None:
            lines.pop(0)
        out[0] = first.with_changes(leading_lines=lines)
    return out


def negated(test: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` the other way round, as a person writes it: ``not x`` -> ``x``, ``x is None`` -> ``x is not None``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return (
            test.expression.with_changes(lpar=[], rpar=[])
            if isinstance(test.expression, cst.Name)
            else test.expression
        )
    opposite = {cst.Is: cst.IsNot, cst.IsNot: cst.Is, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal}
    if (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and type(test.comparisons[0].operator) in opposite
    ):
        target = test.comparisons[0]
        flipped = opposite[type(target.operator)]()
        return test.with_changes(comparisons=[target.with_changes(operator=flipped)])
    atomic = isinstance(test, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Comparison))
    operand = test if atomic or test.lpar else test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.UnaryOperation(operator=cst.Not(), expression=operand)


def as_statement(node: cst.BaseStatement) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
    """A body's statement as the type that has ``leading_lines`` (every ``BaseStatement`` is one of the two)."""
    assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return node


def returns_at_end(statement: cst.BaseStatement) -> bool:
    """An ``if`` (without ``else``) whose block ends in ``return``: every path through it returns or raises."""
    return (
        isinstance(statement, cst.If)
        and statement.orelse is None
        and isinstance(statement.body, cst.IndentedBlock)
        and m.matches(statement.body.body[-1], m.SimpleStatementLine([m.Return()]))
    )


def imported_names(module: cst.Module) -> dict[str, cst.CSTNode]:
    """Names bound by top-level imports (not ``__future__``), to the import statement."""
    names: dict[str, cst.CSTNode] = {}
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom):
                if isinstance(small.module, cst.Name) and small.module.value == "__future__":
                    continue
                if isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    names[bound_name(alias)] = small
            elif isinstance(small, cst.Import):
                for alias in small.names:
                    names[bound_name(alias)] = small
    return names


def bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    node: cst.BaseExpression = alias.name
    while isinstance(node, cst.Attribute):  # ``import a.b`` binds ``a``
        node = node.value
    assert isinstance(node, cst.Name)
    return node.value


def names_used(nodes: Iterable[cst.CSTNode]) -> set[str]:
    return {n.value for node in nodes for n in findall_of(cst.Name, node, m.Name())}

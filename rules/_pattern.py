"""Code templates with metavariables, compiled to libcst matchers.

A template is ordinary Python in which ``$name`` stands for "any expression" (captured under
``name``; every occurrence of the same name must capture the same code) and ``$_`` for "any
expression, not captured". A template of several statements matches a run of consecutive
statements of a block.

Formatting never matters: the compiled matcher leaves whitespace, comments, parentheses, trailing
commas and string quoting out of the comparison, so ``x[:, -1:]`` matches ``x[ : , -1 :]`` and
``"a"`` matches ``'a'``. What does matter is structure: names, attributes, operators, argument
order and keywords.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import libcst as cst
import libcst.matchers as m

_METAVARIABLE = re.compile(r"\$([A-Za-z_]\w*)")
_PREFIX = "__tpl_"
_ANONYMOUS = "_"
# DoNotCare only works inside a field; this matches any node, also at the top of a matcher.
_ANY: m.MatchIfTrue[cst.CSTNode] = m.MatchIfTrue(lambda _node: True)

#: what a template node compiles to: a node matcher, or a metavariable (any node, maybe saved)
_Matcher = m.BaseMatcherNode | m.MatchIfTrue[cst.CSTNode]

# Node types that carry only layout; a matcher leaves them out (they default to DoNotCare).
_LAYOUT_TYPES: tuple[type, ...] = (
    cst.BaseParenthesizableWhitespace,
    cst.Newline,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Comment,
    cst.Comma,
    cst.Semicolon,
    cst.AssignEqual,
    cst.Colon,
    cst.Dot,
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
    cst.ParenthesizedWhitespace,
)
_LAYOUT_FIELDS = frozenset(
    {"lpar", "rpar", "leading_lines", "lines_after_decorator", "header", "footer", "indent", "trailing_whitespace"}
)


@dataclasses.dataclass(frozen=True)
class Captures:
    """What the metavariables of a matched template stand for."""

    nodes: Mapping[str, cst.BaseExpression]

    def code(self, name: str) -> str:
        return node_code(self.nodes[name])

    def __contains__(self, name: str) -> bool:
        return name in self.nodes


_Node = TypeVar("_Node", bound=cst.CSTNode)


def findall_of(
    node_type: type[_Node], tree: cst.CSTNode | Sequence[cst.CSTNode], matcher: m.BaseMatcherNode
) -> list[_Node]:
    """``m.findall`` with a matcher of ``node_type``, its results typed as that class."""
    trees = [tree] if isinstance(tree, cst.CSTNode) else tree
    return [found for t in trees for found in m.findall(t, matcher) if isinstance(found, node_type)]


def node_code(node: cst.CSTNode) -> str:
    """Source of a node, normalised to one line without layout (for messages and comparisons)."""
    if isinstance(node, cst.BaseExpression):
        code = cst.Module(body=[cst.SimpleStatementLine(body=[cst.Expr(node)])]).code
    elif isinstance(node, cst.BaseSmallStatement):
        code = cst.Module(body=[cst.SimpleStatementLine(body=[node])]).code
    elif isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):  # every BaseStatement
        code = cst.Module(body=[node]).code
    else:
        return cst.Module(body=[]).code_for_node(node)
    try:
        return ast.unparse(ast.parse(textwrap.dedent(code)))
    except SyntaxError:  # pragma: no cover - libcst only builds valid code
        return code.strip()


def _is_layout(value: Any) -> bool:
    return isinstance(value, _LAYOUT_TYPES) or value is cst.MaybeSentinel.DEFAULT


class _Compiler:
    def __init__(self) -> None:
        self.occurrences = 0

    def matcher(self, node: cst.CSTNode) -> _Matcher:
        if isinstance(node, cst.Name) and node.value.startswith(_PREFIX):
            var = node.value[len(_PREFIX) :]
            if var == _ANONYMOUS:
                return _ANY
            self.occurrences += 1
            # Each occurrence is saved under its own key; Template.match checks they agree.
            return m.SaveMatchedNode(_ANY, f"{var}#{self.occurrences}")
        if isinstance(node, cst.SimpleString):
            expected = ast.literal_eval(node.value)
            return m.SimpleString(value=m.MatchIfTrue(_same_literal(expected)))
        return self.node_matcher(node)

    def node_matcher(self, node: cst.CSTNode) -> m.BaseMatcherNode:
        """The matcher of the node's own class (``m.<Class>``), with its fields compiled."""
        matcher_type: Callable[..., m.BaseMatcherNode] = getattr(m, type(node).__name__)
        kwargs: dict[str, object] = {}
        for field in dataclasses.fields(node):
            if field.name in _LAYOUT_FIELDS or field.name.startswith("whitespace"):
                continue
            value = getattr(node, field.name)
            if _is_layout(value):
                continue
            if isinstance(value, cst.CSTNode):
                kwargs[field.name] = self.matcher(value)
            elif isinstance(value, Sequence) and not isinstance(value, str):
                kwargs[field.name] = [self.matcher(v) for v in value if not _is_layout(v)]
            else:
                kwargs[field.name] = value
        return matcher_type(**kwargs)


def _same_literal(expected: object) -> Callable[[str], bool]:
    return lambda value: _literal(value) == expected


def _literal(value: str) -> object:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return None


@dataclasses.dataclass(frozen=True)
class Template:
    """A run of statements with metavariables, compiled once."""

    source: str
    matchers: tuple[m.BaseMatcherNode, ...]

    @classmethod
    def parse(cls, source: str) -> Template:
        text = _METAVARIABLE.sub(lambda mo: _PREFIX + mo.group(1), textwrap.dedent(source).strip() + "\n")
        module = cst.parse_module(text)
        compiler = _Compiler()
        return cls(
            source=textwrap.dedent(source).strip(), matchers=tuple(compiler.node_matcher(s) for s in module.body)
        )

    @classmethod
    def expression(cls, source: str) -> Template:
        """A template for a single expression (e.g. an ``if`` test)."""
        return cls.parse(source)

    def __len__(self) -> int:
        return len(self.matchers)

    def match(self, statements: Sequence[cst.CSTNode], start: int = 0) -> Captures | None:
        """Match the template against ``statements[start:start + len(self)]``."""
        if start + len(self.matchers) > len(statements):
            return None
        saved: dict[str, cst.CSTNode | Sequence[cst.CSTNode]] = {}
        for matcher, statement in zip(self.matchers, statements[start : start + len(self.matchers)], strict=False):
            found = m.extract(statement, matcher)
            if found is None:
                return None
            saved.update(found)
        return _unify(saved)

    def match_expression(self, expression: cst.BaseExpression) -> Captures | None:
        """Match a one-expression template against an expression node."""
        # libcst types a matcher's fields as unions of sentinels and wildcards that no isinstance
        # narrows to this shape: SimpleStatementLine(body=[Expr(value=<the expression's matcher>)])
        statement_matcher: Any
        (statement_matcher,) = self.matchers
        expr_matcher = statement_matcher.body[0].value  # SimpleStatementLine -> Expr -> value
        found = m.extract(expression, expr_matcher)
        return None if found is None else _unify(found)


def _unify(saved: Mapping[str, cst.CSTNode | Sequence[cst.CSTNode]]) -> Captures | None:
    merged: dict[str, cst.BaseExpression] = {}
    for key, node in saved.items():
        # a metavariable stands for one expression (a Name in the template): never a sequence
        assert isinstance(node, cst.BaseExpression), key
        var = key.split("#", 1)[0]
        if var in merged and node_code(merged[var]) != node_code(node):
            return None
        merged.setdefault(var, node)
    return Captures(merged)


def any_template(
    templates: Sequence[Template], statements: Sequence[cst.CSTNode], start: int
) -> tuple[Template, Captures] | None:
    """The longest template that matches at ``start``."""
    best: tuple[Template, Captures] | None = None
    for template in templates:
        captures = template.match(statements, start)
        if captures is not None and (best is None or len(template) > len(best[0])):
            best = (template, captures)
    return best


def string_key(node: cst.BaseExpression) -> str | None:
    """The text of a plain string literal, else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None

"""What every idiom unit shares: the target it migrates onto, the plan it returns, and how plans are applied.

A unit reads the parsed module (libcst, with positions) and returns a ``Plan``: which nodes become what, which
statements go in front of which, the imports and module-level definitions the new code needs, the edits it made
and what it recognised but could not migrate. All plans of a module are made on the same tree and applied in one
pass, so every line reported is a line of the original source and every byte outside the edited nodes is kept.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Iterable, Iterator, Sequence

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider


@dataclasses.dataclass(frozen=True)
class IdiomTarget:
    """The release the code is migrated onto, as far as the idioms need it."""

    release: str
    #: the target's ``DynamicCache`` has ``from_legacy_cache`` (4.x); 5.x builds one from the tuples itself
    from_legacy_cache: bool
    #: the generation settings the tree reads from its config that the target's ``PretrainedConfig`` no longer sets
    #: (TB007): the tree's config classes get 4.x's defaults for them
    config_reads: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class IdiomEdit:
    """One migrated idiom: the blocker rule's code, the line it was on, and what it became (one line)."""

    code: str
    line: int
    became: str


@dataclasses.dataclass(frozen=True)
class NotMigrated:
    """An idiom recognised and left as it is, with why."""

    code: str
    line: int
    reason: str


#: what a node becomes: a node, or removed from its parent
Replacement = cst.CSTNode | cst.RemovalSentinel


@dataclasses.dataclass
class Plan:
    replace: dict[cst.CSTNode, Replacement] = dataclasses.field(default_factory=dict)
    #: statements put in front of a statement, and after one
    before: dict[cst.CSTNode, list[cst.BaseStatement]] = dataclasses.field(default_factory=dict)
    after: dict[cst.CSTNode, list[cst.BaseStatement]] = dataclasses.field(default_factory=dict)
    #: ``from module import name`` the new code needs
    imports: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    #: module-level definitions the new code needs (code), after the module's imports
    definitions: list[str] = dataclasses.field(default_factory=list)
    edits: list[IdiomEdit] = dataclasses.field(default_factory=list)
    not_migrated: list[NotMigrated] = dataclasses.field(default_factory=list)

    def merge(self, other: Plan) -> None:
        self.replace.update(other.replace)
        for node, statements in other.before.items():
            self.before.setdefault(node, []).extend(statements)
        for node, statements in other.after.items():
            self.after.setdefault(node, []).extend(statements)
        self.imports += [i for i in other.imports if i not in self.imports]
        self.definitions += [d for d in other.definitions if d not in self.definitions]
        self.edits += other.edits
        self.not_migrated += other.not_migrated


class Source:
    """A module parsed once, with the line of every node."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.wrapper = MetadataWrapper(cst.parse_module(text))
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)

    @functools.cached_property
    def syntax(self) -> ast.Module | None:
        """The module as the blocker rules read it (the stdlib ``ast``), parsed once for every unit; None where
        it does not parse (a file libcst reads and ``ast`` refuses)."""
        try:
            return ast.parse(self.text)
        except (SyntaxError, ValueError, RecursionError):
            return None

    def from_imports(self) -> Iterator[tuple[cst.SimpleStatementLine, cst.ImportFrom, str]]:
        """Each top-level ``from <module> import a, b`` alone on its line, not relative nor ``*``: the statement,
        the import and the module's dotted name."""
        for statement in self.module.body:
            if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
                continue
            node = statement.body[0]
            if isinstance(node, cst.ImportFrom) and node.module is not None and not node.relative:
                if not isinstance(node.names, cst.ImportStar):
                    yield statement, node, self.code(node.module)

    def line(self, node: cst.CSTNode) -> int:
        position = self.positions.get(node)
        return position.start.line if position is not None else 0

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def statement_code(self, statement: cst.CSTNode) -> str:
        """A statement's code without the comments and blank lines above it."""
        if isinstance(statement, cst.SimpleStatementLine):
            return "; ".join(self.code(small) for small in statement.body)
        return (
            self.code(statement.with_changes(leading_lines=()))
            if hasattr(statement, "leading_lines")
            else self.code(statement)
        )

    def statement(self, code: str) -> cst.BaseStatement:
        return cst.parse_statement(code + self.module.default_newline, config=self.module.config_for_parsing)


def drop_names(
    plan: Plan, statement: cst.SimpleStatementLine, node: cst.ImportFrom, dropped: Sequence[cst.ImportAlias]
) -> None:
    """The import without the ``dropped`` names, or the whole statement gone when nothing else is imported."""
    assert not isinstance(node.names, cst.ImportStar)
    kept = [a for a in node.names if a not in dropped]
    if not kept:
        plan.replace[statement] = cst.RemoveFromParent()
        return
    if node.lpar is None:
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    plan.replace[node] = node.with_changes(names=kept)


def squeezed(code: str) -> str:
    """Code without its whitespace, to compare a node with a pattern."""
    return re.sub(r"\s+", "", code)


def one_line(code: str) -> str:
    return " ".join(line.strip() for line in code.strip().splitlines())


#: each node's children by ``id``, computed once a migration (libcst computes ``children`` by visiting the node, and
#: the units walk the same tree many times); the node is kept with them, so a reused ``id`` is never mistaken
_CHILDREN: dict[int, tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = {}


def forget_children() -> None:
    _CHILDREN.clear()


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and everything below it, depth first, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        known = _CHILDREN.get(id(current))
        if known is None or known[0] is not current:
            known = _CHILDREN[id(current)] = (current, tuple(current.children))
        stack.extend(reversed(known[1]))


def functions(node: cst.CSTNode) -> Iterable[cst.FunctionDef]:
    return (n for n in walk(node) if isinstance(n, cst.FunctionDef))


def classes(module: cst.Module) -> list[cst.ClassDef]:
    return [n for n in walk(module) if isinstance(n, cst.ClassDef)]


def parameters(function: cst.FunctionDef) -> list[str]:
    p = function.params
    return [a.name.value for a in (*p.posonly_params, *p.params, *p.kwonly_params)]


def is_name(node: cst.CSTNode, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


class _Apply(cst.CSTTransformer):
    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def on_leave(  # type: ignore[override]  # one transformer for every node type: the plan maps nodes to nodes
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        new = self.plan.replace.get(original_node, updated_node)
        before, after = self.plan.before.get(original_node, []), self.plan.after.get(original_node, [])
        if (before or after) and isinstance(new, cst.CSTNode):
            return cst.FlattenSentinel([*before, new, *after])
        return new


def apply(source: Source, plan: Plan) -> str:
    """The module with the plan's edits, imports and definitions; every other byte as it was."""
    module = source.module.visit(_Apply(plan)) if plan.replace or plan.before or plan.after else source.module
    assert isinstance(module, cst.Module)
    module = _with_imports(module, plan.imports)
    module = _with_definitions(module, plan.definitions)
    return module.code


def _is_import(statement: cst.CSTNode) -> bool:
    return m.matches(statement, m.SimpleStatementLine([m.Import() | m.ImportFrom()]))


def _last_import(body: Sequence[cst.BaseStatement]) -> int:
    """The index of the module's last top-level import (-1: none; a docstring alone counts as one)."""
    imports = [i for i, s in enumerate(body) if _is_import(s)]
    if imports:
        return imports[-1]
    docstring = body and m.matches(body[0], m.SimpleStatementLine([m.Expr(m.SimpleString())]))
    return 0 if docstring else -1


def _imported(module: cst.Module) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for statement in module.body:
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                name = module.code_for_node(small.module)
                if not isinstance(small.names, cst.ImportStar):
                    found.update((name, a.evaluated_alias or a.evaluated_name) for a in small.names)
    return found


def _with_imports(module: cst.Module, imports: Sequence[tuple[str, str]]) -> cst.Module:
    """``from X import a, b`` for what the module does not import yet, after its last ``transformers`` import."""
    have = _imported(module)
    wanted: dict[str, list[str]] = {}
    for source_module, name in imports:
        if (source_module, name) not in have and name not in wanted.setdefault(source_module, []):
            wanted[source_module].append(name)
    statements = [
        cst.parse_statement(f"from {mod} import {', '.join(names)}{module.default_newline}")
        for mod, names in wanted.items()
        if names
    ]
    if not statements:
        return module
    body = list(module.body)
    library = [
        i
        for i, s in enumerate(body)
        if _is_import(s) and module.code_for_node(s).lstrip().startswith(("from transformers", "import transformers"))
    ]
    at = (library[-1] if library else _last_import(body)) + 1
    return module.with_changes(body=[*body[:at], *statements, *body[at:]])


def _with_definitions(module: cst.Module, definitions: Sequence[str]) -> cst.Module:
    """Module-level definitions after the last top-level import, each with two blank lines above it."""
    if not definitions:
        return module
    newline = module.default_newline
    blank = cst.EmptyLine()
    statements = [
        cst.parse_statement(code + newline, config=module.config_for_parsing).with_changes(
            leading_lines=[blank, blank]
        )
        for code in definitions
    ]
    body = list(module.body)
    at = _last_import(body) + 1
    return module.with_changes(body=[*body[:at], *statements, *body[at:]])

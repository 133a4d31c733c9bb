"""Recognise what a ``prepare_inputs_for_generation`` body does, statement by statement.

The engine walks the body in order. At each statement it asks every rule (``rules.ALL``) and takes
the longest claim; a statement no rule claims is either an ``if`` with a guard the engine
understands (``rules.guards``), whose branches it walks with the guard in context, or it is
reported as unrecognised, with its line. Nothing is skipped: a statement is recognised or listed.

The result, a ``BodyAnalysis``, depends only on the function's syntax, so the index caches it.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst
import libcst.matchers as m
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from codemod import rules
from codemod.analyse.analysis import (
    DROPPED,
    BodyAnalysis,
    Delegation,
    Nested,
    OutputKey,
    Param,
    Recognised,
    TopLevel,
    Unrecognised,
)
from codemod.contracts import ParamKind
from codemod.rules._pattern import findall_of, node_code
from codemod.rules.base import Context, Match, Rule, Statements, Value, ValueOrigin
from codemod.rules.guards import guard_of


def parameters(function: cst.FunctionDef) -> tuple[Param, ...]:
    params = function.params
    out: list[Param] = []

    def default(p: cst.Param) -> str | None:
        return node_code(p.default) if p.default is not None else None

    for p in (*params.posonly_params, *params.params):
        out.append(Param(p.name.value, ParamKind.POSITIONAL, default(p)))
    if isinstance(params.star_arg, cst.Param):
        out.append(Param(params.star_arg.name.value, ParamKind.VAR_ARGS))
    for p in params.kwonly_params:
        out.append(Param(p.name.value, ParamKind.KEYWORD_ONLY, default(p)))
    if params.star_kwarg is not None:
        out.append(Param(params.star_kwarg.name.value, ParamKind.VAR_KEYWORDS))
    return tuple(out)


#: where each node of a parsed module is (``MetadataWrapper.resolve(PositionProvider)``)
Positions = Mapping[cst.CSTNode, CodeRange]


class _Walker:
    def __init__(self, positions: Positions, ctx: Context) -> None:
        self.positions = positions
        self.ctx = ctx
        self.recognised: list[Recognised] = []
        self.unrecognised: list[Unrecognised] = []
        self.outputs: list[OutputKey] = []
        self.dropped: list[str] = []
        self.forwards_kwargs = False
        self.delegates_to: str | None = None
        self.delegation: Delegation | None = None
        self.withheld: list[str] = []
        self.top_level: list[TopLevel] = []

    def lines(self, nodes: Sequence[cst.CSTNode]) -> tuple[int, int]:
        return self.positions[nodes[0]].start.line, self.positions[nodes[-1]].end.line

    def walk(
        self,
        statements: Statements,
        guards: tuple[str, ...],
        conditions: tuple[str, ...] = (),
        where: tuple[int | str, ...] = (),
        after: Sequence[cst.CSTNode] = (),
    ) -> None:
        """Claim ``statements`` for the rules; ``where`` is the block's path in its top-level statement (``Nested``)
        and ``after`` the statements of that top-level statement that run after the block."""
        i = 0
        while i < len(statements):
            statement = statements[i]
            if _is_inert(statement, first=(i == 0 and not guards)):
                i += 1
                continue
            ctx = dataclasses.replace(self.ctx, guards=guards, tests=conditions)
            before = (len(self.unrecognised), len(self.outputs), self.delegates_to)
            match, rule = self.best_match(statements, i, ctx)
            consumed = 1
            place = (*where, i)
            if match is not None and rule is not None:  # found together
                consumed = match.consumed
                nested = (
                    _nested(place, statements[i : i + consumed], (*statements[i + consumed :], *after))
                    if where
                    else None
                )
                self.record(match, rule, statements[i : i + consumed], guards, conditions, nested)
            elif not (
                isinstance(statement, cst.If)
                and self.walk_guarded(
                    statement, guards, conditions, place, (*statements[i + 1 :], *after) if where else ()
                )
            ):
                line, end_line = self.lines([statement])
                written = (
                    cst.Module(body=[statement]).code.rstrip()
                    if isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
                    else ""
                )
                self.unrecognised.append(Unrecognised(line, end_line, node_code(statement), written))
            if not guards:
                self.note_top_level(statements, i, consumed, before, match)
            i += consumed

    def note_top_level(
        self,
        statements: Statements,
        start: int,
        consumed: int,
        before: tuple[int, int, str | None],
        match: Match | None,
    ) -> None:
        unrecognised, outputs, delegate = before
        builds = len(self.outputs) > outputs or self.delegates_to != delegate or bool(match and match.resets_outputs)
        for index in range(start, start + consumed):
            statement = statements[index]
            # the top level is a function's indented block (a one-line suite is only ever guarded)
            assert isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)), statement
            reads, writes = _names(statement)
            line, end_line = self.lines([statement])
            exposed = _exposed(statement)
            self.top_level.append(
                TopLevel(
                    index=index,
                    line=line,
                    end_line=end_line,
                    exposed=exposed,
                    placement_reads=_placement_reads(statement, exposed),
                    touched=_touched(statement),
                    recognised=len(self.unrecognised) == unrecognised,
                    builds_output=builds or bool(match and match.returns),
                    returns=bool(m.findall(statement, m.Return())),
                    reads=reads,
                    writes=writes,
                )
            )

    def walk_guarded(
        self,
        statement: cst.If,
        guards: tuple[str, ...],
        conditions: tuple[str, ...],
        place: tuple[int | str, ...] = (),
        after: Sequence[cst.CSTNode] = (),
    ) -> bool:
        found = guard_of(statement.test)
        if found is None:
            return False
        if_guard, else_guard = found
        test = node_code(statement.test)
        self.walk(statement.body.body, (*guards, if_guard), (*conditions, test), (*place, "body"), after)
        negated = (*conditions, f"not ({test})")
        if isinstance(statement.orelse, cst.Else):
            self.walk(statement.orelse.body.body, (*guards, else_guard), negated, (*place, "orelse"), after)
        elif isinstance(statement.orelse, cst.If):
            self.walk([statement.orelse], (*guards, else_guard), negated, (*place, "orelse"), after)
        return True

    def best_match(self, statements: Statements, i: int, ctx: Context) -> tuple[Match | None, Rule | None]:
        best: tuple[Match | None, Rule | None] = (None, None)
        for rule in rules.ALL:
            found = rule.match(statements, i, ctx)
            if found is not None and (best[0] is None or found.consumed > best[0].consumed):
                best = (found, rule)
        return best

    def record(
        self,
        match: Match,
        rule: Rule,
        nodes: Sequence[cst.CSTNode],
        guards: tuple[str, ...],
        conditions: tuple[str, ...] = (),
        nested: Nested | None = None,
    ) -> None:
        line, end_line = self.lines(nodes)
        for behaviour in (match.behaviour, *match.implies):
            facets = tuple(sorted(match.facets.items())) if behaviour == match.behaviour else ()
            self.recognised.append(
                Recognised(rule.code, behaviour, rule.kind.value, line, end_line, match.detail, facets, nested)
            )
        if match.resets_outputs and not guards:
            # keyword arguments set before a delegated call that forwards **kwargs reach its result
            keep = match.delegates_to is not None and match.forwards_kwargs
            self.outputs[:] = [o for o in self.outputs if keep and o.via_kwargs]
            # a new dict replaces the old one, with whatever it forwarded or came from
            self.forwards_kwargs = False
            self.delegates_to = None
            self.delegation = None
        for key, value in match.outputs.items():
            self.outputs.append(
                OutputKey(key, value, line, guards, match.via_kwargs, match.output_code.get(key, ""), conditions)
            )
        self.dropped.extend(match.drops)
        # In order with the assignments: a key removed and then added back is there in the end.
        self.outputs.extend(OutputKey(key, DROPPED, line, guards, conditions=conditions) for key in match.drops)
        if match.forwards_kwargs:
            self.forwards_kwargs = True
        if match.delegates_to is not None:
            self.delegates_to = match.delegates_to
            self.delegation = match.delegation
        self.withheld.extend(match.withholds)
        symbols = dict(self.ctx.symbols)
        symbols.update(match.defines)
        self.ctx = dataclasses.replace(self.ctx, symbols=symbols)


def _names(statement: cst.SimpleStatementLine | cst.BaseCompoundStatement) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names read, names assigned) by a statement, from the stdlib AST of its code."""
    try:
        tree = ast.parse(textwrap.dedent(cst.Module(body=[statement]).code))
    except SyntaxError:  # pragma: no cover - libcst produced it
        return (), ()
    reads: set[str] = set()
    writes: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (writes if isinstance(node.ctx, ast.Store) else reads).add(node.id)
    return tuple(sorted(reads)), tuple(sorted(writes))


def _touched(statement: cst.SimpleStatementLine | cst.BaseCompoundStatement) -> tuple[str, ...]:
    """The names whose objects ``statement`` may change rather than only read: a method of it called
    (``cache_position.add_(1)``), it handed to a call (a function may change its argument), stored into or through
    (``x[0] = ``, ``x.a = ``, ``x += 1``, in place for a tensor) or deleted. Reading, indexing, slicing, an
    attribute read and arithmetic leave the object as it was."""
    try:
        tree = ast.parse(textwrap.dedent(cst.Module(body=[statement]).code))
    except SyntaxError:  # pragma: no cover - libcst produced it
        return ()
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    touched: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name):
            continue
        # the outermost expression the name is the base of (``x.a[0].b`` for ``x``), and what stands around it
        base: ast.AST = node
        around = parents.get(base)
        while isinstance(around, (ast.Attribute, ast.Subscript)) and around.value is base:
            base, around = around, parents.get(around)
        called = isinstance(around, ast.Call) and around.func is base
        method = called and base is not node  # ``x.add_(1)``, ``x.a.b()``; ``x(...)`` calls the name, a function
        handed = isinstance(around, ast.keyword) or (isinstance(around, ast.Call) and not called)
        stored_into = base is not node and not isinstance(
            getattr(base, "ctx", None), ast.Load
        )  # x[0] = , x.a = , del x[0]
        in_place = isinstance(around, ast.AugAssign) and around.target is base  # x += 1
        if method or handed or stored_into or in_place or isinstance(node.ctx, ast.Del):
            touched.add(node.id)
    return tuple(sorted(touched))


def _exposed(statement: cst.SimpleStatementLine | cst.BaseCompoundStatement) -> tuple[str, ...]:
    """The names ``statement`` reads before it surely assigns them itself (upward-exposed uses): what it
    takes from the statements before it. ``batch_size`` assigned in both branches of an ``if`` and read
    after is its own; one read before its assignment, or assigned only in a loop, is taken from before."""
    try:
        tree = ast.parse(textwrap.dedent(cst.Module(body=[statement]).code))
    except SyntaxError:  # pragma: no cover - libcst produced it
        return ()
    return tuple(sorted(_exposed_in(tree.body, frozenset())[0]))


def _nested(place: tuple[int | str, ...], run: Sequence[cst.CSTNode], after: Sequence[cst.CSTNode]) -> Nested | None:
    """Where a recognised run stands in its top-level statement, what it assigns and which of that runs after it
    reads (``after``: the statements of the top-level statement that run after it)."""
    statements = [s for s in run if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))]
    if len(statements) != len(run):
        return None  # a one-line suite's small statements: no block to take them from
    writes = sorted({name for s in statements for name in _names(s)[1]})
    later = [s for s in after if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))]
    read = _reads(cst.Module(body=later).code)[0] if later else set()
    return Nested(place, len(statements), tuple(writes), tuple(name for name in writes if name in read))


def _reads(code: str) -> tuple[set[str], set[str]]:
    """(the names ``code`` reads for more than their device or dtype, those it reads only for them)."""
    tree = ast.parse(textwrap.dedent(code))
    loads = Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    placed = Counter(
        n.value.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.attr in PLACEMENT_ATTRIBUTES
        and isinstance(n.ctx, ast.Load)
    )
    return {name for name, count in loads.items() if count > placed[name]}, {
        name for name, count in placed.items() if count == loads[name]
    }


#: what a tensor's attribute says of where it lives, not of its values: the same for any slice of it
PLACEMENT_ATTRIBUTES = frozenset({"device", "dtype"})


def _placement_reads(
    statement: cst.SimpleStatementLine | cst.BaseCompoundStatement, exposed: Sequence[str]
) -> tuple[str, ...]:
    """Of the names ``statement`` takes from before it (``exposed``, from ``_exposed``), those it reads only as
    ``<name>.device`` or ``<name>.dtype``: CLVP's ``torch.tensor([length], device=input_ids.device)`` needs no
    slicing of the ids."""
    if not exposed:
        return ()
    read, placed = _reads(cst.Module(body=[statement]).code)
    return tuple(sorted(name for name in exposed if name in placed and name not in read))


def _loads(node: ast.AST) -> set[str]:
    """Every name ``node`` reads (a subscript's or attribute's base in an assignment target included)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}


def _exposed_in(statements: Sequence[ast.stmt], defined: frozenset[str]) -> tuple[set[str], frozenset[str]]:
    """(names read before assigned, names surely assigned after) for a block entered with ``defined``."""
    reads: set[str] = set()
    known = set(defined)
    for statement in statements:
        if isinstance(statement, ast.If):
            reads |= _loads(statement.test) - known
            body_reads, body_defined = _exposed_in(statement.body, frozenset(known))
            else_reads, else_defined = _exposed_in(statement.orelse, frozenset(known))
            reads |= body_reads | else_reads
            known |= body_defined & else_defined
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value_reads = _loads(statement.value) if statement.value is not None else set()
            if isinstance(statement, ast.AugAssign):
                value_reads |= _loads(statement.target) | {
                    n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)
                }
            reads |= (value_reads | {n for t in targets for n in _loads(t)}) - known
            known |= {
                n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        elif isinstance(statement, ast.For):  # its target is its own; what the body assigns may not happen
            reads |= _loads(statement.iter) - known
            target = {n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name)}
            reads |= _exposed_in([*statement.body, *statement.orelse], frozenset(known | target))[0]
        else:  # while, with, try, expressions: what they assign may not happen; everything they read counts
            reads |= _loads(statement) - known
    return reads, frozenset(known)


def _is_inert(statement: cst.BaseStatement | cst.BaseSmallStatement, first: bool) -> bool:
    """Docstrings, ``pass``, bare ``...`` and imports do nothing to the inputs; nor does an optional import
    (``try: from ..cache_utils import HybridCache`` / ``except ImportError: HybridCache = StaticCache``)."""
    if isinstance(statement, cst.Try):
        return (
            statement.orelse is None
            and statement.finalbody is None
            and bool(statement.handlers)
            and all(_is_inert(s, False) for s in statement.body.body)
            and all(
                h.type is not None
                and m.matches(h.type, m.Name("ImportError"))
                and all(isinstance(s, cst.SimpleStatementLine) and _is_alias(s) for s in h.body.body)
                for h in statement.handlers
            )
        )
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return all(
        isinstance(s, (cst.Pass, cst.Import, cst.ImportFrom))
        or (isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString)) and first)
        or m.matches(s, m.Expr(m.Ellipsis()))
        for s in statement.body
    )


def _is_alias(statement: cst.SimpleStatementLine) -> bool:
    """``Name = OtherName`` (or ``pass``): an import's stand-in."""
    return m.matches(
        statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=m.Name())])
    ) or m.matches(statement, m.SimpleStatementLine(body=[m.Pass()]))


def _returned_names(function: cst.FunctionDef) -> tuple[str, ...]:
    names = {"model_inputs"}
    for ret in findall_of(cst.Return, function, m.Return(value=m.Name())):
        if isinstance(ret.value, cst.Name) and ret.value.value != "None":
            names.add(ret.value.value)
    return tuple(sorted(names))


class _InlineAliases(cst.CSTTransformer):
    """Reads of a guard alias replaced by the test it names (``not empty_past_kv`` by
    ``past_key_values is not None``), so that the rules see the guard they know."""

    def __init__(self, aliases: Mapping[str, cst.BaseExpression]) -> None:
        self.aliases = aliases

    def leave_UnaryOperation(self, original: cst.UnaryOperation, updated: cst.UnaryOperation) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.Not) and m.matches(original.expression, m.Name()):
            name = original.expression
            assert isinstance(name, cst.Name)
            test = self.aliases.get(name.value)
            if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
                flipped = {cst.Is: cst.IsNot(), cst.IsNot: cst.Is()}.get(type(test.comparisons[0].operator))
                if flipped is not None:
                    return test.with_changes(comparisons=[test.comparisons[0].with_changes(operator=flipped)])
        return updated

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return False  # the alias's own assignment is not a read

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        test = self.aliases.get(original.value)
        return test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if test is not None else updated


def _guard_aliases(function: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """Local names that hold a guard's test, ``empty_past_kv = past_key_values is None`` (Jamba):
    assigned once, at the top of the body, from a one-line test the engine understands. The name says
    what the decoding step was when the method began, which is what the guard means."""
    if not isinstance(function.body, cst.IndentedBlock):
        return {}
    # every binding counts (assignments, loop and ``with`` targets, ``:=``, unpacking), as the stdlib sees them
    tree = ast.parse(textwrap.dedent(cst.Module(body=[function]).code))
    stores = Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    params = {p.name for p in parameters(function)}
    aliases: dict[str, cst.BaseExpression] = {}
    for statement in function.body.body:
        if not m.matches(statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(target=m.Name())])])):
            continue
        assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Assign)
        assign = statement.body[0]
        name = assign.targets[0].target
        assert isinstance(name, cst.Name)
        if (
            stores.get(name.value) == 1
            and name.value not in params
            and guard_of(assign.value) is not None
            and "\n" not in node_code(assign.value)
        ):
            aliases[name.value] = assign.value
    return aliases


def _statement_codes(function: cst.FunctionDef) -> list[str]:
    """The code of every statement of ``function``, outermost first, in order."""
    found: list[str] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and node is not function:
                found.append(node_code(node))
            return True

    function.visit(Collect())
    return found


def _without_aliases(
    function: cst.FunctionDef, positions: Positions
) -> tuple[cst.FunctionDef, Positions, int, dict[str, str]] | None:
    """The function with its guard aliases' reads inlined (the assignment itself stays: a reduction may
    keep it), re-parsed for positions; the line shift from its lines to the original's (a one-line
    test adds no line); and each changed statement's code -> its code as written. None: no aliases."""
    aliases = _guard_aliases(function)
    if not aliases:
        return None
    inlined = cst.ensure_type(function.visit(_InlineAliases(aliases)), cst.FunctionDef)
    wrapper = MetadataWrapper(cst.parse_module(cst.Module(body=[inlined]).code))
    new = next(n for n in wrapper.module.body if isinstance(n, cst.FunctionDef))
    new_positions = wrapper.resolve(PositionProvider)
    shift = positions[function].start.line - new_positions[new].start.line
    written = dict(zip(_statement_codes(new), _statement_codes(function), strict=False))
    return new, new_positions, shift, {k: v for k, v in written.items() if k != v}


def analyse_function(function: cst.FunctionDef, positions: Positions, line_offset: int = 0) -> BodyAnalysis:
    """Analyse a function node; ``positions`` maps its nodes to code ranges."""
    written: Mapping[str, str] = {}
    as_written = function
    inlined = _without_aliases(function, positions)
    if inlined is not None:
        function, positions, alias_shift, written = inlined
        line_offset += alias_shift
    params = parameters(function)
    explicit = [p.name for p in params if p.kind is ParamKind.POSITIONAL and p.name != "self"]
    var_kwargs = next((p.name for p in params if p.kind is ParamKind.VAR_KEYWORDS), None)
    ids_param = explicit[0] if explicit and explicit[0].endswith("input_ids") else "input_ids"
    ctx = Context(
        keyword_only=tuple(p.name for p in params if p.kind is ParamKind.KEYWORD_ONLY),
        positional_only=tuple(p.name.value for p in function.params.posonly_params),
        params=tuple(p.name for p in params if p.name != "self" and p.kind is not ParamKind.VAR_ARGS),
        ids_param=ids_param,
        var_kwargs=var_kwargs,
        output_names=_returned_names(function),
        symbols={ids_param: Value(ValueOrigin.IDS, "unsliced")},
    )
    walker = _Walker(positions, ctx)
    if isinstance(function.body, cst.IndentedBlock):
        walker.walk(function.body.body, ())
    else:  # ``def f(...): return x``: not what any rule expects; listed so that it is not skipped
        line, end_line = walker.lines([function.body])
        walker.unrecognised.append(
            Unrecognised(line, end_line, cst.Module(body=[]).code_for_node(function.body).strip())
        )

    def shift(line: int) -> int:
        return line + line_offset

    return BodyAnalysis(
        params=params,
        recognised=tuple(
            dataclasses.replace(r, line=shift(r.line), end_line=shift(r.end_line)) for r in walker.recognised
        ),
        unrecognised=tuple(
            dataclasses.replace(u, line=shift(u.line), end_line=shift(u.end_line), code=written.get(u.code, u.code))
            for u in walker.unrecognised
        ),
        outputs=tuple(dataclasses.replace(o, line=shift(o.line)) for o in walker.outputs),
        dropped=tuple(walker.dropped),
        forwards_kwargs=walker.forwards_kwargs,
        delegates_to=walker.delegates_to,
        delegation=walker.delegation,
        withheld=tuple(walker.withheld),
        top_level=tuple(
            _as_written(dataclasses.replace(t, line=shift(t.line), end_line=shift(t.end_line)), as_written)
            if written
            else dataclasses.replace(t, line=shift(t.line), end_line=shift(t.end_line))
            for t in walker.top_level
        ),
    )


def _as_written(top: TopLevel, function: cst.FunctionDef) -> TopLevel:
    """``top`` with the names its statement reads as written (an inlined alias is read, not its test)."""
    statement = cst.ensure_type(function.body, cst.IndentedBlock).body[top.index]
    assert isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    reads, writes = _names(statement)
    exposed = _exposed(statement)
    return dataclasses.replace(
        top,
        reads=reads,
        writes=writes,
        exposed=exposed,
        placement_reads=_placement_reads(statement, exposed),
        touched=_touched(statement),
    )


def analyse_source(source: str, line_offset: int = 0) -> BodyAnalysis:
    """Analyse the first function defined in ``source`` (a method, dedented, or a module)."""
    module = cst.parse_module(source)
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)
    function = next(iter(_functions(wrapper.module.body)), None)
    if function is None:
        raise ValueError("no function definition in source")
    return analyse_function(function, positions, line_offset)


def _functions(body: Iterable[cst.CSTNode]) -> Iterable[cst.FunctionDef]:
    for node in body:
        if isinstance(node, cst.FunctionDef):
            yield node
        elif isinstance(node, cst.ClassDef):
            yield from _functions(node.body.body)


def analyse_statements(
    source: str,
    params: Sequence[str] = (
        "input_ids",
        "past_key_values",
        "attention_mask",
        "inputs_embeds",
        "cache_position",
        "position_ids",
        "use_cache",
        "token_type_ids",
    ),
    var_kwargs: str = "kwargs",
) -> BodyAnalysis:
    """Analyse loose statements as if they were the body of an override (for rule tests)."""
    signature = ", ".join(["self", *[f"{p}=None" if i else p for i, p in enumerate(params)], f"**{var_kwargs}"])
    indented = "\n".join("    " + line if line.strip() else line for line in source.strip("\n").splitlines())
    return analyse_source(f"def prepare_inputs_for_generation({signature}):\n{indented}\n", line_offset=-1)

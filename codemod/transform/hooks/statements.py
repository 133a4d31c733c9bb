"""Cluster the statements no rule understands; where they are whole bodies the mixin can run, the hook."""

from __future__ import annotations

import ast
import builtins
import dataclasses
import json
import re
import textwrap
from collections.abc import Sequence

import libcst as cst

from codemod.analyse.classify import Finding
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import Override
from codemod.analyse.mixin import Era, MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import (
    ParamKind,
)
from codemod.transform.cst_code import negated
from codemod.transform.hooks.model import Cluster, Hook, Member
from codemod.transform.hooks.normalise import context_of, normalised_code
from codemod.transform.hooks.propose import new_hook, slug
from codemod.transform.hooks.vocabulary import MIN_MODELS, Change, HookKind


def statement_clusters(result: ScanResult, mixin_file: str | None) -> list[Cluster]:
    """Overrides whose statements no rule understands are the same code (normalised). Where three or more
    models' whole bodies are the same code that the mixin's method can run as it is (:func:`_whole_body`), the
    cluster is a hook: that code, under ``if self.<attribute>:``, at the start of the mixin's method, and each
    member reduced to ``super()`` with the attribute set. Otherwise a proposal."""
    out = []
    for code, found in _statement_groups(result).items():
        models = {f.override.model or f.override.class_name for f in found}
        if len(models) < MIN_MODELS:
            continue
        found.sort(key=lambda f: (f.override.model or f.override.class_name, f.override.file, f.override.class_name))
        out.append(_statement_cluster(code, found, result.profile, mixin_file))
    return out


def _statement_groups(result: ScanResult) -> dict[str, list[Finding]]:
    """The findings by the normalised code of the statements no rule understands in them."""
    groups: dict[str, list[Finding]] = {}
    for f in result.findings:
        o = f.override
        unrecognised = o.analysis.unrecognised
        if not unrecognised:
            continue
        context = context_of(o, result.profile)
        codes = [normalised_code(u.code, context) for u in unrecognised]
        if any(c is None for c in codes):
            continue
        # a check that only raises is left out of the key: bodies that do the same and check alike (``assert`` or
        # ``raise``, another message) are one cluster, and a member whose checks are its own keeps them (_Body.guards)
        key = "\n".join(c for c in codes if c and _passes_when(c) is None)
        if key:  # nothing but checks (a member's own, kept in front of super() by a first pass): no code to share
            groups.setdefault(key, []).append(f)
    return groups


def _statement_cluster(code: str, found: Sequence[Finding], profile: MixinProfile, mixin_file: str | None) -> Cluster:
    """The cluster of the overrides ``found`` whose statements no rule understands are ``code``: a hook where
    enough of them are whole bodies the mixin can run, else a proposal."""
    bodies = {f.override.id: _whole_body(f, profile) for f in found}
    movable = [body for body in bodies.values() if body.code]
    shared = max(movable, key=lambda b: sum(1 for m in movable if m.code == b.code), default=None)
    # the same code, or the same code checking the same conditions its own way (it keeps its checks)
    takers = {
        oid
        for oid, body in bodies.items()
        if shared is not None
        and body.code
        and (
            body.code == shared.code
            or (body.unguarded == shared.unguarded and body.guards and body.conditions == shared.conditions)
        )
    }
    first = code.splitlines()[0]
    lines = code.count("\n") + 1
    description = (
        f"{lines} statement{'s' if lines > 1 else ''} no rule understands, the same in each (first: {first[:70]})"
    )
    if (
        shared is not None
        and mixin_file is not None
        and len({f.override.model or f.override.class_name for f in found if f.override.id in takers}) >= MIN_MODELS
    ):
        representative = next(f.override for f in found if bodies[f.override.id].code == shared.code)
        name = "_generation_inputs_as_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", representative.class_name).lower()
        hook = _whole_body_hook(name, representative.class_name, bodies[representative.id].source, profile)
        members = tuple(
            _statements_member(
                f.override,
                Change.REDUCE,
                assignment=f"{name} = True",
                guards=() if bodies[f.override.id].code == shared.code else bodies[f.override.id].guards,
            )
            if f.override.id in takers
            else _statements_member(
                f.override, Change.BLOCKED, bodies[f.override.id].why or "its body is other code than the others'"
            )
            for f in found
        )
        return Cluster(
            name, HookKind.STATEMENTS, None, f"the whole body: {description}", hook, members, code=shared.code
        )
    why = "statements no rule understands: a proposal for an overridable mixin method, not applied"
    members = tuple(_statements_member(f.override, Change.BLOCKED, bodies[f.override.id].why or why) for f in found)
    return Cluster(
        "_prepare_" + slug(first)[:40],
        HookKind.STATEMENTS,
        None,
        description,
        None,
        members,
        code=code,
        not_applied=why,
    )


def _statements_member(
    o: Override, change: Change, why: str = "", *, assignment: str = "", guards: tuple[int, ...] = ()
) -> Member:
    """A member of a cluster of statements no rule understands (it hooks no key)."""
    return Member(
        o.id, o.model or o.class_name, o.class_name, o.file, (), assignment, change, why, (), o.lines, guards=guards
    )


@dataclasses.dataclass(frozen=True)
class _Body:
    """An override's whole body as the mixin's method would run it (``code``, normalised: the same in every member
    that does the same; ``source``, as written), or why it cannot (``why``)."""

    code: str = ""
    why: str = ""
    source: str = ""
    #: the top-level statements that only check (``_passes_when``): indices into the body, and the conditions they
    #: let the method go on under (sorted); ``unguarded``: ``code`` without them
    guards: tuple[int, ...] = ()
    conditions: tuple[str, ...] = ()
    unguarded: str = ""


def _whole_body(f: Finding, profile: MixinProfile) -> _Body:
    """``f``'s body as code the mixin's method can run in its place: statements no rule understands, then one
    ``return {...}`` of names (no condition, nothing dropped), reading only its own locals, builtins, ``self``,
    ``torch`` (which every era's generation/utils.py imports) and parameters the mixin's method has under the same
    name with the same default. A body that reads anything else (its ``**kwargs``, a name of its module) would mean
    something else there. The override must take ``**kwargs``: its reduction hands every input on through them."""
    o = f.override
    a = o.analysis
    mixin = profile.analysis
    if mixin is None:
        return _Body(why="no mixin method to move it into")
    if o.fallback is None or o.fallback.kind is not FallbackKind.MIXIN:
        # the code runs in the mixin only if super() reaches it: resolved, not assumed
        reached = o.fallback.detail if o.fallback is not None else "nothing resolved"
        return _Body(why=f"super() reaches {reached}, not the mixin")
    statements = a.top_level
    body, last = statements[:-1], statements[-1] if statements else None
    if (
        a.delegation is not None
        or last is None
        or not last.returns
        or len(a.recognised) != 1
        or a.dropped
        or [(u.line, u.end_line) for u in a.unrecognised] != [(t.line, t.end_line) for t in body]
    ):
        return _Body(why="its body is more than statements no rule understands and one return of a dict")
    if not a.outputs or any(
        out.line != last.line or out.guards or out.conditions or not out.expr.isidentifier() for out in a.outputs
    ):
        return _Body(why="it returns more than a dict of names")
    shared = {p.name: p for p in mixin.params}
    ids, mixin_ids = a.ids_param, mixin.ids_param
    if ids != mixin_ids or not any(p.kind is ParamKind.VAR_KEYWORDS for p in a.params):
        return _Body(why="its signature is not the mixin's: the first parameter or the **kwargs differ")
    for p in a.params:
        if (
            p.kind.named
            and p.name not in ("self", ids)
            and (p.name not in shared or shared[p.name].default != p.default)
        ):
            return _Body(why=f"the mixin's method has no parameter {p.name}={p.default}")
    known = {"self", "torch", ids, *(p.name for p in a.params if p.kind.named), *dir(builtins)}
    for t in statements:
        foreign = sorted(set(t.exposed) - known)
        if foreign:
            return _Body(why=f"line {t.line} reads {', '.join(foreign)}, which the mixin's method does not have")
        known.update(t.writes)
    returned = ", ".join(f"{json.dumps(out.key)}: {out.expr}" for out in a.outputs)
    ret = f"return {{{returned}}}"
    # ``source``: the statements as written (comments, layout, one blank line where groups had any)
    written = [re.sub(r"\A\n+", "\n", u.source) if u.source else u.code for u in a.unrecognised]
    # a check can move in front of super() (ahead of the statements before it) only where what it reads is what it
    # read there: ``self`` and parameters nothing before it assigns (the loop above refused any other name)
    guards: list[int] = []
    conditions: list[str] = []
    assigned: set[str] = set()
    for t, u in zip(body, a.unrecognised, strict=False):
        condition = _passes_when(u.code)
        if condition is not None and not set(t.exposed) & assigned:
            guards.append(t.index)
            conditions.append(condition)
        assigned.update(t.writes)
    unguarded = [u.code for t, u in zip(body, a.unrecognised, strict=False) if t.index not in guards]
    return _Body(
        "\n".join([*(u.code for u in a.unrecognised), ret]),
        source="\n".join([written[0].lstrip("\n"), *written[1:], "", ret]),
        guards=tuple(guards),
        conditions=tuple(sorted(conditions)),
        unguarded="\n".join([*unguarded, ret]),
    )


def _passes_when(code: str) -> str | None:
    """For a statement that only checks, ``assert <test>[, message]`` or ``if <test>: raise ...`` (nothing else), the
    condition it lets the method go on under (``x is not None`` for both ``assert x is not None`` and ``if x is None:
    raise ...``: the rewrite's ``negated``), laid out as ``ast`` writes it, so that every member's compares alike;
    None for any other statement."""
    try:
        statement = cst.parse_statement(code.strip())
    except cst.ParserSyntaxError:
        return None
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assert)
    ):
        test = statement.body[0].test
    elif isinstance(statement, cst.If) and statement.orelse is None:
        block = statement.body
        smalls = (
            block.body
            if isinstance(block, cst.SimpleStatementSuite)
            else [
                small
                for line in block.body
                for small in (line.body if isinstance(line, cst.SimpleStatementLine) else [line])
            ]
        )
        if not all(isinstance(small, cst.Raise) for small in smalls):
            return None
        test = negated(statement.test)
    else:
        return None
    return ast.unparse(ast.parse(cst.Module(body=[]).code_for_node(test), mode="eval").body)


def _whole_body_hook(name: str, class_name: str, code: str, profile: MixinProfile) -> Hook:
    typed = profile.era is Era.NEXT_SEQUENCE_LENGTH
    summary = (
        f"Models that prepare their inputs as {class_name}'s override did (the same code in each; no rule "
        "understands it) set this True: the mixin runs that code in their place"
    )
    return new_hook(
        HookKind.STATEMENTS,
        name,
        "bool" if typed else "",
        "False",
        summary,
        prologue=f"# The inputs as {class_name}'s override prepared them (`{name}`)\n"
        f"if self.{name}:\n{textwrap.indent(code, '    ')}\n",
    )

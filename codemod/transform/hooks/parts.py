"""The parts of an override: each model-specific key, normalised to an idiom (a truth table of its value)."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re
from collections.abc import Iterable, Sequence

from codemod.analyse.analysis import BodyAnalysis, Delegation, OutputKey
from codemod.analyse.classify import Finding
from codemod.analyse.mixin import MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import (
    ExtraHow,
    ValueOrigin,
)
from codemod.transform.hooks.model import Idiom, Part
from codemod.transform.hooks.normalise import (
    TRUE_FORMULA,
    Formula,
    OverrideContext,
    all_of,
    atom_formula,
    atoms_of,
    context_of,
    formula_holds,
    formula_of,
    normalised_code,
    not_of,
    reads_kwarg,
)
from codemod.transform.hooks.own_condition import before_super, may_change, own_condition
from codemod.transform.hooks.vocabulary import MAX_ATOMS, Atom, ValueKind


@dataclasses.dataclass(frozen=True)
class _Write:
    condition: Formula  # TRUE_FORMULA when unconditional
    value: ValueKind
    argument: str = ""


def handled_keys(profile: MixinProfile) -> frozenset[str]:
    """The keys the mixin prepares itself (slices, builds, drops): for any other key, what it prepares is
    the caller's value as given."""
    analysis = profile.analysis
    if analysis is None:
        return frozenset()
    named = {p.name for p in analysis.params if p.kind.named} - {"self"}
    return frozenset(
        named
        | set(analysis.output_values())
        | set(profile.never_forwarded)
        | set(profile.first_step_only_inputs)
        | {"decoder_attention_mask", "decoder_position_ids"}
    )


def _value(out: OutputKey, key: str, context: OverrideContext) -> list[_Write]:
    """The writes one output assignment makes (a ``a if test else b`` is two)."""
    condition = TRUE_FORMULA
    conditions = []
    for text in out.conditions:
        try:
            conditions.append(formula_of(ast.parse(text, mode="eval").body, context, key))
        except SyntaxError:
            conditions.append(atom_formula("code: " + text))
    if conditions:
        condition = all_of(*conditions) if len(conditions) > 1 else conditions[0]
    origin, name = out.value.origin, out.value.name
    if origin in (ValueOrigin.NONE, ValueOrigin.DROPPED):
        return [_Write(condition, ValueKind.NONE)]
    if origin is ValueOrigin.CONST:
        if re.fullmatch(r"self\.config\.[A-Za-z_][A-Za-z0-9_]*", out.expr.replace(" ", "")):
            return [_Write(condition, ValueKind.CONFIG, out.expr.replace(" ", "").split(".")[-1])]
        return [_Write(condition, ValueKind.LITERAL, name)]
    if origin is ValueOrigin.PARAM_DEFAULT:
        given, _, default = name.partition("=")
        if given == key:
            return [_Write(condition, ValueKind.CALLER_OR_DEFAULT, default)]
    if origin is ValueOrigin.PARAM and name == key and not out.conditions:
        declared = next((p.default for p in context.defaults if p.name == key), None)
        if declared is not None and declared != "None":
            return [_Write(condition, ValueKind.CALLER_OR_DEFAULT, declared)]
    if origin in (ValueOrigin.PARAM, ValueOrigin.FIRST_STEP, ValueOrigin.LATER_STEP) and name == key:
        expression = _expression(out.expr)
        if isinstance(expression, ast.IfExp):
            # ``x if test else None``: the recogniser folded the step test into the value
            test = formula_of(expression.test, context, key)
            body = _plain_value(expression.body, key, context)
            orelse = _plain_value(expression.orelse, key, context)
            if body is not None and orelse is not None:
                return [_Write(all_of(condition, test), body), _Write(all_of(condition, not_of(test)), orelse)]
            return [_Write(condition, ValueKind.OTHER, out.expr)]
        if origin is not ValueOrigin.PARAM and not out.conditions:
            return [_Write(condition, ValueKind.OTHER, out.expr)]  # a step test somewhere else: not ours to read
        return [_Write(condition, ValueKind.CALLER)]
    return [_Write(condition, ValueKind.OTHER, out.expr or str(out.value))]


def _expression(code: str) -> ast.expr | None:
    try:
        return ast.parse(code, mode="eval").body if code else None
    except SyntaxError:
        return None


def _plain_value(node: ast.expr, key: str, context: OverrideContext) -> ValueKind | None:
    if isinstance(node, ast.Constant) and node.value is None:
        return ValueKind.NONE
    if (isinstance(node, ast.Name) and node.id == key) or reads_kwarg(node, context, key):
        return ValueKind.CALLER
    return None


def within(line: int | None, spans: Iterable[tuple[int, int]]) -> bool:
    return line is not None and any(start <= line <= end for start, end in spans)


def part_of(f: Finding, key: str, profile: MixinProfile) -> Part:
    """Normalise what ``f``'s override does to ``key``."""
    o = f.override
    a = o.analysis
    model = o.model or o.class_name
    context = context_of(o, profile)
    # the statements of its own condition change no input: the ``if`` on it passes its keys (read below)
    own = own_condition(o, profile)
    handled = key in handled_keys(profile)
    # what the key is when no write applies: what super() prepared, or nothing at all
    withheld = key in a.withheld or popped_before(a, key)
    opaque = _unreadable(a, key, profile, own.spans if own is not None else (), handled=handled, withheld=withheld)
    if opaque:
        return Part(o.id, model, key, None, opaque=opaque)
    if a.delegation is None:
        base = ValueKind.PREPARED if a.forwards_kwargs and key not in {p.name for p in a.params} else ValueKind.NONE
    else:  # super(), or a sub-model of the release, prepared by the same mixin
        base = ValueKind.NONE if withheld else ValueKind.PREPARED
    writes: list[_Write] = []
    for out in a.outputs:
        if out.key == key:
            writes.extend(_value(out, key, context))
    if own is not None and key in own.keys:
        writes.append(
            _Write(
                Formula("or", args=(atom_formula(Atom.OWN.value), atom_formula(Atom.FIRST.value))), ValueKind.CALLER
            )
        )
    if not writes and not withheld and key not in a.dropped:
        return Part(o.id, model, key, None, opaque="no assignment of it was recognised")
    if handled and a.delegation is not None and any(w.value is ValueKind.CALLER_OR_DEFAULT for w in writes):
        # a default handed to super() is prepared further by the mixin (sliced, dropped after the first step)
        return Part(o.id, model, key, None, opaque="its default is handed to super(), which prepares it further")
    if not handled:
        # a key the mixin does not handle: when the caller gives none, whatever passes it on passes None, the
        # same to the forward as leaving it out; so "only if given" adds nothing
        writes = [dataclasses.replace(w, condition=_given(w.condition)) for w in writes]
    atoms = sorted(set().union(*(atoms_of(w.condition) for w in writes)) if writes else set())
    if any(w.value is ValueKind.CALLER and not handled for w in writes):
        # for a key the mixin does not handle, what it prepares is the caller's value
        writes = [
            dataclasses.replace(w, value=ValueKind.PREPARED) if w.value is ValueKind.CALLER else w for w in writes
        ]
    if len(atoms) > MAX_ATOMS:
        return Part(o.id, model, key, None, opaque=f"depends on {len(atoms)} conditions")
    idiom = _minimal(tuple(atoms), _truth_table(atoms, writes, base))
    arguments = {
        w.argument for w in writes if w.value in (ValueKind.CONFIG, ValueKind.LITERAL, ValueKind.CALLER_OR_DEFAULT)
    }
    argument = next(iter(arguments)) if len(arguments) == 1 else ""
    if any(w.value is ValueKind.OTHER for w in writes):
        other = next(w.argument for w in writes if w.value is ValueKind.OTHER)
        argument = normalised_code(other, context) or other
    return Part(o.id, model, key, idiom, argument)


def _unreadable(
    a: BodyAnalysis,
    key: str,
    profile: MixinProfile,
    own_spans: Sequence[tuple[int, int]],
    *,
    handled: bool,
    withheld: bool,
) -> str:
    """Why the value ``key`` ends with cannot be read off the override's recognised writes; "" when it can."""
    changing = next((u for u in a.unrecognised if not within(u.line, own_spans) and may_change(a, u, key)), None)
    if changing is not None:
        # a statement no rule understands may change the key however it likes (``model_inputs.update(...)``
        # does not name it): its value cannot be read off the recognised writes
        return f"a statement no rule understands (line {changing.line}) may change it"
    early = next((t for t in a.top_level[:-1] if t.returns), None)
    if early is not None:
        # the writes after an early return hold only when it does not return: a condition no write records
        return f"returns early (line {early.line}): the writes after it are conditional on a test they do not record"
    strict = next(
        (r for r in a.recognised if r.behaviour == "drop-key" and r.detail == key and r.facet("missing") == "raises"),
        None,
    )
    if strict is not None:
        # ``model_inputs.pop(key)`` / ``del model_inputs[key]``: a KeyError where nothing prepared it, which a hook's
        # ``pop(name, None)`` would not raise
        return f"drops it without a default (line {strict.line}): raises when it is missing"
    before = next(
        (
            out
            for out in a.outputs
            if out.key == key and out.via_kwargs and out.value.origin not in (ValueOrigin.NONE, ValueOrigin.DROPPED)
        ),
        None,
    )
    if handled and before is not None:
        # handed to super() in **kwargs: the mixin prepares it from there (slices it, drops it after the first step)
        return f"set before super() (line {before.line}), which prepares it further"
    mixin_params = {p.name for p in profile.analysis.params if p.kind.named} if profile.analysis else set()
    if (
        key in mixin_params
        and a.delegation is Delegation.SUPER
        and (
            withheld
            or key not in {out.key for out in a.outputs}
            or any(out.key == key and (out.via_kwargs or before_super(a, out.line)) for out in a.outputs)
        )
    ):
        return (
            f"changes {key}, which the mixin reads itself: not an input it passes on, but how it prepares the others"
        )
    if a.delegation is Delegation.STORED_METHOD:
        return f"takes its inputs from {a.delegates_to}, bound at run time"
    return ""


def _truth_table(atoms: Sequence[str], writes: Sequence[_Write], base: ValueKind) -> tuple[ValueKind, ...]:
    """The value for each combination of ``atoms`` (the first the most significant bit): the last write that
    holds, else ``base``."""
    table = []
    for bits in itertools.product((False, True), repeat=len(atoms)):
        assignment = dict(zip(atoms, bits, strict=False))
        value = base
        for write in writes:
            if formula_holds(write.condition, assignment):
                value = write.value
        table.append(value)
    return tuple(table)


def _given(formula: Formula) -> Formula:
    """``formula`` with "the caller gave the input" taken as true."""
    if formula.op == "atom" and formula.atom == Atom.GIVEN.value:
        return TRUE_FORMULA
    if formula.args:
        return dataclasses.replace(formula, args=tuple(_given(f) for f in formula.args))
    return formula


def popped_before(a: BodyAnalysis, key: str) -> bool:
    """``kwargs.pop(key)`` in front of ``super()``: a key dropped with no output assignment recording it."""
    return key in a.dropped and not any(
        out.key == key and out.value.origin is ValueOrigin.DROPPED for out in a.outputs
    )


def _minimal(atoms: tuple[str, ...], table: tuple[ValueKind, ...]) -> Idiom:
    """The same function without the atoms it does not depend on."""
    for position in range(len(atoms) - 1, -1, -1):
        bit = len(atoms) - 1 - position
        if all(table[row] is table[row | (1 << bit)] for row in range(len(table)) if not row & (1 << bit)):
            atoms = atoms[:position] + atoms[position + 1 :]
            table = tuple(value for row, value in enumerate(table) if not row & (1 << bit))
    return Idiom(atoms, table)


def parts(result: ScanResult) -> list[Part]:
    """Every model-specific key of every override the scan selected, normalised."""
    out = []
    for f in result.findings:
        if any(e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED) for e in f.extras):
            continue  # its keys come from what it keeps after super(), not from a hook's reading of them
        keys = dict.fromkeys(
            e.key
            for e in f.extras
            if e.key and e.how not in (ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE, ExtraHow.WITHHELD)
        )
        for key in keys:
            out.append(part_of(f, key, result.profile))
    return out

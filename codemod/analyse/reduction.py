"""Which of an override's own statements a reduction to ``super()`` can keep as they are, and where.

A bespoke override is still reduced when its model-specific code is a run of statements the fallback can
run around: in front of ``super()`` (a prefix that only rebinds the parameters), or after it (statements
that compute a few keys from the caller's inputs, which then replace the fallback's). These functions read
the body's analysis and say which statements stay, which keys are taken from them and which ids slicing
inside them goes (the fallback slices the ids itself); ``classify`` decides what to make of that. Pure.
See docs/design/classify.md for the shapes and why each refusal is there.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections.abc import Iterable, Sequence

from codemod.analyse.analysis import BodyAnalysis, OutputKey, Recognised, TopLevel
from codemod.contracts import CACHE_NAMES, ValueOrigin
from codemod.rules.base import IDS_SLICING

#: behaviours that only cut tensors to the new tokens (the ids, and the inputs sliced with them)
SLICING = frozenset({*IDS_SLICING, "slice-to-last-token", "slice-with-ids"})
# Keys every generic implementation handles itself; an override passing them through adds nothing.
IDS_KEYS = frozenset({"input_ids", "decoder_input_ids"})
#: the inputs a fallback prepares itself (slices, builds or passes as the cache): an override that computes
#: one of them its own way is model-specific; the other keys are extras on top of the fallback's preparation
CORE_INPUTS = (
    IDS_KEYS
    | CACHE_NAMES
    | frozenset(
        {
            "inputs_embeds",
            "attention_mask",
            "decoder_attention_mask",
            "position_ids",
            "decoder_position_ids",
            "cache_position",
            "next_sequence_length",
        }
    )
)
#: the name of the dict an override builds and returns (the fallback's, after a reduction)
RESULT = "model_inputs"
#: a reduction keeping statements after super() is made where it saves at least this many lines (estimated: the
#: statements that go, with the comments above them, less the super() call and the keys set after it): where the
#: model's own handling is nearly all of the method, the method stays as its maintainers wrote it
AFTER_SUPER_SAVES_AT_LEAST = 5


@dataclasses.dataclass(frozen=True)
class KeptAfter:
    """Top-level statements kept after ``super()`` (by index, in order), the keys then set from what they
    computed, the ids slicing inside them that goes (``cuts``), and the ids key such a cut hands back to the
    fallback (``released``)."""

    indices: tuple[int, ...]
    keys: tuple[str, ...]
    cuts: tuple[Recognised, ...] = ()
    released: str = ""


def kept_prefix(a: BodyAnalysis, read_later: set[str]) -> tuple[tuple[int, ...], tuple[Recognised, ...]]:
    """Top-level statements a reduction can keep as they are, in front of ``super()``, and the ids slicing inside
    them that goes (``read_later``: the names the extras a reduction sets read).

    Possible when the only model-specific code is a run of statements at the start of the body
    (e.g. Phi-3 resetting the cache when its rope scaling switches) and everything after it is
    generic: the statements stay, the rest becomes ``super().prepare_inputs_for_generation(...)``
    called with whatever they left in the parameters. Empty when the shape does not allow it."""
    statements = list(a.top_level)
    kept = [t for t in statements if not t.recognised]
    if not kept:
        return (), ()
    prefix = statements[: len(kept)]
    if prefix != kept or any(t.builds_output or t.returns for t in kept):
        return (), ()
    # the extras written later must only use names the kept statements or the parameters provide
    params = {p.name for p in a.params}
    dropped_writes = {n for t in statements[len(kept) :] for n in t.writes} - params
    for out in a.outputs:
        if out.expr and names_in(out.expr) & dropped_writes:
            return (), ()
    indices = tuple(t.index for t in kept)
    return indices, ids_cuts(a, indices, read_later)


def kept_after(a: BodyAnalysis, rule_lines: Sequence[int], computed: Sequence[str]) -> KeptAfter | None:
    """Top-level statements a reduction can keep as they are *after* ``super()``, and the keys it then sets from
    what they computed; None when the shape does not allow it. ``rule_lines``: where the bespoke behaviours the
    rules recognised are; ``computed``: the keys the override computes its own way.

    The model-specific statements stay, with the statements they read from, in their order, after the fallback
    has prepared its inputs from the caller's ones (Qwen2-VL's rope position ids, Mllama's image inputs, Bloom's
    static-cache mask); the keys taken from them replace the fallback's, and everything else is the fallback's."""
    statements = a.top_level
    if not _returns_its_dict(statements):
        return None
    by_index = {t.index: t for t in statements}
    seeds = {t.index for t in statements[:-1] if not t.recognised or any(_within(t, line) for line in rule_lines)}
    if any(by_index[i].returns or RESULT in by_index[i].writes for i in seeds):
        return None
    closed = _close_over_writers(a, computed, seeds)
    if closed is None:
        return None
    kept, keys = closed
    # ids sliced with no cache guard: once the method goes, a fallback that slices by its cache would pass them all
    unguarded = [r.line for r in a.recognised if r.facet("guard") == "none" and r.behaviour in IDS_SLICING]
    if any(_within(t, line) for line in unguarded for t in statements if t.index not in kept):
        return None
    cuts, released = _released_ids(a, kept, keys)
    if released:
        keys = {key: None for key in keys if key != released}
    if not _keys_settable(a, kept, keys):
        return None
    if _lines_saved(statements, kept, cuts, len(keys)) < AFTER_SUPER_SAVES_AT_LEAST:
        return None
    return KeptAfter(tuple(sorted(kept)), tuple(keys), cuts, released)


def decoder_mask_after(a: BodyAnalysis) -> tuple[Recognised, KeptAfter] | None:
    """An encoder-decoder wrapper that passes its decoder's own mask (``decoder-delegate`` with the mask) keeps the
    statements asking the decoder after ``super()``, and sets ``decoder_attention_mask`` and ``decoder_input_ids``
    from them: the decoder's own default mask and its own slicing of the ids stand, the rest (the cache, the other
    keys) is the mixin's. The recognised delegation and what is kept; None for any other shape."""
    from codemod.rules.decoder_delegate import RULE as DECODER_DELEGATE

    found = next((r for r in a.recognised if r.code == DECODER_DELEGATE.code and r.facet("mask") == "true"), None)
    if found is None:
        return None
    statements = [t for t in a.top_level if found.line <= t.line <= max(found.end_line, found.line)]
    if not statements or any(t.returns or t.builds_output for t in statements):
        return None
    written = {n for t in statements for n in t.writes}
    keys = ("decoder_attention_mask", "decoder_input_ids")
    for key in keys:
        writes = final_writes(a, key)
        if len(writes) != 1 or writes[0].conditions or not writes[0].expr or not names_in(writes[0].expr) <= written:
            return None  # each key from what the kept statements wrote, unconditionally
    return found, KeptAfter(tuple(t.index for t in statements), keys)


def ids_cuts(a: BodyAnalysis, kept: Sequence[int], read_later: set[str]) -> tuple[Recognised, ...]:
    """The ids slicing (``IDS_SLICING``) inside the ``kept`` top-level statements that nothing kept after it
    reads (``read_later``: what the code after them reads): the fallback slices the ids itself (Jamba's
    ``if`` slices them in one branch and makes its cache in the other; the cache stays, the slicing goes)."""
    by_index = {t.index: t for t in a.top_level}
    cuts: dict[tuple[int | str, ...], Recognised] = {}
    for r in a.recognised:
        n = r.nested
        top = n.path[0] if n is not None else None
        if (
            n is None
            or not isinstance(top, int)
            or r.behaviour not in IDS_SLICING
            or top not in kept
            or n.read_after
            or n.path in cuts
        ):
            continue
        later = [by_index[i] for i in kept if i > top and i in by_index]
        if any(set(n.writes) & (set(t.exposed) - set(t.placement_reads)) for t in later) or set(n.writes) & read_later:
            continue
        cuts[n.path] = r
    return tuple(cuts.values())


def final_writes(analysis: BodyAnalysis, key: str) -> list[OutputKey]:
    """The assignments of ``key`` that decide its final value: from the last unconditional one on."""
    writes = [o for o in analysis.outputs if o.key == key and o.value.origin is not ValueOrigin.DROPPED]
    last_plain = max((i for i, o in enumerate(writes) if not o.conditions), default=0)
    return writes[last_plain:]


def names_in(expression: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


# ------------------------------------------------------------------------------------- after super()


def _within(t: TopLevel, line: int) -> bool:
    return t.line <= line <= max(t.end_line, t.line)


def _returns_its_dict(statements: Sequence[TopLevel]) -> bool:
    """Whether the body ends by returning its dict (by name, or as a literal the outputs record) and returns
    nowhere else."""
    return bool(
        statements
        and statements[-1].returns
        and (statements[-1].reads == (RESULT,) or statements[-1].builds_output)
        and not any(t.returns for t in statements[:-1])
    )


def _close_over_writers(
    a: BodyAnalysis, computed: Sequence[str], seeds: set[int]
) -> tuple[set[int], dict[str, None]] | None:
    """The ``seeds`` with the statements they and the keys taken from them read, from the writers before them
    (what each reads may come from any earlier writer), until nothing more is needed; with those keys. None when
    a statement that would be needed returns or makes the dict, or the keys cannot be taken."""
    statements = a.top_level
    by_index = {t.index: t for t in statements}
    kept: set[int] = set(seeds)
    while True:
        keys = _taken_keys(a, computed, seeds, kept)
        if keys is None:
            return None
        # (a name read only for its device or dtype needs no slicing of it: a statement that only slices is no writer)
        needed = [
            (
                by_index[i].line,
                set(by_index[i].exposed) - set(by_index[i].placement_reads),
                set(by_index[i].placement_reads),
            )
            for i in kept
        ]
        needed += [(o.line, names_in(o.expr), set()) for key in keys for o in final_writes(a, key)]
        more = {
            w.index
            for line, names, placed in needed
            for w in statements
            if w.line < line
            and w.index not in kept
            and set(w.writes) & ((names | (set() if _only_slices(a, w) else placed)) - {RESULT})
        }
        if not more:
            return kept, keys
        if any(by_index[i].builds_output or by_index[i].returns for i in more):
            return None
        kept |= more


def _taken_keys(a: BodyAnalysis, computed: Sequence[str], seeds: set[int], kept: set[int]) -> dict[str, None] | None:
    """The keys a reduction keeping ``kept`` after super() sets from what they computed (in order); None when
    a statement that goes would compute from what a model-specific one computed, or a key is set both inside
    and outside the kept statements."""
    statements = a.top_level
    tainted: set[str] = set()
    for t in statements:
        if t.index in seeds or (t.index in kept and set(t.exposed) & tainted):
            tainted |= set(t.writes) - {RESULT}
        elif set(t.exposed) & tainted and not t.builds_output:
            return None  # a generic statement computing from them: the fallback computes it from the caller's inputs
    keys = dict.fromkeys(computed)
    for key in a.output_values():
        writes = final_writes(a, key)
        inside = [o for o in writes if any(_within(t, o.line) for t in statements if t.index in kept)]
        if inside:
            if len(inside) != len(writes):
                return None
            keys.pop(key, None)  # the kept statement sets it itself
            continue
        for o in writes:
            if o.expr and names_in(o.expr) & tainted:
                keys[key] = None
            elif not o.expr and any(_within(t, o.line) and set(t.exposed) & tainted for t in statements):
                return None
    return keys


def _released_ids(a: BodyAnalysis, kept: set[int], keys: Iterable[str]) -> tuple[tuple[Recognised, ...], str]:
    """The ids slicing inside the kept statements, which is the fallback's: it goes, and the fallback's sliced ids
    stand. A cut that writes the ids hands back their one key (``released``), or is not made."""
    ids_keys = [key for key in keys if key in IDS_KEYS and all(o.expr.strip() == key for o in final_writes(a, key))]
    cuts = ids_cuts(
        a,
        tuple(kept),
        {n for key in keys if key not in ids_keys for o in final_writes(a, key) for n in names_in(o.expr)},
    )
    if cuts and any(name in IDS_KEYS for r in cuts for name in (r.nested.writes if r.nested else ())):
        if len(ids_keys) != 1 or _writes_outside(a, kept, cuts, ids_keys):
            return (), ""
        return cuts, ids_keys[0]
    return cuts, ""


def _keys_settable(a: BodyAnalysis, kept: set[int], keys: Iterable[str]) -> bool:
    """Whether every key taken from the kept statements has an expression to set it by, and no kept statement
    reads the dict after the override first set one (it would see the fallback's value)."""
    by_index = {t.index: t for t in a.top_level}
    for key in keys:
        writes = final_writes(a, key)
        if not writes or any(not o.expr for o in writes):
            return False
        first = min(o.line for o in writes)
        if any(RESULT in by_index[i].exposed and by_index[i].line > first for i in kept):
            return False
    return True


def _lines_saved(statements: Sequence[TopLevel], kept: set[int], cuts: Sequence[Recognised], keys: int) -> int:
    """About how many lines the reduction saves: the statements that go (each with the comments and blank lines
    above it) and the cuts, less the super() call (about three lines), a line per key and the return."""
    ends = [max(t.end_line, t.line) for t in statements]
    removed = sum(
        end - (ends[p - 1] if p else t.line - 1)
        for p, (t, end) in enumerate(zip(statements, ends, strict=False))
        if t.index not in kept
    )
    removed += sum(r.end_line - r.line + 1 for r in cuts)
    return removed - (3 + keys + 1)


def _writes_outside(a: BodyAnalysis, kept: Iterable[int], cuts: Sequence[Recognised], names: Iterable[str]) -> bool:
    """Whether the kept statements assign one of ``names`` other than in the ``cuts`` (or may: code that does
    not parse)."""
    cut_lines = {(r.line, r.end_line) for r in cuts}
    indices = set(kept)
    spans = [(t.line, max(t.end_line, t.line)) for t in a.top_level if t.index in indices]
    wanted = set(names)

    def inside(line: int) -> bool:
        return any(start <= line <= end for start, end in spans)

    for r in a.recognised:
        if r.nested and inside(r.line) and (r.line, r.end_line) not in cut_lines and set(r.nested.writes) & wanted:
            return True
    for u in a.unrecognised:
        if inside(u.line):
            try:
                tree = ast.parse(textwrap.dedent(u.source or u.code))
            except SyntaxError:
                return True
            if {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & wanted:
                return True
    return False


def _only_slices(a: BodyAnalysis, statement: TopLevel) -> bool:
    """Whether ``statement`` is nothing but slicing the rules recognise (the ids by the cache, the inputs that go
    with them): what it writes lives where it did."""
    inside = [r for r in a.recognised if statement.line <= r.line <= max(statement.end_line, statement.line)]
    return statement.recognised and bool(inside) and all(r.behaviour in SLICING for r in inside)


# ------------------------------------------------------------------------------------- kept as they are


def handles_inputs(code: str, params: frozenset[str]) -> bool:
    """Whether a statement a reduction keeps as it is computes an input its own way (model-specific).

    It does when it rebinds a parameter (an input changed before it is prepared: the masked LMs' dummy
    token, Musicgen's delay pattern, Phi-3's cache reset), writes or removes a key the fallback prepares
    itself (``CORE_INPUTS``: PaliGemma's 1-indexed position_ids), or puts a computed value under another
    key. It does not when it is a guard (``assert``, ``if …: raise``), sets a local that a condition reads
    (llava's ``legacy_processing``), or gives another key a parameter's value or a constant."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return True
    if all(_is_guard(statement) for statement in tree.body):
        return False
    for node in ast.walk(tree):
        for target, value in _writes(node):
            if isinstance(target, ast.Name):
                if target.id in params:
                    return True
            elif isinstance(target, ast.Subscript):
                key = target.slice
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or key.value in CORE_INPUTS:
                    return True
                if not _plain(value, params):
                    return True
            else:
                return True  # an attribute, a starred target: not an input the fallback knows
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop":
            popped = node.args[0] if node.args else None
            if not (isinstance(popped, ast.Constant) and isinstance(popped.value, str)) or popped.value in CORE_INPUTS:
                return True
        if isinstance(node, ast.Delete):
            return True
    return False


def _is_guard(statement: ast.stmt) -> bool:
    """``assert …`` or ``if …: raise …``: it refuses a call and prepares nothing."""
    if isinstance(statement, ast.Assert):
        return True
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and all(isinstance(s, ast.Raise) for s in statement.body)
    )


def _writes(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    """The targets a node assigns, each with the value it gets (None: computed from the old value, or unpacked)."""
    pairs: list[tuple[ast.expr, ast.expr | None]] = []
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                pairs += [(t, None) for t in target.elts]
            else:
                pairs.append((target, node.value))
    elif isinstance(node, ast.AugAssign):
        pairs.append((node.target, None))
    elif isinstance(node, ast.AnnAssign):
        pairs.append((node.target, node.value))
    elif isinstance(node, ast.NamedExpr):
        pairs.append((node.target, node.value))
    elif isinstance(node, (ast.For, ast.comprehension)):
        targets = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) else [node.target]
        pairs += [(t, None) for t in targets]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("update", "setdefault")
    ):
        argument = node.args[0] if node.args else None
        if node.func.attr == "setdefault" and len(node.args) == 2:
            pairs.append((ast.Subscript(value=node.func.value, slice=node.args[0], ctx=ast.Store()), node.args[1]))
        elif isinstance(argument, ast.Dict) and not node.keywords:
            pairs += [
                (ast.Subscript(value=node.func.value, slice=k, ctx=ast.Store()), v)
                for k, v in zip(argument.keys, argument.values, strict=False)
                if k is not None
            ]
        else:
            pairs.append((ast.Starred(value=node.func.value, ctx=ast.Store()), None))  # keys not known
    return pairs


def _plain(value: ast.expr | None, params: frozenset[str]) -> bool:
    """A value an extra key may get without the override computing it: a parameter as given, or a constant."""
    return isinstance(value, ast.Constant) or (isinstance(value, ast.Name) and value.id in params)

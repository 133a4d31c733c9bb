"""Plan a hook's members: what happens to each override when its class takes the hook."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from codemod.analyse.analysis import BodyAnalysis, Delegation, Param, TopLevel
from codemod.analyse.classify import GENERATE_PROVIDES, RESULT, Finding
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import Override
from codemod.analyse.mixin import Era, MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import (
    ExtraHow,
    OverrideId,
    ParamKind,
    ValueOrigin,
)
from codemod.transform.hooks.model import HookReport, Idiom, Part
from codemod.transform.hooks.own_condition import (
    OwnCondition,
    names_in_expression,
    own_condition,
    owner_of,
    statement_tree,
)
from codemod.transform.hooks.parts import popped_before, within
from codemod.transform.hooks.propose import hook_for
from codemod.transform.hooks.vocabulary import NEEDS_METHOD, Atom, Change, HookKind, ValueKind
from codemod.transform.plan import Trim, unnamable

#: values a hook always sets (never None, never left out)
_ALWAYS_SET = frozenset({ValueKind.CONFIG, ValueKind.LITERAL, ValueKind.CALLER_OR_DEFAULT})


@dataclasses.dataclass(frozen=True)
class MemberChange:
    """How a member's override changes once the mixin does its hooked inputs."""

    change: Change
    why: str = ""  # why it is blocked
    #: TRIM: the top-level statements removed (indices into the method body, the docstring counts)
    removed: tuple[int, ...] = ()
    #: TRIM: parameters only the removed statements read, which the method withheld from super(): they leave the
    #: signature and reach super() through ``**kwargs``, where the hook reads them (Fuyu's ``image_patches``)
    unnamed: tuple[str, ...] = ()
    #: DELETE: the statements of the override's own condition, and the method they move into (see :class:`Member`)
    moved: tuple[int, ...] = ()
    method: str = ""


def needs_method(own: OwnCondition, ids: str, kwargs: str) -> str:
    """The model's ``_generation_needs_first_step_inputs`` without the statements that move into it (the rewrite puts
    them in front of its ``return``): the parameters they read, with the override's defaults."""
    params = ", ".join(["self", ids, *(f"{p.name}={p.default or 'None'}" for p in own.reads), f"**{kwargs}"])
    return f"def {NEEDS_METHOD}({params}):\n    return {own.local}\n"


def blocked_change(why: str) -> MemberChange:
    return MemberChange(Change.BLOCKED, why)


def reduced_its_own_way(f: Finding) -> bool:
    """Whether ``f``'s override, already reduced to super(), still prepares other inputs than the mixin in the standard
    flow (an encoder-decoder wrapper's decoder mask, kept after super() where verification found it mattered): a hook
    may take over some of its statements, never the whole method (``apply --hooks`` on its own output)."""
    return f.override.analysis.delegation is Delegation.SUPER and bool(f.flow)


def member_change(
    f: Finding,
    hooked: Iterable[str],
    profile: MixinProfile,
    idioms: Mapping[str, Idiom],
    *,
    keep_signature: bool = False,
) -> MemberChange:
    """How ``f``'s override changes once the mixin does ``hooked`` (its keys) for it. ``keep_signature``: never
    a deletion (verification found the signature to matter: see :func:`trimmed`)."""
    o = f.override
    a = o.analysis
    hooked = set(hooked)
    if o.fallback is not None and o.fallback.kind is not FallbackKind.MIXIN:
        return blocked_change(f"a deletion or super() reaches {o.fallback.detail}, not the mixin the hook goes into")
    if a.delegation in (Delegation.SUBMODEL, Delegation.STORED_METHOD):
        return blocked_change(f"takes its inputs from {a.delegates_to}.prepare_inputs_for_generation, not super()")
    own = own_condition(o, profile)
    moving = own is not None and set(own.keys) <= hooked
    if own is not None and not moving and set(own.keys) & hooked:
        return blocked_change(
            f"its own condition ({own.local}) passes {', '.join(own.keys)}: they move together or not at all"
        )
    # the statements of its own condition move into the class's method for the mixin: nothing of them stays
    bespoke = next(
        (r for r in f.reasons if r.kind.keeps and not (moving and own is not None and within(r.line, own.spans))),
        None,
    )
    if bespoke is not None and a.delegation is not Delegation.SUPER:
        return blocked_change(
            f"stays for what the mixin does not do ({bespoke.text.splitlines()[0][:80]}): its other "
            "statements are not all recognised, so nothing checks the part can move"
        )
    loose = _loose_keys(o, hooked, profile, idioms)
    if loose:
        return blocked_change(
            f"{o.class_name}.forward does not name {', '.join(loose)}: None and left out may not be the same to it"
        )
    remaining = [
        e for e in f.extras if e.key not in hooked or e.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE)
    ]
    provided = {k for k in hooked if k in idioms and set(idioms[k].table) == {ValueKind.CALLER_OR_DEFAULT}}
    # an override that already calls super() and does something the mixin does not (Fuyu's ids cut to the last
    # token) can still be trimmed: its own statements stay where they are, only those that set hooked inputs go, with
    # the checks of any trim below (they do nothing else; nothing runs between super() and them)
    if (
        not remaining
        and bespoke is None
        and not reduced_its_own_way(f)
        and not signature_kept(a, profile, provided)
        and not keep_signature
    ):
        return _deletion(o, profile, own if moving else None)
    if moving and own is not None:
        return blocked_change(
            f"its own condition ({own.local}) moves into {NEEDS_METHOD} only with the whole override, and "
            "something else stays"
        )
    if a.delegation is None:
        return MemberChange(Change.REDUCE)
    return _trim(o, hooked, profile, idioms)


def _loose_keys(o: Override, hooked: set[str], profile: MixinProfile, idioms: Mapping[str, Idiom]) -> list[str]:
    """The hooked keys a forward that takes ``**kwargs`` may tell apart as None and left out."""
    if o.forward_params is None or not any(p.startswith("**") for p in o.forward_params):
        return []
    # a hook leaves out what a member may have set to None (and the other way round): the same to a forward
    # that names the input (its default is None), not to one that takes it in **kwargs and hands it on
    named = {p for p in o.forward_params if not p.startswith("*")}
    return sorted(
        k
        for k in hooked
        if k in idioms
        and not set(idioms[k].table) <= _ALWAYS_SET
        and k not in named
        and not _left_out_alike(o.analysis, k, idioms[k], profile)
    )


def _deletion(o: Override, profile: MixinProfile, moving: OwnCondition | None) -> MemberChange:
    """The deletion of an override nothing model-specific is left in (``moving``: its own condition, which moves
    into its class's method), unless generate() would refuse an input without it."""
    a = o.analysis
    mixin_params = {p.name for p in profile.analysis.params} if profile.analysis else set()
    forward = set(o.forward_params or ())
    if o.forward_params is not None:
        ids = a.ids_param
        unknown = sorted(
            p.name
            for p in a.params
            if p.kind.named and p.name not in ("self", ids) and p.name not in forward and p.name not in mixin_params
        )
        if unknown:
            return blocked_change(
                f"generate() accepts {', '.join(unknown)} only because the override names "
                f"{'it' if len(unknown) == 1 else 'them'} ({o.class_name}.forward does not): "
                "deleting it would make generate() refuse the input"
            )
    if moving is not None:
        ids, kwargs = a.ids_param, next((p.name for p in a.params if p.kind is ParamKind.VAR_KEYWORDS), None)
        if ids is None or kwargs is None:
            return blocked_change("its own condition needs the ids and **kwargs to be asked with")
        return MemberChange(Change.DELETE, moved=moving.statements, method=needs_method(moving, ids, kwargs))
    return MemberChange(Change.DELETE)


def _trim(o: Override, hooked: set[str], profile: MixinProfile, idioms: Mapping[str, Idiom]) -> MemberChange:
    """The trim of an override that calls super() already: the statements that only set hooked keys removed."""
    a = o.analysis
    if not a.forwards_kwargs:
        return blocked_change("its super() call hands on no **kwargs: the hooked inputs would not reach the mixin")
    removed = _statements_of(a, hooked)
    if removed is None:
        return blocked_change("a statement setting a hooked input also does something else")
    unnamed = []
    for key in sorted(hooked):
        if popped_before(a, key):
            return blocked_change(
                f"it drops {key} before super(): removing its statement would lose the input (a deletion "
                "would not, but something else stays)"
            )
        if key in a.withheld:
            if not _unnamable(o, key, removed):
                return blocked_change(
                    f"it does not hand {key} to super(): removing its statement would lose the input "
                    "(a deletion would not, but something else stays)"
                )
            unnamed.append(key)
    atoms = set().union(*(set(idioms[k].atoms) for k in hooked if k in idioms))
    flags = {
        Atom.FIRST.value: "is_first_iteration" if profile.era is Era.NEXT_SEQUENCE_LENGTH else "cache_position",
        Atom.USE_CACHE.value: "use_cache",
    }
    for atom in sorted(atoms):
        flag = flags.get(atom)
        if flag is not None and flag in a.withheld:
            return blocked_change(f"it does not hand {flag} to super(): the mixin's test is not the override's")
    ordered = a.top_level
    call = next((t.index for t in ordered if "super" in t.reads), None)
    gone = [t for t in ordered if t.index in removed]
    between = next(
        (
            t
            for t in ordered
            if call is not None
            and call < t.index < max(removed)
            and t.index not in removed
            and not _unaffected_by(a, t, hooked, gone)
        ),
        None,
    )
    if between is not None:
        # the hook runs inside super(): a statement between the call and the removed ones would see its values
        return blocked_change(
            f"line {between.line} runs between super() and the statements the hook replaces: it would see "
            "the hook's values where it saw the mixin's"
        )
    return MemberChange(Change.TRIM, removed=removed, unnamed=tuple(unnamed))


#: the hooks whose code pops their inputs (``model_inputs.pop(name, None)``) where it does not leave what the mixin
#: prepared: what they leave out is absent, never None
_POPPING_HOOKS = frozenset({HookKind.DROPPED, HookKind.DROPPED_WHEN})


def _left_out_alike(a: BodyAnalysis, key: str, idiom: Idiom, profile: MixinProfile) -> bool:
    """Whether the member and the idiom's hook both leave ``key`` out where either does: the member only pops it
    (never sets it to None), and the hook pops it too. Then a forward that takes the key only in ``**kwargs`` gets
    the same from both (VisionEncoderDecoder's ``decoder_head_mask``, RAG's ``assistant_model``)."""
    writes = [out for out in a.outputs if out.key == key]
    return (
        bool(writes)
        and all(out.value.origin is ValueOrigin.DROPPED and not out.via_kwargs for out in writes)
        and hook_for(idiom, profile)[0] in _POPPING_HOOKS
    )


#: values a statement takes from the method's parameters or writes as they are: never read off the prepared dict
_OWN_VALUES = frozenset(
    {ValueOrigin.PARAM, ValueOrigin.PARAM_DEFAULT, ValueOrigin.CONST, ValueOrigin.NONE, ValueOrigin.DROPPED}
)


def _unaffected_by(a: BodyAnalysis, t: TopLevel, hooked: set[str], removed: Sequence[TopLevel]) -> bool:
    """Whether statement ``t``, standing between super() and the statements a trim removes, does the same when the
    hook has already set the hooked keys inside super(), and the removed statements the same after it.

    The hook changes nothing but the dict super() returns (``**kwargs`` reach super() unpacked: a copy). So ``t``
    must not read that dict, but where it sets other keys of it (as recognised code: an unrecognised part could read
    anything) from values that do not come from it: BLIP's ``model_inputs["is_decoder"] = True``, Reformer's
    ``past_buckets_states`` from its ``past_key_values`` parameter, Bloom's static-cache mask from its own
    ``attention_mask``. Statements that never name the dict qualify whether a rule understands them or not
    (RoCBert's cut of its shape and pronunciation ids). And it must not rebind the dict, nor change what the
    removed statements read besides it (``TopLevel.touched``: ``cache_position.add_(1)``), nor touch ``self`` at all
    where they read it (for a config attribute: ``self.config.x = 5`` or ``self.bump()`` in front of them changes
    what the hook, running before it, reads)."""
    theirs = {n for r in removed for n in r.reads} - {n for r in removed for n in r.writes} - {RESULT}
    if t.returns or "super" in t.reads or RESULT in t.writes or set(t.writes) & theirs:
        return False
    outputs = [out for out in a.outputs if owner_of(a, out.line) is t]
    if set(t.reads) & theirs:
        # reading what they read is harmless only where the code says it is read and nothing more: it never names
        # the dict and only reads their objects (Qwen2-VL's own cut of its ids by ``cache_position``, before its
        # later-step ``pixel_values``), or uses the dict by other keys only
        if not outputs and RESULT not in t.reads and "self" not in theirs and not set(t.touched) & theirs:
            return True
        return not outputs and _other_keys_only(a, t, hooked, theirs)
    if not outputs:
        return RESULT not in t.reads or _other_keys_only(a, t, hooked, theirs)
    return t.recognised and all(
        out.key not in hooked
        and not out.via_kwargs
        and (out.value.origin in _OWN_VALUES or RESULT not in names_in_expression(out.expr))
        and not any(RESULT in names_in_expression(condition) for condition in out.conditions)
        for out in outputs
    )


def _other_keys_only(a: BodyAnalysis, t: TopLevel, hooked: set[str], theirs: set[str]) -> bool:
    """Whether statement ``t``, which no rule understands, uses the dict ``super()`` returned only by constant keys
    that no hook sets (``model_inputs["inputs_embeds"].shape``, ``model_inputs.get("position_ids")``, ``x["k"] += 1``),
    read or written: it never hands the dict on, rebinds it, or reaches a hooked key, so the hook's values are not
    what it sees (PaliGemma's static-cache mask and its 1-indexed positions, between ``super()`` and its first-step
    ``pixel_values``). What the removed statements read (``theirs``: PaliGemma's ``cache_position``) it may read,
    never ``self``, never bind, and never call a method of (``cache_position.add_(1)``). Only where no rule claimed
    any of it: a recognised part is not code this reads."""
    if "self" in theirs and "self" in t.reads:
        return False
    span = range(t.line, (t.end_line or t.line) + 1)
    if any(r.line in span for r in a.recognised):
        return False
    parts = [u for u in a.unrecognised if u.line in span]
    if not parts:
        return False
    for u in parts:
        tree = statement_tree(u)
        if tree is None:
            return False
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in theirs:
                parent = parents.get(node)
                if not isinstance(node.ctx, ast.Load) or (
                    isinstance(parent, (ast.Attribute, ast.Subscript))
                    and parent.value is node
                    and not isinstance(parent.ctx, ast.Load)
                ):
                    return False
                if isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), ast.Call):
                    return False  # a method of it, which may change it
                continue
            if not (isinstance(node, ast.Name) and node.id == RESULT):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and parent.value is node:
                key = parent.slice.value if isinstance(parent.slice, ast.Constant) else None
            elif (
                isinstance(parent, ast.Attribute)
                and parent.attr == "get"
                and isinstance(parents.get(parent), ast.Call)
            ):
                call = parents[parent]
                assert isinstance(call, ast.Call)
                key = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            else:
                return False
            if not isinstance(key, str) or key in hooked:
                return False
    return True


def _unnamable(o: Override, name: str, removed: tuple[int, ...]) -> bool:
    """Whether parameter ``name``, which the method does not hand to super(), can leave the signature with the
    ``removed`` statements (only they read it), reaching super() and the hook through ``**kwargs``
    (``plan.unnamable``)."""
    return unnamable(o, name) and all(name not in t.reads for t in o.analysis.top_level if t.index not in removed)


def _own_defaults(a: BodyAnalysis, profile: MixinProfile) -> list[Param]:
    """The named parameters (not ``self``, not the ids) with a default of the override's own: not None, and not
    the mixin's default for the same parameter."""
    mixin = {p.name: p.default for p in profile.analysis.params} if profile.analysis is not None else {}
    ids = a.ids_param
    return [
        p
        for p in a.params
        if p.kind.named
        and p.name not in ("self", ids)
        and p.default not in (None, "None")
        and mixin.get(p.name) != p.default
    ]


def signature_defaults(
    idiom: Idiom, members: Sequence[Part], findings: Mapping[str, Finding], profile: MixinProfile
) -> list[Part]:
    """The other defaults of the defaults hook's members' signatures (Mixtral's ``use_cache=True`` beside its
    ``output_router_logits=False``), as parts of the same cluster: the attribute names every default the
    signature gave an input the override passes on, so that nothing but its signature would keep the override.
    ``use_cache`` is among them: generate() always passes it, so only a direct caller that leaves it out sees the
    default, which ``setdefault`` in the hook gives as the signature did."""
    have = {(p.override, p.key) for p in members}
    models = {p.override: p.model for p in members}
    out: list[Part] = []
    for override_id, model in models.items():
        a = findings[override_id].override.analysis
        passed = {o.key for o in a.outputs}
        out += [
            Part(override_id, model, p.name, idiom, argument=p.default or "")
            for p in _own_defaults(a, profile)
            if p.name in passed and (override_id, p.name) not in have
        ]
    return out


def signature_kept(a: BodyAnalysis, profile: MixinProfile, provided: Iterable[str] = ()) -> str:
    """Why the override's signature matters beyond its body (empty: it does not), so that a hook member is trimmed
    or reduced, never deleted: a default of its own for an input (``output_router_logits=False``; the mixin's own
    default for it is no reason), which applies wherever a caller leaves the input out, unless a hook now gives
    it (``provided``). Not for what generate() always passes (``use_cache``): only a composite asking its decoder
    without it sees that default, and verification runs each BERT-style decoder head inside one (a member it fails
    for is trimmed instead, ``trimmed``)."""
    skipped = {*GENERATE_PROVIDES, *provided}
    defaults = [f"{p.name}={p.default}" for p in _own_defaults(a, profile) if p.name not in skipped]
    return f"its default{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}" if defaults else ""


def signature_trims(report: HookReport, result: ScanResult, members: Iterable[str]) -> dict[str, Trim]:
    """Override id -> what a trim removes, for the ``members`` a hook deletes that can be trimmed
    instead (with the same checks as any trim: see :func:`member_change`): the override keeps its signature and
    whatever else it does. For a member whose deletion verification found to change what generate() does
    through the signature (it took ``inputs_embeds`` the old signature refused, or lost a default a composite's
    decoder relied on)."""
    chosen = set(members)
    hooked: dict[str, dict[str, Idiom]] = {}
    for cluster in report.applied():
        for member in cluster.members:
            if (
                member.applicable
                and member.change is Change.DELETE
                and member.override in chosen
                and cluster.idiom is not None
            ):
                hooked.setdefault(member.override, {}).update(dict.fromkeys(member.keys, cluster.idiom))
    findings = {f.override.id: f for f in result.findings}
    out: dict[str, Trim] = {}
    for oid, idioms in hooked.items():
        found = member_change(findings[OverrideId(oid)], idioms, result.profile, idioms, keep_signature=True)
        if found.change is Change.TRIM:
            out[oid] = Trim(found.removed, found.unnamed)
    return out


def _statements_of(a: BodyAnalysis, keys: set[str]) -> tuple[int, ...] | None:
    """The top-level statements that do nothing but set ``keys`` (None when one of them does more)."""

    def owner(line: int) -> TopLevel | None:
        return owner_of(a, line)

    chosen: dict[int, TopLevel] = {}
    for out in a.outputs:
        if out.key in keys:
            t = owner(out.line)
            if t is None:
                return None
            chosen[t.index] = t
    for t in chosen.values():
        others = [out for out in a.outputs if owner(out.line) is t and out.key not in keys]
        # a name it assigns that no other statement reads (a drop loop's ``key``) goes with it harmlessly
        read_elsewhere = {n for other in a.top_level if other is not t for n in other.reads}
        if others or t.returns or set(t.writes) & read_elsewhere or "super" in t.reads or not t.recognised:
            return None
    return tuple(sorted(chosen))

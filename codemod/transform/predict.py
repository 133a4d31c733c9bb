"""Repairs the scan's facts predict, so that the first plan is already the one verification would keep.

An override that returns a closed dict passes only the keys it lists. Where it leaves out an input that
callers hand ``generate()`` and that ``forward`` takes (a head mask, decoder embeddings, a decoder mask,
a decoder's cross-attention inputs),
the old code dropped the caller's value and the mixin forwards it: BART's family then crashes on
``decoder_inputs_embeds`` beside the decoder start ids, GPT-2 starts applying a head mask it ignored.
Verification finds each of these by running the model and repairs the reduction by removing the key
(``Repair.remove``). The index already knows both sides (the dict's keys, ``forward``'s parameters), so the
planner removes them up front, and a plain ``apply`` never makes that change at all. So with GPT-2's position
ids, which its override set to None whenever a caller gave them (``Repair.none_when_given``).
"""

from __future__ import annotations

from collections.abc import Iterable

from codemod.analyse import soundness
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.findings import Action, Finding
from codemod.contracts import ExtraHow, Repair

#: inputs a caller gives ``generate()`` that reach ``forward`` through the mixin as model kwargs, and that a
#: closed dict of 4.3x-4.45 often leaves out (the verification scenarios give each of them)
CALLER_INPUTS = (
    "head_mask",
    "decoder_head_mask",
    "cross_attn_head_mask",
    "decoder_inputs_embeds",
    "decoder_attention_mask",
    "encoder_hidden_states",
    "encoder_attention_mask",
)


#: what the mixin passes to ``forward`` as far as the caller's inputs go: every model kwarg, in each era
_MIXIN_REACH = soundness.Reach(True, frozenset())


def dropped_inputs(finding: Finding) -> tuple[str, ...]:
    """The caller inputs the old override's closed dict drops, its ``forward`` names, and its fallback passes on
    (the mixin every one; a parent's closed dict only those it lists, ``soundness.reach_of``). A ``forward`` the
    index did not find, or the keys only its ``**kwargs`` would take, predict nothing: whether the model reads
    them is its own code's business, which verification runs."""
    o = finding.override
    analysis = o.analysis
    forward = o.forward_params
    if analysis.forwards_kwargs or analysis.delegates_to is not None or forward is None:
        return ()  # every model kwarg not listed reaches the model already, or nothing says which would
    listed = set(analysis.output_values()) | {out.key for out in analysis.outputs}
    reach = soundness.reach_of(o, _MIXIN_REACH)
    return tuple(
        key
        for key in CALLER_INPUTS
        if key not in listed and key in forward and (reach.forwards_kwargs or key in reach.sets)
    )


def ignored_inputs(finding: Finding) -> tuple[str, ...]:
    """The caller inputs the old code replaced by None whenever given: GPT-2's position ids, built from the mask
    only when the caller gave none, and otherwise set to None (``else: position_ids = None``), where the mixin
    passes the caller's on. Where the reduction keeps the statements that compute them (``ExtraHow.COMPUTED``:
    CLVP's, which then replace them for its conditioning), those set them after ``super()`` as the old code did, a
    caller's None included: a None on top would undo the rest of them. A parent override in the mixin's place
    prepares positions its own way: nothing is predicted there."""
    fallback = finding.override.fallback
    if fallback is not None and fallback.kind is FallbackKind.PARENT:
        return ()
    analysis = finding.override.analysis
    ignores = any(r.behaviour == "position-ids-from-mask" and r.facet("passed") for r in analysis.recognised)
    computed = any(e.key == "position_ids" and e.how is ExtraHow.COMPUTED for e in finding.extras)
    return ("position_ids",) if ignores and not computed else ()


def predicted_repairs(findings: Iterable[Finding]) -> dict[str, Repair]:
    """By override id, what a deletion or reduction needs to prepare what the old code prepared: the keys to
    remove, and those to set to None when the caller gives them."""
    repairs: dict[str, Repair] = {}
    for finding in findings:
        if finding.action is Action.KEEP:
            continue
        repair = Repair(remove=dropped_inputs(finding), none_when_given=ignored_inputs(finding))
        if repair != Repair():
            repairs[finding.override.id] = repair
    return repairs

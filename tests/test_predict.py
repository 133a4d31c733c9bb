"""The repairs the scan's facts predict (``codemod.transform.predict``): a closed dict's dropped caller inputs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from codemod.analyse.classify import classify_override
from codemod.analyse.fallback import Fallback, FallbackKind
from codemod.analyse.findings import Action, Extra, Finding
from codemod.analyse.mixin import MixinProfile, hoisted_profile
from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.contracts import ExtraHow, Repair
from codemod.transform.apply import compute_changes, unified_diff
from codemod.transform.edits import EditKind
from codemod.transform.predict import dropped_inputs, ignored_inputs, predicted_repairs

from .test_classify import analyse_source, override

SEQ2SEQ_FORWARD = (
    "input_ids",
    "attention_mask",
    "decoder_input_ids",
    "decoder_attention_mask",
    "head_mask",
    "decoder_head_mask",
    "cross_attn_head_mask",
    "encoder_outputs",
    "past_key_values",
    "inputs_embeds",
    "decoder_inputs_embeds",
    "use_cache",
)

#: BART's 4.45 dict: every caller input but the decoder's embeddings
BART = """
def prepare_inputs_for_generation(
    self, decoder_input_ids, past_key_values=None, attention_mask=None, decoder_attention_mask=None,
    head_mask=None, decoder_head_mask=None, cross_attn_head_mask=None, use_cache=None, encoder_outputs=None, **kwargs
):
    if past_key_values is not None:
        decoder_input_ids = decoder_input_ids[:, -1:]
    return {
        "input_ids": None,
        "encoder_outputs": encoder_outputs,
        "past_key_values": past_key_values,
        "decoder_input_ids": decoder_input_ids,
        "attention_mask": attention_mask,
        "decoder_attention_mask": decoder_attention_mask,
        "head_mask": head_mask,
        "decoder_head_mask": decoder_head_mask,
        "cross_attn_head_mask": cross_attn_head_mask,
        "use_cache": use_cache,
    }
"""

#: a decoder-only closed dict (OPT's shape): no head mask listed
DECODER = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
    if past_key_values is not None:
        input_ids = input_ids[:, -1:]
    return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""

#: the same body, its dict open: every other model kwarg goes through
OPEN = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
    if past_key_values is not None:
        input_ids = input_ids[:, -1:]
    model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
    for key, value in kwargs.items():
        if key not in model_inputs:
            model_inputs[key] = value
    return model_inputs
"""

DECODER_FORWARD = ("input_ids", "attention_mask", "head_mask", "past_key_values", "inputs_embeds", "use_cache")

#: a BERT-style decoder's forward (``is_decoder=True``): cross-attention inputs besides the head mask, none of them
#: in its 4.45 dict (``input_ids``, ``attention_mask``, ``past_key_values``, ``use_cache``)
BERT_DECODER_FORWARD = (*DECODER_FORWARD, "encoder_hidden_states", "encoder_attention_mask", "labels")


@pytest.fixture(scope="module")
def hoisted() -> MixinProfile:
    return hoisted_profile()


@pytest.mark.parametrize(
    ("source", "forward", "dropped"),
    [
        pytest.param(BART, SEQ2SEQ_FORWARD, ("decoder_inputs_embeds",), id="bart-drops-decoder-embeddings"),
        pytest.param(DECODER, DECODER_FORWARD, ("head_mask",), id="decoder-drops-its-head-mask"),
        pytest.param(
            DECODER,
            BERT_DECODER_FORWARD,
            ("head_mask", "encoder_hidden_states", "encoder_attention_mask"),
            id="bert-style-decoder-drops-its-cross-attention-inputs",
        ),
    ],
)
def test_a_closed_dict_drops_the_caller_inputs_forward_takes(
    hoisted: MixinProfile, source: str, forward: tuple[str, ...] | None, dropped: tuple[str, ...]
) -> None:
    finding = classify_override(override(source, forward_params=forward), hoisted)
    assert finding.action is not Action.KEEP
    assert dropped_inputs(finding) == dropped
    assert predicted_repairs([finding]) == {finding.override.id: Repair(remove=dropped)}


@pytest.mark.parametrize(
    ("source", "forward"),
    [
        pytest.param(OPEN, DECODER_FORWARD, id="an-open-dict-passes-them-on-already"),
        pytest.param(DECODER, None, id="no-forward-found-verification-decides"),
        pytest.param(DECODER, ("input_ids", "**kwargs"), id="only-kwargs-would-take-them-verification-decides"),
        pytest.param(DECODER, ("input_ids", "attention_mask", "past_key_values"), id="forward-takes-none-of-them"),
        pytest.param(BART, tuple(k for k in SEQ2SEQ_FORWARD if k != "decoder_inputs_embeds"), id="every-one-listed"),
    ],
)
def test_no_repair_where_nothing_a_caller_gives_is_dropped(
    hoisted: MixinProfile, source: str, forward: tuple[str, ...] | None
) -> None:
    finding = classify_override(override(source, forward_params=forward), hoisted)
    assert dropped_inputs(finding) == ()
    assert predicted_repairs([finding]) == {}


def test_a_kept_override_needs_no_repair(hoisted: MixinProfile) -> None:
    """A finding the plan keeps is left as it is: there is no reduction to repair."""
    import dataclasses

    finding = classify_override(override(DECODER, forward_params=DECODER_FORWARD), hoisted)
    kept = dataclasses.replace(finding, action=Action.KEEP)
    assert dropped_inputs(kept) == ("head_mask",)
    assert predicted_repairs([kept]) == {}


#: GPT-2's 4.45 positions: built from the mask when the caller gave none, else None (a caller's too)
GPT2 = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
    if past_key_values:
        input_ids = input_ids[:, -1:]
    attention_mask = kwargs.get("attention_mask", None)
    position_ids = kwargs.get("position_ids", None)
    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
    else:
        position_ids = None
    return {
        "input_ids": input_ids,
        "past_key_values": past_key_values,
        "position_ids": position_ids,
        "attention_mask": attention_mask,
    }
"""

#: the same positions without the else: a caller's position ids are kept, as the mixin keeps them
GPT2_KEEPS_GIVEN = GPT2.replace("    else:\n        position_ids = None\n", "")

#: CLVP's 4.45 decoder: GPT-2's positions, then replaced for its conditioning once there is a cache. The reduction
#: keeps these statements after super() (position_ids computed), a caller's positions set to None included
CLVP = """
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, inputs_embeds=None, conditioning_embeds=None, **kwargs
):
    input_ids_length = input_ids.shape[-1]
    token_type_ids = kwargs.get("token_type_ids", None)
    if past_key_values:
        past_length = past_key_values[0][0].shape[2]
        if input_ids.shape[1] > past_length:
            remove_prefix_length = past_length
        else:
            remove_prefix_length = input_ids.shape[1] - 1
        input_ids = input_ids[:, remove_prefix_length:]
        if token_type_ids is not None:
            token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
    attention_mask = kwargs.get("attention_mask", None)
    position_ids = kwargs.get("position_ids", None)
    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -1].unsqueeze(-1)
    else:
        position_ids = None
    if conditioning_embeds is not None and past_key_values is not None:
        position_ids = torch.tensor([input_ids_length], dtype=torch.long, device=input_ids.device)
    if inputs_embeds is not None and past_key_values is None:
        model_inputs = {"inputs_embeds": inputs_embeds}
    else:
        model_inputs = {"input_ids": input_ids}
    model_inputs.update(
        {
            "past_key_values": past_key_values,
            "use_cache": kwargs.get("use_cache"),
            "position_ids": position_ids,
            "token_type_ids": token_type_ids,
        }
    )
    return model_inputs
"""


@pytest.mark.parametrize(
    ("source", "ignored"),
    [
        pytest.param(GPT2, ("position_ids",), id="else-none-ignores-a-callers-positions"),
        pytest.param(GPT2_KEEPS_GIVEN, (), id="no-else-a-callers-positions-go-through"),
    ],
)
def test_positions_the_old_code_set_to_none_when_given(
    hoisted: MixinProfile, source: str, ignored: tuple[str, ...]
) -> None:
    forward = ("input_ids", "attention_mask", "position_ids", "past_key_values", "use_cache")
    finding = classify_override(override(source, forward_params=forward), hoisted)
    assert ignored_inputs(finding) == ignored
    expected = {finding.override.id: Repair(none_when_given=ignored)} if ignored else {}
    assert predicted_repairs([finding]) == expected


def test_positions_the_kept_statements_compute_need_no_none(hoisted: MixinProfile) -> None:
    """CLVP ignores a caller's positions as GPT-2 does, but its reduction keeps the statements that compute them:
    a None set after those would replace the conditioning's positions whenever a caller gave some."""
    forward = ("input_ids", "attention_mask", "position_ids", "past_key_values", "use_cache")
    finding = classify_override(override(CLVP, forward_params=forward), hoisted)
    assert finding.action is Action.REDUCE
    assert Extra("position_ids", ExtraHow.COMPUTED) in finding.extras
    recognised = finding.override.analysis.recognised
    assert any(r.behaviour == "position-ids-from-mask" and r.facet("passed") for r in recognised)
    assert ignored_inputs(finding) == ()
    assert predicted_repairs([finding]) == {}


#: OPT's 4.45 shape in a model file of its own: a closed dict without the head mask its forward takes
OPT_FILE = """
from transformers import GenerationMixin, PreTrainedModel


class ToyForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, attention_mask=None, head_mask=None, past_key_values=None, use_cache=None):
        ...

    def prepare_inputs_for_generation(
        self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None, use_cache=None, **kwargs
    ):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]

        if inputs_embeds is not None and past_key_values is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}

        model_inputs.update(
            {
                "past_key_values": past_key_values,
                "use_cache": use_cache,
                "attention_mask": attention_mask,
            }
        )
        return model_inputs
"""


@pytest.mark.parametrize(
    ("forward", "kind", "pop"),
    [
        pytest.param("head_mask=None, ", EditKind.REDUCE, True, id="forward-takes-the-head-mask-reduced-to-drop-it"),
        # noop: a forward without the parameter never reads a caller's head mask, so nothing is predicted
        pytest.param("", EditKind.DELETE, False, id="forward-without-a-head-mask-deleted"),
    ],
)
def test_plain_apply_plans_the_predicted_repair(
    tmp_path: Path, codemod_cache: Path, forward: str, kind: EditKind, pop: bool
) -> None:
    """What ``codemod apply`` writes without --verify (``compute_changes``, nothing verifies it) already drops what
    the old dict dropped: the repair verification would have made is planned up front."""
    (tmp_path / "modeling_toy.py").write_text(OPT_FILE.lstrip("\n").replace("head_mask=None, ", forward))
    result = scan(resolve(tmp_path, with_git=False), use_cache=False, jobs=1)
    changes = compute_changes(result, hold_unproven=True)
    assert changes.plan.held == ()
    assert kind in {e.kind for e in changes.plan.edits() if e.override_id.endswith("::ToyForCausalLM")}
    assert ('model_inputs.pop("head_mask", None)' in unified_diff(changes)) is pop


#: a closed dict with nothing to slice, which a subclass may repeat word for word
PLAIN = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
    return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""

#: the same, its dict passing the caller's head mask on
PLAIN_WITH_HEAD_MASK = PLAIN.replace(
    '"attention_mask": attention_mask}', '"attention_mask": attention_mask, "head_mask": kwargs.get("head_mask")}'
)


def _under_parent(source: str, parent: str, forward: tuple[str, ...]) -> Finding:
    """``source``'s finding in a class whose parent overrides the method with ``parent`` (what a deletion exposes)."""
    o = override(source, forward_params=forward)
    body = analyse_source(parent.lstrip("\n"))
    fallback = Fallback(FallbackKind.PARENT, "ToyBase's override", "ToyBase", file=o.file, line=1, analysis=body)
    return classify_override(dataclasses.replace(o, fallback=fallback), hoisted_profile())


@pytest.mark.parametrize(
    ("parent", "dropped"),
    [
        # noop: the deletion exposes a closed dict that never passes a head mask either: a reduction to pop it
        # would only stand in for the deletion
        pytest.param(PLAIN, (), id="a-closed-parent-drops-it-too"),
        pytest.param(PLAIN_WITH_HEAD_MASK, ("head_mask",), id="a-closed-parent-passes-it-on"),
        pytest.param(OPEN, ("head_mask",), id="an-open-parent-passes-it-on"),
    ],
)
def test_a_dropped_input_is_predicted_only_where_the_parent_passes_it(parent: str, dropped: tuple[str, ...]) -> None:
    finding = _under_parent(PLAIN, parent, DECODER_FORWARD)
    assert finding.action is not Action.KEEP
    assert dropped_inputs(finding) == dropped


def test_positions_under_a_parent_are_the_parents_business() -> None:
    """The none-when-given repair answers the mixin, which passes a caller's positions on; a parent in its place
    prepares them its own way (GPT-2's subclasses under GPT-2's own override), and verification decides."""
    forward = ("input_ids", "attention_mask", "position_ids", "past_key_values", "use_cache")
    finding = _under_parent(GPT2, GPT2, forward)
    assert any(
        r.behaviour == "position-ids-from-mask" and r.facet("passed") for r in finding.override.analysis.recognised
    )
    assert ignored_inputs(finding) == ()

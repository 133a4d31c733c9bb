"""Tests for ``codemod.analyse.classify``: generic / kwargs-forwarding / bespoke, and the reasons why.

Overrides are built directly from small hand-written methods in the style of the real idioms (no
checkout is read), and classified against two mixin profiles:

- ``hoisted_profile()``: the generic implementation this tool ships (``rules/generic_mixin.py``),
  which has the shape of the 4.46 mixin;
- a stub mixin that only raises (transformers ≤ 4.45), against which nothing can be deleted.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

import pytest

from codemod.analyse.classify import Action, Category, Extra, Finding, classify_override, select
from codemod.analyse.index import Override
from codemod.analyse.mixin import Era, MixinProfile, hoisted_profile, profile_from_source
from codemod.analyse.recognise import analyse_source
from codemod.analyse.reduction import handles_inputs
from codemod.contracts import ExtraHow
from codemod.sources import FileKind

STUB_SOURCE = (
    "class GenerationMixin:\n"
    "    def prepare_inputs_for_generation(self, *a, **k):\n"
    "        raise NotImplementedError\n"
)


@pytest.fixture(scope="module")
def hoisted() -> MixinProfile:
    return hoisted_profile()


@pytest.fixture(scope="module")
def stub() -> MixinProfile:
    return profile_from_source(STUB_SOURCE, "x.py")


def override(
    source: str,
    *,
    model: str = "toy",
    class_name: str = "ToyForCausalLM",
    kind: FileKind = FileKind.MODELING,
    forward_params: tuple[str, ...] | None = None,
    attributes: tuple[tuple[str, str], ...] = (),
    overwritten: str | None = None,
) -> Override:
    source = textwrap.dedent(source).lstrip("\n")
    path = f"src/transformers/models/{model}/{'modular' if kind is FileKind.MODULAR else 'modeling'}_{model}.py"
    return Override(
        id=f"{path}::{class_name}",
        file=path,
        kind=kind,
        model=model,
        class_name=class_name,
        line=1,
        start_line=1,
        end_line=source.count("\n"),
        bases=("ToyPreTrainedModel", "GenerationMixin"),
        analysis=analyse_source(source),
        forward_params=forward_params,
        attributes=attributes,
        module_functions=(),
        copied_from=None,
        copy_group=None,
        generated_from=None,
        overwritten=overwritten,
        deprecated=False,
        in_library=True,  # a path below src/transformers: code of the release being migrated
    )


def texts(finding: Finding, kind: str) -> list[str]:
    return [r.text for r in finding.reasons if r.kind == kind]


def has(finding: Finding, kind: str, fragment: str) -> bool:
    return any(fragment in text for text in texts(finding, kind))


# -------------------------------------------------------------------------------------------- profiles


def test_hoisted_profile(hoisted: MixinProfile) -> None:
    assert hoisted.hoisted
    assert hoisted.era is Era.CACHE_POSITION
    assert hoisted.implements
    assert hoisted.source.startswith("rules/generic_mixin.py:")
    assert hoisted.unrecognised == ()
    assert {
        "slice-by-cache-position",
        "inputs-embeds-first-step",
        "position-ids-from-mask",
        "slice-with-ids",
        "static-cache-mask",
        "forward-kwargs",
        "synthesise-cache-position",
    } <= hoisted.behaviours
    assert "labels" in hoisted.never_forwarded


def test_stub_profile(stub: MixinProfile) -> None:
    assert stub.era is Era.STUB
    assert not stub.implements
    assert stub.behaviours == frozenset()
    assert stub.source == "x.py:2"


def test_a_file_without_the_mixin_is_of_unknown_era() -> None:
    profile = profile_from_source("class Other:\n    pass\n", "y.py")
    assert profile.era is Era.UNKNOWN
    assert profile.behaviours == frozenset()


# ------------------------------------------------------------------------------------------- the cases

LLAMA_LIKE = """
def prepare_inputs_for_generation(
    self,
    input_ids,
    past_key_values=None,
    attention_mask=None,
    inputs_embeds=None,
    cache_position=None,
    position_ids=None,
    use_cache=True,
    **kwargs,
):
    # slice to the tokens the cache has not seen
    if past_key_values is not None:
        if inputs_embeds is not None:
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:
            input_ids = input_ids[:, cache_position]

    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
            position_ids = position_ids.clone(memory_format=torch.contiguous_format)

    if inputs_embeds is not None and cache_position[0] == 0:
        model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
    else:
        model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}

    model_inputs.update(
        {
            "position_ids": position_ids,
            "cache_position": cache_position,
            "past_key_values": past_key_values,
            "use_cache": use_cache,
            "attention_mask": attention_mask,
        }
    )
    return model_inputs
"""

LLAMA_FORWARD = (
    "input_ids",
    "attention_mask",
    "position_ids",
    "past_key_values",
    "inputs_embeds",
    "use_cache",
    "cache_position",
)


def test_llama_like_is_generic(hoisted: MixinProfile) -> None:
    finding = classify_override(override(LLAMA_LIKE, forward_params=LLAMA_FORWARD), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)
    assert finding.extras == ()
    assert texts(finding, "unrecognised") == []
    behaviours = [(r.rule, r.line) for r in finding.reasons if r.kind == "behaviour"]
    assert behaviours == [("PI101", 14), ("PI111", 19), ("PI121", 26)]
    # the only difference: a closed dict drops keyword arguments the mixin would forward
    assert [d.text for d in finding.differences] == [
        "returns a closed dict: other model kwargs are dropped, the mixin forwards them"
    ]


def test_against_a_stub_nothing_is_generic(stub: MixinProfile) -> None:
    finding = classify_override(override(LLAMA_LIKE, forward_params=LLAMA_FORWARD), stub)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
    assert has(finding, "bespoke", "the mixin implements nothing to compare with")
    # each standard behaviour is reported as missing from the stub
    assert has(finding, "bespoke", "slice-by-cache-position")
    assert has(finding, "bespoke", "position-ids-from-mask")
    assert has(finding, "bespoke", "inputs-embeds-first-step")


GPT2_LIKE = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, inputs_embeds=None, **kwargs):
    token_type_ids = kwargs.get("token_type_ids", None)
    # drop the tokens the cache has seen
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
            position_ids = position_ids[:, -input_ids.shape[1] :]
    else:
        position_ids = None

    if inputs_embeds is not None and past_key_values is None:
        model_inputs = {"inputs_embeds": inputs_embeds}
    else:
        model_inputs = {"input_ids": input_ids}

    model_inputs.update(
        {
            "past_key_values": past_key_values,
            "use_cache": kwargs.get("use_cache"),
            "position_ids": position_ids,
            "attention_mask": attention_mask,
            "token_type_ids": token_type_ids,
        }
    )
    return model_inputs
"""


def test_gpt2_like_is_generic_with_differences(hoisted: MixinProfile) -> None:
    forward = ("input_ids", "past_key_values", "attention_mask", "token_type_ids", "position_ids", "inputs_embeds")
    finding = classify_override(override(GPT2_LIKE, forward_params=forward), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)
    assert finding.extras == ()
    assert {r.rule for r in finding.reasons if r.kind == "behaviour"} == {"PI102", "PI141", "PI111", "PI121"}
    differences = [d.text for d in finding.differences]
    assert len(differences) == 3, differences
    assert any("drops position_ids passed without an attention mask" in d for d in differences)
    assert any("tells the first step by an absent cache" in d for d in differences)
    assert any("returns a closed dict" in d for d in differences)
    # differences point at the statements they come from
    assert {d.line for d in finding.differences if "absent cache" in d.text} == {25}


LLAVA_LIKE = """
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, inputs_embeds=None, pixel_values=None, attention_mask=None,
    cache_position=None, **kwargs
):
    if past_key_values is not None:
        if inputs_embeds is not None:
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:
            input_ids = input_ids[:, cache_position]

    if inputs_embeds is not None and cache_position[0] == 0:
        model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
    else:
        model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}

    # the image only goes in with the prompt
    if cache_position[0] == 0:
        model_inputs["pixel_values"] = pixel_values

    model_inputs.update(
        {"past_key_values": past_key_values, "attention_mask": attention_mask, "cache_position": cache_position}
    )
    for key, value in kwargs.items():
        if key not in model_inputs:
            model_inputs[key] = value
    return model_inputs
"""


def test_llava_like_first_step_pixels_is_kwargs_forwarding(hoisted: MixinProfile) -> None:
    forward = ("input_ids", "pixel_values", "attention_mask", "past_key_values", "inputs_embeds", "cache_position")
    finding = classify_override(override(LLAVA_LIKE, model="toyvl", forward_params=forward), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.REDUCE)
    assert finding.extras == (Extra(key="pixel_values", how="first-step", source="pixel_values"),)
    (extra,) = [r for r in finding.reasons if r.kind == "extra"]
    assert extra.line == 18
    assert finding.differences == ()


MAMBA_LIKE = """
def prepare_inputs_for_generation(
    self, input_ids, inputs_embeds=None, use_cache=None, cache_params=None, cache_position=None,
    attention_mask=None, **kwargs
):
    if use_cache:
        # generate passes cache_position
        if cache_position is None:
            raise ValueError("cache_position is needed with use_cache=True")
        if cache_position[0] > 0:
            input_ids = input_ids[:, -1].unsqueeze(-1)
            if attention_mask is not None:
                attention_mask = None
        else:
            cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)

    if inputs_embeds is not None and cache_params is None:
        model_inputs = {"inputs_embeds": inputs_embeds}
    else:
        model_inputs = {"input_ids": input_ids.contiguous()}

    model_inputs.update(
        {
            "cache_params": cache_params,
            "use_cache": use_cache,
            "cache_position": cache_position,
            "attention_mask": attention_mask,
        }
    )
    return model_inputs
"""


def test_mamba_like_state_space_cache_is_bespoke(hoisted: MixinProfile) -> None:
    finding = classify_override(override(MAMBA_LIKE, model="toymamba"), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
    assert [r.rule for r in finding.reasons if r.kind == "bespoke" and r.rule] == ["PI171"]
    assert has(finding, "bespoke", "passes its cache as 'cache_params'")


def test_an_unrecognised_statement_makes_it_bespoke_with_its_line(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        input_ids = self.remap_vocabulary(input_ids)
        return {"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}
    """
    finding = classify_override(override(source), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
    unrecognised = [(r.text, r.line) for r in finding.reasons if r.kind == "unrecognised"]
    assert unrecognised == [("input_ids = self.remap_vocabulary(input_ids)", 4)]


def test_a_multi_line_unrecognised_statement_is_shortened(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        model_inputs = {"input_ids": input_ids, **kwargs}
        if self.config.flag:
            model_inputs["input_ids"] = input_ids + 1
        return model_inputs
    """
    finding = classify_override(override(source), hoisted)
    assert [(r.text, r.line) for r in finding.reasons if r.kind == "unrecognised"] == [("if self.config.flag: …", 3)]


def test_model_specific_statements_at_the_start_are_kept_in_front_of_super(hoisted: MixinProfile) -> None:
    """The Phi-3 shape: its own input handling first, then only what the mixin does. The handling is
    model-specific (it resets the cache): bespoke, and reduced all the same, the statements in front of super()."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if self.config.flag:
            past_key_values = None
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask, **kwargs}
    """
    finding = classify_override(override(source), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert Extra("", "keep-statements", "0") in finding.extras
    assert has(finding, "note", "kept as is in front of super(): if self.config.flag: …")
    assert has(
        finding, "note", "bespoke: its own input handling, kept as it is in front of super(), is model-specific"
    )


def test_a_dummy_token_kept_in_front_of_super_is_bespoke(hoisted: MixinProfile) -> None:
    """The masked LMs: a pad token appended to the ids (and a zero to the mask) on every step."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **model_kwargs):
        if self.config.pad_token_id is None:
            raise ValueError("The PAD token should be defined for generation")
        attention_mask = torch.cat([attention_mask, attention_mask.new_zeros((attention_mask.shape[0], 1))], dim=-1)
        dummy_token = torch.full((input_ids.shape[0], 1), self.config.pad_token_id, dtype=torch.long)
        input_ids = torch.cat([input_ids, dummy_token], dim=1)
        return {"input_ids": input_ids, "attention_mask": attention_mask}
    """
    finding = classify_override(override(source, forward_params=SIMPLE_FORWARD), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert Extra("", "keep-statements", "0,1,2,3") in finding.extras


def test_a_guard_kept_in_front_of_super_leaves_it_generic(hoisted: MixinProfile) -> None:
    """ProphetNet: the encoder-decoder boilerplate behind an assert. The assert refuses a call generate()
    never makes and prepares nothing: generic; the reduction keeps it in front of super()."""
    source = """
    def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, attention_mask=None,
                                      use_cache=None, encoder_outputs=None, **kwargs):
        assert encoder_outputs is not None, "`encoder_outputs` have to be passed for generation."
        if past_key_values:
            decoder_input_ids = decoder_input_ids[:, -1:]
        return {
            "input_ids": None,
            "encoder_outputs": encoder_outputs,
            "past_key_values": past_key_values,
            "decoder_input_ids": decoder_input_ids,
            "attention_mask": attention_mask,
            "use_cache": use_cache,
        }
    """
    finding = classify_override(override(source, forward_params=("input_ids", "decoder_input_ids")), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.REDUCE)
    assert finding.extras == (Extra("", "keep-statements", "0"),)


@pytest.mark.parametrize(
    ("statements", "own"),
    [
        pytest.param("assert encoder_outputs is not None", False, id="assert"),
        pytest.param('if self.config.pad_token_id is None:\n    raise ValueError("no pad")', False, id="if-raise"),
        pytest.param(
            "legacy = (input_ids == self.config.image_token_index).sum() < 3", False, id="local-for-a-condition"
        ),
        pytest.param(
            'if legacy or cache_position[0] == 0:\n    model_inputs["pixel_values"] = pixel_values',
            False,
            id="caller-value-on-some-steps",
        ),
        pytest.param('model_inputs["do_marginalize"] = True', False, id="constant"),
        pytest.param("input_ids = input_ids.int()", True, id="rebinds-an-input"),
        pytest.param(
            "if delay_pattern_mask is None:\n    input_ids, delay_pattern_mask = self.build(input_ids)",
            True,
            id="unpacks-into-an-input",
        ),
        pytest.param('model_inputs["position_ids"] += 1', True, id="shifts-position-ids"),
        pytest.param('model_inputs["attention_mask"] = None', True, id="a-core-key"),
        pytest.param(
            'model_inputs["image_mask"] = torch.cat([image_mask, pad], dim=1)', True, id="computes-an-extra-key"
        ),
        pytest.param('model_inputs.update({"inputs_embeds": merged, "input_ids": None})', True, id="update"),
        pytest.param('model_inputs.pop("input_ids")', True, id="pops-a-core-key"),
        pytest.param("self.cached = input_ids", True, id="an-attribute"),
    ],
)
def test_which_kept_statements_are_own_input_handling(statements: str, own: bool) -> None:
    params = frozenset(
        {
            "input_ids",
            "pixel_values",
            "delay_pattern_mask",
            "cache_position",
            "image_mask",
            "encoder_outputs",
            "attention_mask",
        }
    )
    assert handles_inputs(statements, params) is own


def test_a_non_standard_cache_key_is_bespoke(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if past_key_values:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "mems": past_key_values, **kwargs}
    """
    finding = classify_override(override(source, model="toyxl"), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
    (reason,) = [r for r in finding.reasons if r.kind == "bespoke"]
    assert reason.text == "passes its cache as 'mems', a key the mixin does not use"
    assert reason.line == 4


SUPER_WITH_KWARG = """
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, use_cache=None, is_first_iteration=False, **kwargs
):
    # Overwritten -- the logits of every position are needed
    kwargs["logits_to_keep"] = self.config.num_logits_to_keep
    model_inputs = super().prepare_inputs_for_generation(
        input_ids,
        past_key_values=past_key_values,
        use_cache=use_cache,
        is_first_iteration=is_first_iteration,
        **kwargs,
    )
    return model_inputs
"""


def test_a_super_call_with_a_kwargs_tweak_is_already_reduced(hoisted: MixinProfile) -> None:
    finding = classify_override(override(SUPER_WITH_KWARG, overwritten="the logits of every position"), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.KEEP)
    assert finding.extras == (Extra(key="logits_to_keep", how="constant", source="self.config.num_logits_to_keep"),)
    assert has(finding, "note", "already reduced")
    assert has(finding, "evidence", "Overwritten -- the logits of every position")
    assert finding.differences == ()  # the mixin does the rest itself


def test_a_super_call_that_drops_a_key(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)
        # the forward builds its own token types
        model_inputs.pop("token_type_ids", None)
        return model_inputs
    """
    finding = classify_override(override(source), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.KEEP)
    assert finding.extras == (Extra(key="token_type_ids", how="drop", source=""),)


def test_a_super_call_withholding_a_parameter(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, pixel_values=None, **kwargs):
        return super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)
    """
    finding = classify_override(override(source), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.KEEP)
    assert finding.extras == (Extra(key="pixel_values", how="drop", source=""),)
    assert has(finding, "extra", "pixel_values")


def test_a_sub_model_delegation_is_a_difference(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        return self.language_model.prepare_inputs_for_generation(
            input_ids, past_key_values=past_key_values, attention_mask=attention_mask, **kwargs
        )
    """
    finding = classify_override(override(source), hoisted)
    # a reduction asks super() instead of the sub-model and keeps the rest
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.REDUCE)
    assert Extra("", "swap-delegate", "self.language_model") in finding.extras
    assert any("self.language_model.prepare_inputs_for_generation" in d.text for d in finding.differences)


def test_a_delegation_to_a_sub_model_whose_own_override_does_model_specific_work_is_kept(
    hoisted: MixinProfile,
) -> None:
    """Kosmos-2.5 (5.23) asks ``self.text_model``, a Kosmos2_5TextForCausalLM whose own override drops the image
    inputs after the first step and grows their mask: super() would skip that, and the verifier, with no image
    inputs for the model, would not see it. The index names such a sub-model (``Override.delegate_work``)."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        return self.text_model.prepare_inputs_for_generation(
            input_ids, past_key_values=past_key_values, attention_mask=attention_mask, **kwargs
        )
    """
    o = dataclasses.replace(override(source), delegate_work=("ToyTextForCausalLM", "if past_key_values is not None:"))
    finding = classify_override(o, hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
    assert has(finding, "bespoke", "self.text_model (ToyTextForCausalLM), whose own override does model-specific work")
    assert not any(e.how == "swap-delegate" for e in finding.extras)


def test_the_index_names_a_sub_model_built_from_a_class_of_the_file_with_its_own_work() -> None:
    from codemod.analyse.index import _own_work, _submodels, file_facts

    text = textwrap.dedent("""
        class ToyTextForCausalLM(ToyPreTrainedModel):
            def prepare_inputs_for_generation(self, input_ids, image_embeds=None, **kwargs):
                model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
                model_inputs["image_embeds"] = torch.cat([image_embeds, image_embeds], dim=1)
                return model_inputs


        class ToyForConditionalGeneration(ToyPreTrainedModel):
            def __init__(self, config):
                super().__init__(config)
                self.text_model = ToyTextForCausalLM(config.text_config)
                self.vision = AutoModel.from_config(config.vision_config)

            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return self.text_model.prepare_inputs_for_generation(input_ids, **kwargs)
    """)
    facts = file_facts("src/transformers/models/toy/modeling_toy.py", text, FileKind.MODELING)
    [text_lm, composite] = facts.classes
    # only a sub-model built from a class by name is known; an Auto class may be anything
    assert composite.submodels == (("text_model", "ToyTextForCausalLM"),) and text_lm.submodels == ()
    assert _own_work(facts.overrides[0].analysis) is not None
    [no_init] = ast.parse("class A:\n    pass\n").body
    assert isinstance(no_init, ast.ClassDef) and _submodels(no_init) == ()


#: an override that cuts its ids by the cache's own length, as 4.45's Musicgen-Melody composite (and remote code
#: written before cache_position) does
CUT_BY_THE_CACHE = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
    if past_key_values is not None:
        input_ids = input_ids[:, -1:]
    return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""


@pytest.mark.parametrize(("stale", "action"), [(False, Action.DELETE), (True, Action.KEEP)])
def test_a_class_that_never_moves_cache_position_on_keeps_its_own_cut(
    hoisted: MixinProfile, stale: bool, action: Action
) -> None:
    """4.45's Musicgen-Melody composite replaces ``_update_model_kwargs_for_generation`` without calling super():
    generate()'s ``cache_position`` stays the first step's, and the mixin, slicing by it, fed the composite its pad
    column at step 1 where the override's cut by the cache fed the new token (verification reverted the deletion).
    The scan now says so and keeps the override (``Override.stale_cache_position``)."""
    o = dataclasses.replace(
        override(CUT_BY_THE_CACHE, forward_params=("input_ids", "past_key_values", "attention_mask", "use_cache")),
        stale_cache_position=stale,
    )
    finding = classify_override(o, hoisted)
    assert finding.action is action
    assert has(finding, "bespoke", "never moves cache_position on") is stale


#: 4.45's Musicgen-Melody composite's cut: the past length read off the legacy tuple cache, ``cache_position`` unread
CUT_BY_PAST_LENGTH = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
    if past_key_values is not None:
        past_length = past_key_values[0][0].shape[2]
        if input_ids.shape[1] > past_length:
            remove_prefix_length = past_length
        else:
            remove_prefix_length = input_ids.shape[1] - 1
        input_ids = input_ids[:, remove_prefix_length:]
    return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""


def test_a_stale_cache_position_the_override_never_read_is_withheld_from_super(hoisted: MixinProfile) -> None:
    """Where the override counts the past length off the legacy cache, the mixin the stub era gets does the same when
    it is given no ``cache_position`` (``cache-position-from-cache``): the reduction pops the stale one from
    ``**kwargs`` instead of keeping its own cut (Musicgen-Melody's composite)."""
    from codemod.transform.plan import reduce_override

    o = dataclasses.replace(
        override(CUT_BY_PAST_LENGTH, forward_params=("input_ids", "past_key_values", "attention_mask", "use_cache")),
        stale_cache_position=True,
    )
    finding = classify_override(o, hoisted)
    assert finding.action is Action.REDUCE and not has(finding, "bespoke", "never moves cache_position on")
    assert Extra("cache_position", ExtraHow.WITHHELD) in finding.extras
    assert has(finding, "extra", "cache_position withheld from super()")
    reduction = reduce_override(o, finding.extras)
    assert reduction is not None
    lines = reduction.body.splitlines()
    assert lines[0] == 'kwargs.pop("cache_position", None)'
    assert lines[1].startswith("model_inputs = super().prepare_inputs_for_generation(input_ids")
    ast.parse(reduction.body)


@pytest.mark.parametrize(
    ("source", "why"),
    [
        pytest.param(
            CUT_BY_PAST_LENGTH.replace(", **kwargs):", ", cache_position=None, **kwargs):"),
            "names cache_position: the mixin would get it by name",
            id="named-parameter",
        ),
        pytest.param(CUT_BY_PAST_LENGTH.replace(", **kwargs):", "):"), "no **kwargs to pop it from", id="no-kwargs"),
        pytest.param(
            CUT_BY_PAST_LENGTH.replace(
                "past_length = past_key_values[0][0].shape[2]", "past_length = past_key_values.get_seq_length()"
            ),
            "counts from a Cache object, which the mixin does not count from",
            id="cache-object",
        ),
        pytest.param(CUT_BY_THE_CACHE, "keeps the last token only, which the mixin's count does not", id="last-token"),
    ],
)
def test_a_stale_cache_position_is_withheld_only_where_the_mixin_counts_alike(
    hoisted: MixinProfile, source: str, why: str
) -> None:
    """Noop: the override keeps its own cut, bespoke, as before."""
    o = dataclasses.replace(
        override(source, forward_params=("input_ids", "past_key_values", "attention_mask", "use_cache")),
        stale_cache_position=True,
    )
    finding = classify_override(o, hoisted)
    assert not any(e.how is ExtraHow.WITHHELD for e in finding.extras), why
    assert has(finding, "bespoke", "never moves cache_position on"), why


def test_a_stale_cache_position_is_kept_against_a_mixin_that_never_counts_from_the_cache() -> None:
    """Noop: a release's own mixin (4.46 on) slices by ``cache_position`` whatever the cache; it derives none."""
    from tests.conftest import FIXTURES

    mixin = profile_from_source(
        (FIXTURES / "mini_checkout/src/transformers/generation/utils.py").read_text(), "generation/utils.py"
    )
    assert "cache-position-from-cache" not in mixin.behaviours
    o = dataclasses.replace(
        override(CUT_BY_PAST_LENGTH, forward_params=("input_ids", "past_key_values", "attention_mask", "use_cache")),
        stale_cache_position=True,
    )
    finding = classify_override(o, mixin)
    assert not any(e.how is ExtraHow.WITHHELD for e in finding.extras)


@pytest.mark.parametrize(
    ("update", "advances"),
    [
        pytest.param((), None, id="none-defined"),
        pytest.param(
            (
                "model_kwargs = super()._update_model_kwargs_for_generation(outputs, model_kwargs, **kwargs)",
                "model_kwargs['rope_deltas'] = outputs.rope_deltas",
            ),
            True,
            id="calls-super",
        ),
        pytest.param(
            ("model_kwargs['cache_position'] = model_kwargs['cache_position'][-1:] + 1",), True, id="moves-it-itself"
        ),
        pytest.param(("model_kwargs['past_key_values'] = outputs.past_key_values",), False, id="neither"),
    ],
)
def test_the_index_says_whether_a_class_moves_cache_position_on(
    update: tuple[str, ...], advances: bool | None
) -> None:
    from codemod.analyse.index import file_facts

    lines = ["class ToyForCausalLM(ToyPreTrainedModel):", "    x = 1"]
    if update:
        lines += [
            "    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, **kwargs):",
            *(f"        {line}" for line in update),
            "        return model_kwargs",
        ]
    facts = file_facts("src/transformers/models/toy/modeling_toy.py", "\n".join(lines) + "\n", FileKind.MODELING)
    assert facts.error is None, facts.error
    assert facts.symbols is not None
    toy = facts.symbols.class_named("ToyForCausalLM")
    assert toy is not None and toy.advances_cache_position is advances


#: the llava family's shape in 4.45: the language model's preparation, pixel inputs decided around it
LLAVA_DELEGATING = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, inputs_embeds=None, pixel_values=None,
                                  attention_mask=None, cache_position=None, **kwargs):
    legacy_processing = (input_ids == self.config.image_token_index).sum(1).max() < self.config.image_seq_length
    model_inputs = self.language_model.prepare_inputs_for_generation(
        input_ids, past_key_values=past_key_values, inputs_embeds=inputs_embeds, attention_mask=attention_mask,
        cache_position=cache_position, **kwargs,
    )
    if legacy_processing or cache_position[0] == 0:
        model_inputs["pixel_values"] = pixel_values
    {tail}
    return model_inputs
"""


def test_a_delegation_plus_pixel_values_on_some_steps_is_kwargs_forwarding(hoisted: MixinProfile) -> None:
    """Llava: which steps get pixel_values is the model's own condition (a legacy prompt gets them on every
    step), but the value is the caller's, and the sub-model prepares the rest: kwargs-forwarding."""
    source = LLAVA_DELEGATING.format(tail="")
    finding = classify_override(override(source, forward_params=(*SIMPLE_FORWARD, "pixel_values")), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.REDUCE)
    # what the sub-model's dict leaves out is the sub-model's business: no difference of its own in the flow
    assert not has(finding, "note", "bespoke")


def test_a_delegation_with_its_own_position_handling_is_bespoke(hoisted: MixinProfile) -> None:
    """PaliGemma: 1-indexed position_ids after the sub-model's preparation: model-specific, kept around the
    swapped call (the action stays reduce)."""
    source = LLAVA_DELEGATING.format(
        tail='if model_inputs.get("position_ids") is not None:\n        model_inputs["position_ids"] += 1'
    )
    finding = classify_override(override(source, forward_params=(*SIMPLE_FORWARD, "pixel_values")), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert has(finding, "note", "bespoke: its own input handling, kept as it is around super(), is model-specific")


SIMPLE_GENERIC = """
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None, cache_position=None, **kwargs
):
    if past_key_values is not None:
        if inputs_embeds is not None:
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:
            input_ids = input_ids[:, cache_position]
    if inputs_embeds is not None and cache_position[0] == 0:
        model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
    else:
        model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
    model_inputs.update(
        {"past_key_values": past_key_values, "attention_mask": attention_mask, "cache_position": cache_position}
    )
    for key, value in kwargs.items():
        if key not in model_inputs:
            model_inputs[key] = value
    return model_inputs
"""
SIMPLE_FORWARD = ("input_ids", "attention_mask", "past_key_values", "inputs_embeds", "cache_position")


def test_generic_without_differences(hoisted: MixinProfile) -> None:
    finding = classify_override(override(SIMPLE_GENERIC, forward_params=SIMPLE_FORWARD), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)
    assert finding.differences == ()
    assert finding.extras == ()


def test_overwritten_keeps_a_generic_override(hoisted: MixinProfile) -> None:
    finding = classify_override(
        override(SIMPLE_GENERIC, forward_params=SIMPLE_FORWARD, overwritten="slicing is special"), hoisted
    )
    assert (finding.category, finding.action) == (Category.GENERIC, Action.KEEP)
    assert has(finding, "evidence", "marked '# Overwritten -- slicing is special'")
    assert has(finding, "note", "maintainers marked it overwritten")


def test_forward_accepting_position_ids_that_the_override_omits(hoisted: MixinProfile) -> None:
    """Git, CTRL, the BERT-style heads: the mixin would pass position_ids built from the mask, the override
    prepares fewer inputs than that in the standard flow: not generic. The deletion stays planned (the
    difference is all it has of its own), and verification decides."""
    finding = classify_override(override(SIMPLE_GENERIC, forward_params=(*SIMPLE_FORWARD, "position_ids")), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.DELETE)
    assert [d.text for d in finding.differences] == [
        "forward accepts position_ids: the mixin builds them from the attention mask, this override never passes them"
    ]
    assert has(
        finding, "note", "bespoke, not generic: in the standard generate flow it prepares other inputs than the mixin"
    )


#: 4.44's llava slicing as 4.45's Qwen2-Audio keeps it: a branch that would patch the mask from **kwargs (never: the
#: mask is a parameter), a third branch for short ids holding the media token, the crop to what the cache holds
MEDIA_TOKEN_SLICING = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, inputs_embeds=None, input_features=None,
                                  attention_mask=None, **kwargs):
    if past_key_values is not None:
        if isinstance(past_key_values, Cache):
            cache_length = past_key_values.get_seq_length()
            past_length = past_key_values.seen_tokens
        else:
            cache_length = past_length = past_key_values[0][0].shape[2]
        if input_features is not None and kwargs.get("attention_mask") is not None:
            attention_mask = torch.cat([kwargs["attention_mask"], kwargs["attention_mask"][:, -1:]], dim=-1)
        if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
            input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
        elif past_length < input_ids.shape[1]:
            input_ids = input_ids[:, past_length:]
        elif self.config.media_token_index in input_ids:
            input_ids = input_ids[:, input_ids.shape[1] - 1 :]
        if cache_length < past_length and attention_mask is not None:
            attention_mask = attention_mask[:, -(cache_length + input_ids.shape[1]) :]
    position_ids = kwargs.get("position_ids", None)
    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
    if inputs_embeds is not None and past_key_values is None:
        model_inputs = {"inputs_embeds": inputs_embeds}
    else:
        model_inputs = {"input_ids": input_ids}
    model_inputs.update({"position_ids": position_ids, "past_key_values": past_key_values,
                         "use_cache": kwargs.get("use_cache"), "attention_mask": attention_mask,
                         "input_features": input_features})
    return model_inputs
"""


def test_the_llava_slicing_around_a_media_token_is_the_mixins(hoisted: MixinProfile) -> None:
    """The branch patching the mask never runs, the third branch only cuts a caller's short ids (a difference outside
    the standard flow: generate()'s mask is never shorter than the ids), the crop is for bounded caches: generic, its
    deletion planned (verification judges it, with the model's audio)."""
    forward = (
        "input_ids",
        "input_features",
        "attention_mask",
        "position_ids",
        "past_key_values",
        "inputs_embeds",
        "use_cache",
    )
    finding = classify_override(override(MEDIA_TOKEN_SLICING, forward_params=forward), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)
    assert has(
        finding,
        "behaviour",
        "the last id of ids no longer than the past length that hold self.config.media_token_index",
    )
    assert has(
        finding, "difference", "cuts ids no longer than the past length that hold self.config.media_token_index"
    )
    assert texts(finding, "unrecognised") == []
    # the patching branch made live (it reads a keyword no parameter takes): the override is the model's own
    live = MEDIA_TOKEN_SLICING.replace(
        'kwargs.get("attention_mask") is not None', 'kwargs.get("merged_mask") is not None'
    )
    assert classify_override(override(live, forward_params=forward), hoisted).category is Category.BESPOKE
    # so it is where the mask is a positional-only parameter: a caller's attention_mask= keyword reaches **kwargs
    positional = MEDIA_TOKEN_SLICING.replace("attention_mask=None, **kwargs", "attention_mask=None, /, **kwargs")
    assert positional != MEDIA_TOKEN_SLICING
    assert classify_override(override(positional, forward_params=forward), hoisted).category is Category.BESPOKE


def test_the_ids_unsliced_with_a_cache_are_not_generic(hoisted: MixinProfile) -> None:
    """FSMT: the decoder ids are passed whole although a cache is (its decoder slices them itself)."""
    source = """
    def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, attention_mask=None,
                                      use_cache=None, encoder_outputs=None, **kwargs):
        return {
            "input_ids": None,
            "encoder_outputs": encoder_outputs,
            "past_key_values": past_key_values,
            "decoder_input_ids": decoder_input_ids,
            "attention_mask": attention_mask,
            "use_cache": use_cache,
        }
    """
    finding = classify_override(override(source, forward_params=("input_ids", "decoder_input_ids")), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.DELETE)
    assert has(finding, "difference", "passes the ids unsliced although it passes a cache")


def test_position_ids_only_without_alibi_are_not_generic(hoisted: MixinProfile) -> None:
    """Falcon: an ALiBi configuration deliberately gets no position_ids."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None,
                                      inputs_embeds=None, cache_position=None, **kwargs):
        if past_key_values is not None:
            if inputs_embeds is not None:
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        if not self.transformer.use_alibi and attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
        model_inputs.update({"position_ids": position_ids, "past_key_values": past_key_values,
                             "attention_mask": attention_mask, "cache_position": cache_position})
        return model_inputs
    """
    finding = classify_override(override(source, forward_params=(*SIMPLE_FORWARD, "position_ids")), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.DELETE)
    assert has(finding, "difference", "builds position_ids only without ALiBi")


def test_extra_keys_on_top_of_what_omits_position_ids_are_bespoke_and_reduced(hoisted: MixinProfile) -> None:
    """BLIP's text decoder: the BERT-style body plus is_decoder=True. The reduction (super() plus is_decoder)
    stays; the category is bespoke, for the position_ids it never passed."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "attention_mask": attention_mask, "past_key_values": past_key_values,
                "is_decoder": True}
    """
    finding = classify_override(
        override(source, forward_params=(*SIMPLE_FORWARD, "position_ids", "is_decoder")), hoisted
    )
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert Extra("is_decoder", "constant", "True") in finding.extras


def test_forward_not_found_may_receive_position_ids(hoisted: MixinProfile) -> None:
    finding = classify_override(override(SIMPLE_GENERIC, forward_params=None), hoisted)
    assert [d.text for d in finding.differences] == [
        "may receive position_ids from the mixin (forward not found in this file)"
    ]


def test_static_cache_support_without_a_4d_mask(hoisted: MixinProfile) -> None:
    finding = classify_override(
        override(SIMPLE_GENERIC, forward_params=SIMPLE_FORWARD, attributes=(("_supports_static_cache", "True"),)),
        hoisted,
    )
    assert any("with a static cache the mixin builds a 4D attention mask" in d.text for d in finding.differences)


def test_slicing_to_the_last_token_is_a_difference(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if past_key_values:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}
    """
    finding = classify_override(override(source, forward_params=("input_ids", "past_key_values")), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)
    (difference,) = finding.differences
    assert "assisted decoding" in difference.text
    assert difference.line == 3


def test_unsliced_ids_with_a_cache(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        return {"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}
    """
    finding = classify_override(override(source, forward_params=("input_ids", "past_key_values")), hoisted)
    assert any("passes the ids unsliced although it passes a cache" in d.text for d in finding.differences)


def test_ignoring_inputs_embeds_and_cache_position(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if past_key_values:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
    """
    forward = ("input_ids", "past_key_values", "attention_mask", "inputs_embeds", "cache_position")
    finding = classify_override(
        override(source, forward_params=forward, attributes=(("_supports_cache_class", "True"),)), hoisted
    )
    assert finding.category is Category.GENERIC
    differences = [d.text for d in finding.differences]
    assert "ignores inputs_embeds; the mixin feeds them on the first step" in differences
    assert "the mixin also passes cache_position (the model supports Cache classes)" in differences


def test_an_input_sliced_like_the_ids_that_the_mixin_does_not_slice(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, mm_token_type_ids=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
            if mm_token_type_ids is not None:
                mm_token_type_ids = mm_token_type_ids[:, -input_ids.shape[1] :]
        return {
            "input_ids": input_ids,
            "past_key_values": past_key_values,
            "mm_token_type_ids": mm_token_type_ids,
            **kwargs,
        }
    """
    forward = ("input_ids", "past_key_values", "mm_token_type_ids")
    finding = classify_override(override(source, forward_params=forward), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.REDUCE)
    assert finding.extras == (Extra("mm_token_type_ids", "sliced", "mm_token_type_ids"),)


def test_a_sliced_input_under_another_key_is_bespoke(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, token_type_ids=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
            if token_type_ids is not None:
                token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "segment_ids": token_type_ids, **kwargs}
    """
    finding = classify_override(override(source, forward_params=("input_ids", "segment_ids")), hoisted)
    assert finding.category is Category.BESPOKE
    assert has(finding, "bespoke", "segment_ids comes from the sliced token_type_ids")


def test_a_method_returning_none_is_not_generic(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return None
    """
    finding = classify_override(override(source), hoisted)
    assert finding.category is not Category.GENERIC


def test_passing_the_cache_only_when_there_is_one_is_what_the_mixin_does(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        model_inputs = {}
        if past_key_values is not None:
            model_inputs["past_key_values"] = past_key_values
            input_ids = input_ids[:, -1:]
        model_inputs["input_ids"] = input_ids
        for key, value in kwargs.items():
            if key not in model_inputs:
                model_inputs[key] = value
        return model_inputs
    """
    finding = classify_override(override(source, forward_params=("input_ids", "past_key_values")), hoisted)
    assert finding.extras == ()
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)


@pytest.mark.parametrize(
    ("entry", "extra"),
    [
        pytest.param(
            '"num_beams": self.config.num_beams',
            Extra("num_beams", "constant", "self.config.num_beams"),
            id="config-constant",
        ),
        pytest.param('"is_decoder": True', Extra("is_decoder", "constant", "True"), id="literal"),
        pytest.param('"head_mask": None', Extra("head_mask", "none", ""), id="none"),
        pytest.param(
            '"image_sizes": image_sizes if past_key_values is None else None',
            Extra("image_sizes", "first-step", "image_sizes"),
            id="first-step-conditional",
        ),
        pytest.param(
            '"token_type_ids": position_ids',
            Extra("token_type_ids", "adjusted", "position_ids"),
            id="another-parameter",
        ),
    ],
)
def test_extras(hoisted: MixinProfile, entry: str, extra: Extra) -> None:
    source = f"""
    def prepare_inputs_for_generation(
        self, input_ids, past_key_values=None, image_sizes=None, position_ids=None, **kwargs
    ):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {{"input_ids": input_ids, "past_key_values": past_key_values, {entry}, **kwargs}}
    """
    finding = classify_override(override(source, forward_params=("input_ids", "past_key_values")), hoisted)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.REDUCE)
    assert finding.extras == (extra,)


def test_a_computed_value_is_bespoke(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
        return {"input_ids": input_ids, "attention_mask": attention_mask * 2, **kwargs}
    """
    finding = classify_override(override(source), hoisted)
    assert finding.category is Category.BESPOKE
    assert has(finding, "bespoke", "computes attention_mask as `attention_mask * 2`")


def test_ids_under_another_key_are_bespoke(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids, "labels": input_ids, **kwargs}
    """
    finding = classify_override(override(source), hoisted)
    assert finding.category is Category.BESPOKE
    assert has(finding, "bespoke", "passes the ids as 'labels'")


def test_a_bespoke_behaviour_wins_over_extras(hoisted: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if isinstance(past_key_values, StaticCache) and attention_mask is not None:
            target_length = past_key_values.get_max_length()
            batch_size, seq_length = attention_mask.shape
            diff = target_length - seq_length
            new_attn_mask = torch.zeros(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
            attention_mask = torch.cat([attention_mask, new_attn_mask], dim=-1)
        return {"input_ids": input_ids, "attention_mask": attention_mask, "is_decoder": True, **kwargs}
    """
    finding = classify_override(override(source, model="toybloom"), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
    assert [r.rule for r in finding.reasons if r.kind == "bespoke" and r.rule] == ["PI132"]


# ------------------------------------------------------------------------------------------ 5.x mixin

#: a small mixin of the 5.x shape, written for these tests
NEXT_SEQUENCE_MIXIN = """
MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL = ("pixel_values", "pixel_values_videos")


class GenerationMixin:
    def prepare_inputs_for_generation(self, input_ids, next_sequence_length=None, past_key_values=None, **kwargs):
        model_inputs = {}
        input_ids = input_ids[:, -next_sequence_length:] if next_sequence_length is not None else input_ids
        model_inputs["input_ids"] = input_ids
        if past_key_values is not None:
            model_inputs["past_key_values"] = past_key_values
        for key, value in kwargs.items():
            if key not in model_inputs:
                model_inputs[key] = value
        return model_inputs
"""


@pytest.fixture(scope="module")
def next_sequence() -> MixinProfile:
    return profile_from_source(NEXT_SEQUENCE_MIXIN, "generation/utils.py")


def test_next_sequence_length_profile(next_sequence: MixinProfile) -> None:
    assert next_sequence.era is Era.NEXT_SEQUENCE_LENGTH
    assert next_sequence.first_step_only_inputs == ("pixel_values", "pixel_values_videos")
    assert next_sequence.unrecognised == ()


def test_first_step_inputs_the_mixin_drops_itself_are_not_extras(next_sequence: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, pixel_values=None, is_first_iteration=False, **kwargs):
        model_inputs = super().prepare_inputs_for_generation(input_ids, is_first_iteration=is_first_iteration, **kwargs)
        if is_first_iteration:
            model_inputs["pixel_values"] = pixel_values
        return model_inputs
    """
    finding = classify_override(override(source), next_sequence)
    assert finding.extras == ()
    assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)


def test_other_first_step_inputs_are_extras(next_sequence: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, audio_values=None, is_first_iteration=False, **kwargs):
        model_inputs = super().prepare_inputs_for_generation(input_ids, is_first_iteration=is_first_iteration, **kwargs)
        if is_first_iteration:
            model_inputs["audio_values"] = audio_values
        return model_inputs
    """
    finding = classify_override(override(source), next_sequence)
    assert (finding.category, finding.action) == (Category.KWARGS_FORWARDING, Action.KEEP)
    assert finding.extras == (Extra("audio_values", "first-step", "audio_values"),)


def test_unsliced_ids_against_the_5x_mixin(next_sequence: MixinProfile) -> None:
    source = """
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids, **kwargs}
    """
    finding = classify_override(override(source), next_sequence)
    assert [d.text for d in finding.differences] == [
        "passes every id on every step; the 5.x mixin keeps the last next_sequence_length ids"
    ]


# ------------------------------------------------------------------------------------------- modular


RAISES = """
def prepare_inputs_for_generation(self, *args, **kwargs):
    raise AttributeError("Not needed for this model")
"""


def test_a_modular_removal_is_kept(hoisted: MixinProfile) -> None:
    """Deleting the stub would make the modular converter copy the parent's override back in."""
    finding = classify_override(override(RAISES, kind=FileKind.MODULAR), hoisted)
    assert (finding.category, finding.action) == (Category.GENERIC, Action.KEEP)
    assert has(finding, "note", "removes the inherited override")


def test_a_modeling_method_that_raises_is_bespoke(hoisted: MixinProfile) -> None:
    finding = classify_override(override(RAISES), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)


# -------------------------------------------------------------------------------------------- select


def _named(model: str | None, class_name: str) -> Override:
    o = override(SIMPLE_GENERIC, model=model or "x", class_name=class_name)
    return o if model else dataclasses.replace(o, model=None)


SELECTION = (
    _named("llama", "LlamaForCausalLM"),
    _named("gpt2", "GPT2LMHeadModel"),
    _named("gpt2", "GPT2DoubleHeadsModel"),
    _named(None, "RemoteForCausalLM"),
)


@pytest.mark.parametrize(
    ("only", "skip", "expected"),
    [
        pytest.param(
            (),
            (),
            ["LlamaForCausalLM", "GPT2LMHeadModel", "GPT2DoubleHeadsModel", "RemoteForCausalLM"],
            id="everything",
        ),
        pytest.param(("llama",), (), ["LlamaForCausalLM"], id="only-a-model"),
        pytest.param(("GPT2",), (), ["GPT2LMHeadModel", "GPT2DoubleHeadsModel"], id="case-insensitive"),
        pytest.param(
            ("llama", "gpt2"), (), ["LlamaForCausalLM", "GPT2LMHeadModel", "GPT2DoubleHeadsModel"], id="several"
        ),
        pytest.param((), ("gpt2",), ["LlamaForCausalLM", "RemoteForCausalLM"], id="skip-a-model"),
        pytest.param(("gpt2",), ("gpt2doubleheadsmodel",), ["GPT2LMHeadModel"], id="only-then-skip-a-class"),
        pytest.param(("remoteforcausallm",), (), ["RemoteForCausalLM"], id="remote-code-by-class-name"),
        pytest.param(("bert",), (), [], id="nothing-matches"),
    ],
)
def test_select(only: tuple[str, ...], skip: tuple[str, ...], expected: list[str]) -> None:
    assert [o.class_name for o in select(SELECTION, only, skip)] == expected


def test_the_mixin_reaches_forward_with_cache_position_for_a_class_with_cache_classes(hoisted: MixinProfile) -> None:
    """The generic mixin passes ``cache_position`` only where ``self._supports_cache_class``: a class that sets it
    and whose forward takes no ``cache_position`` (remote Phi-3 of the 4.40 era) would get a TypeError, which the
    soundness check must see (it refuses, or drops the key where verification follows)."""
    from codemod.analyse import soundness
    from codemod.transform.plan import mixin_reach

    reach = mixin_reach(hoisted)
    assert ("cache_position", "_supports_cache_class") in reach.when_attribute
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        return {"input_ids": input_ids, "past_key_values": past_key_values}
    """
    forward = ("input_ids", "past_key_values", "attention_mask", "inputs_embeds", "use_cache")
    with_cache = override(source, forward_params=forward, attributes=(("_supports_cache_class", "True"),))
    assert "cache_position" in soundness.forwarded_keys(with_cache, reach)
    assert soundness.not_taken(with_cache, soundness.forwarded_keys(with_cache, reach)) == ("cache_position",)
    legacy = override(source, forward_params=forward)
    assert "cache_position" not in soundness.forwarded_keys(legacy, reach)

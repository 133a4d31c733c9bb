"""An input the model takes on the first step only, set to None under the cache test (``rules.later_step_none``).

4.45's Musicgen-Melody decoder cuts its ids to the last token and drops the encoder's states in one block once
there is a cache. Before PI172 the block was half recognised, so a reduction kept it whole in front of
``super()``: the ids reached the mixin already cut, and with a cache the caller had filled the mixin indexed
them by ``cache_position`` past their end (verification reverted it). Now the block is understood: the
reduction keeps the model's own statements in front, and after ``super()`` sets the key to None under the
same cache test (the last-token cut comes back as verification's repair, as for Musicgen).
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from codemod.analyse.classify import Action, Category, Extra, classify_override
from codemod.analyse.mixin import MixinProfile, hoisted_profile
from codemod.analyse.recognise import analyse_source
from codemod.contracts import ExtraHow
from codemod.transform.plan import kept_inputs, reduce_override

from .test_classify import override

#: the shape of 4.45's MusicgenMelodyForCausalLM (its delay pattern stays; the rest is the mixin's)
DELAYED = """
def prepare_inputs_for_generation(
    self, input_ids, attention_mask=None, encoder_hidden_states=None, past_key_values=None, use_cache=True,
    delay_pattern_mask=None, **kwargs,
):
    if delay_pattern_mask is None:
        input_ids, delay_pattern_mask = self.build_delay_pattern_mask(input_ids, pad_token_id=0)
    input_ids = self.apply_delay_pattern_mask(input_ids, delay_pattern_mask)

    if {guard}:
        input_ids = input_ids[:, -1:]

        # we only want to use conditional signal in the 1st generation step but keeping the attention mask
        encoder_hidden_states = None

    return {{
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "encoder_hidden_states": encoder_hidden_states,
        "past_key_values": past_key_values,
        "use_cache": use_cache,
    }}
"""
FORWARD = ("input_ids", "attention_mask", "encoder_hidden_states", "past_key_values", "use_cache")


@pytest.fixture(scope="module")
def hoisted() -> MixinProfile:
    return hoisted_profile()


@pytest.mark.parametrize(
    ("guard", "test"),
    [
        pytest.param("past_key_values is not None", "past_key_values is not None", id="is-not-none"),
        # an empty Cache is falsy: the truthy test differs on the first step, so the reduction repeats it as written
        pytest.param("past_key_values", "past_key_values", id="truthy"),
    ],
)
def test_the_key_is_none_after_super_under_the_same_cache_test(hoisted: MixinProfile, guard: str, test: str) -> None:
    finding = classify_override(override(DELAYED.format(guard=guard), forward_params=FORWARD), hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert Extra("encoder_hidden_states", ExtraHow.LATER_STEP_NONE) in finding.extras
    assert Extra("", ExtraHow.KEEP_STATEMENTS, "0,1") in finding.extras  # the delay pattern, in front of super()
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is not None
    assert reduction.body.endswith(
        f'if {test}:\n    model_inputs["encoder_hidden_states"] = None\nreturn model_inputs\n'
    )
    ast.parse(reduction.body)
    # the reduced method reads back as what it says: the key None on the later steps, nothing unrecognised
    reduced = analyse_source(
        "def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):\n"
        + textwrap.indent(reduction.body, "    ")
    )
    assert not reduced.unrecognised, reduced.unrecognised
    assert reduced.output_values()["encoder_hidden_states"].origin.value == "none"


def test_a_key_the_kept_statements_compute_is_not_set_twice(hoisted: MixinProfile) -> None:
    """Where the statements kept after super() compute the key (their value is None on the later steps
    already), the reduction sets it from them once, with no cache test of its own in front."""
    finding = classify_override(
        override(DELAYED.format(guard="past_key_values is not None"), forward_params=FORWARD), hoisted
    )
    # the cache block (statement 2) kept after super(), where it sets the local to None on the later steps
    computed = (
        *finding.extras,
        Extra("", ExtraHow.KEEP_AFTER, "2"),
        Extra("encoder_hidden_states", ExtraHow.COMPUTED),
    )
    reduction = reduce_override(finding.override, computed)
    assert reduction is not None
    assert reduction.tail == 'model_inputs["encoder_hidden_states"] = encoder_hidden_states\nreturn model_inputs\n'


@pytest.mark.parametrize(
    ("source", "why"),
    [
        pytest.param(
            DELAYED.format(guard="past_key_values is None"), "the first step: another behaviour", id="no-cache-guard"
        ),
        pytest.param(DELAYED.format(guard="use_cache"), "not a cache test", id="unknown-guard"),
    ],
)
def test_no_later_step_none_where_the_test_is_not_the_cache(hoisted: MixinProfile, source: str, why: str) -> None:
    finding = classify_override(override(source, forward_params=FORWARD), hoisted)
    assert not [e for e in finding.extras if e.how is ExtraHow.LATER_STEP_NONE], why
    assert any("encoder_hidden_states = None" in u.code for u in finding.override.analysis.unrecognised)


@pytest.mark.parametrize("guard", ["past_key_values is not None", "past_key_values"])
def test_the_repaired_last_token_cut_shares_the_later_step_block(hoisted: MixinProfile, guard: str) -> None:
    """Verification's repair cuts the ids to the last token again, under the cache test the key's None
    already stands under: one block, as the old code had it, not the same test twice."""
    finding = classify_override(override(DELAYED.format(guard=guard), forward_params=FORWARD), hoisted)
    reduction = reduce_override(finding.override, (*finding.extras, Extra("input_ids", ExtraHow.LAST_TOKEN)))
    assert reduction is not None
    assert reduction.body.count(f"if {guard}:") == 1, reduction.body
    assert reduction.tail == (
        f'if {guard}:\n    model_inputs["encoder_hidden_states"] = None\n'
        '    model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]\nreturn model_inputs\n'
    )
    ast.parse(reduction.body)


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        pytest.param(
            ["if x:", "    y = 1", "if x:", '    model_inputs["b"] = 2'],
            "the first body may change x",
            id="other-body",
        ),
        pytest.param(
            [
                "if model_inputs.get('a'):",
                '    model_inputs["a"] = None',
                "if model_inputs.get('a'):",
                '    model_inputs["b"] = 2',
            ],
            "the first body changes what the test reads",
            id="test-reads-the-dict",
        ),
        pytest.param(
            [
                "if x:",
                '    model_inputs["a"] = None',
                "else:",
                '    model_inputs["a"] = 1',
                "if x:",
                '    model_inputs["b"] = 2',
            ],
            "an else stands between",
            id="else",
        ),
        pytest.param(
            ["if x:", '    model_inputs["a"] = None', 'model_inputs["c"] = 3', "if x:", '    model_inputs["b"] = 2'],
            "a statement stands between",
            id="between",
        ),
    ],
)
def test_blocks_under_one_test_stay_apart_where_merging_could_change_them(lines: list[str], why: str) -> None:
    from codemod.transform.reduce import _merged_tests

    assert _merged_tests(lines) == lines, why


def test_the_cache_test_is_written_on_the_cache_parameter_the_guards_know(hoisted: MixinProfile) -> None:
    """``past_key_value`` is a cache name to the guards (``rules.guards.PAST_NAMES``): the reduction repeats the
    test on it. Before, the test was looked up on ``past_key_values`` and ``past`` only, the extra fell through to
    "as the dict wrote it", and the reduction passed the caller's conditioning on every step."""
    source = (
        DELAYED.format(guard="past_key_value is not None")
        .replace("past_key_values=None", "past_key_value=None")
        .replace('"past_key_values": past_key_values', '"past_key_values": past_key_value')
    )
    finding = classify_override(override(source, forward_params=FORWARD), hoisted)
    assert Extra("encoder_hidden_states", ExtraHow.LATER_STEP_NONE) in finding.extras
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is not None
    assert reduction.tail == (
        'if past_key_value is not None:\n    model_inputs["encoder_hidden_states"] = None\nreturn model_inputs\n'
    )


def test_no_reduction_where_the_cache_test_cannot_be_written(hoisted: MixinProfile) -> None:
    """The cache read from ``**kwargs``, no parameter to test after super(): the key cannot be None on the later
    steps only, so there is no reduction (not the caller's value on every step)."""
    source = (
        DELAYED.format(guard="past_key_values is not None")
        .replace("past_key_values=None, ", "")
        .replace(
            "    if delay_pattern_mask is None:",
            '    past_key_values = kwargs.get("past_key_values")\n    if delay_pattern_mask is None:',
            1,
        )
    )
    finding = classify_override(override(source, forward_params=FORWARD), hoisted)
    assert Extra("encoder_hidden_states", ExtraHow.LATER_STEP_NONE) in finding.extras, finding.extras
    assert reduce_override(finding.override, finding.extras) is None


#: the shape of 4.45's Qwen2-VL: its rope positions from the ids it cuts by the step itself, and its images on the
#: first step only, told by the step's position (``{test}``), not by the cache
BY_POSITION = """
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None, cache_position=None,
    pixel_values=None, image_grid_thw=None, **kwargs,
):
    if past_key_values is not None:
        input_ids = input_ids[:, cache_position]
    rope = self.rope(input_ids, image_grid_thw)
{before}
    if {test}:
        pixel_values = None
{after}

    return {{
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "past_key_values": past_key_values,
        "pixel_values": pixel_values,
        "image_grid_thw": image_grid_thw,
        "rope": rope,
    }}
"""
BY_POSITION_FORWARD = (
    "input_ids",
    "attention_mask",
    "past_key_values",
    "pixel_values",
    "image_grid_thw",
    "rope",
    "cache_position",
)


@pytest.mark.parametrize("test", ["cache_position[0] != 0", "cache_position[0] > 0"])
def test_the_key_is_none_after_super_under_the_same_position_test(hoisted: MixinProfile, test: str) -> None:
    """The later steps told by the step's position (``later-step``): the reduction repeats the test as written, on
    the parameter the override never rebinds, and the images are an extra, not statements kept after super()."""
    source = BY_POSITION.format(test=test, before="", after="")
    finding = classify_override(override(source, forward_params=BY_POSITION_FORWARD), hoisted)
    assert Extra("pixel_values", ExtraHow.LATER_STEP_NONE) in finding.extras, finding.extras
    recognised = [r for r in finding.override.analysis.recognised if r.behaviour == "later-step-none"]
    assert [(r.facet("guard"), r.facet("test")) for r in recognised] == [("later-step", test)]
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is not None
    assert f'if {test}:\n    model_inputs["pixel_values"] = None\n' in reduction.tail, reduction.tail
    ast.parse(reduction.body)


@pytest.mark.parametrize(
    ("before", "after", "why"),
    [
        pytest.param(
            "    cache_position = cache_position[-1:]",
            "",
            "the test reads a cache_position of the override's own",
            id="rebound-before",
        ),
        pytest.param(
            "",
            "    cache_position = cache_position[-1:]",
            "after super() the test would read the cache_position the override rebinds after it",
            id="rebound-after",
        ),
    ],
)
def test_no_position_test_repeated_where_its_names_change(
    hoisted: MixinProfile, before: str, after: str, why: str
) -> None:
    source = BY_POSITION.format(test="cache_position[0] != 0", before=before, after=after)
    finding = classify_override(override(source, forward_params=BY_POSITION_FORWARD), hoisted)
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is None or "cache_position[0] != 0:\n    model_inputs" not in reduction.body, why


def test_a_verdict_on_the_reduction_needs_a_run_that_gave_the_input(hoisted: MixinProfile) -> None:
    """The reduction sets ``encoder_hidden_states`` to None after super() on the later steps: a run that never gave
    the conditioning says nothing of that statement (4.45's and 5.23's Musicgen-Melody decoder were called identical
    on such runs until ``kept_inputs`` asked for it; ``codemod verify`` on the written tree already did)."""
    finding = classify_override(
        override(DELAYED.format(guard="past_key_values is not None"), forward_params=FORWARD), hoisted
    )
    assert frozenset({"encoder_hidden_states"}) in kept_inputs(finding.override, finding.extras)

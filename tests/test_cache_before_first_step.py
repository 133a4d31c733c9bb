"""A cut to the last token under a cache test, on a target whose ``generate()`` makes the cache before the first step.

From 4.54.0 ``generate()`` makes an empty ``DynamicCache()`` before the first step for every model (until 4.53 only
for a model that set ``_supports_cache_class``, which remote code written for the 4.3x releases does not): an
override's ``past_key_values is not None`` then holds on the prompt step. From 4.56.0 the cache is built from the
model's config, a layer per hidden layer, and is true while empty: ``if past_key_values:`` holds there too. The cut
then keeps only the prompt's last token where the mixin keeps it whole, so the override is model-specific and kept.

The mixin modules below are small hand-written ones in the shape of each release's ``GenerationMixin`` (the lines
the fact is read from); the ``network`` test reads the releases' own ``generation/utils.py``.
"""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from codemod.analyse.classify import Action, Category, classify_override
from codemod.analyse.index import Override
from codemod.analyse.mixin import MixinProfile, hoisted_profile, profile_from_source
from codemod.analyse.recognise import analyse_source
from codemod.rules.slice_to_last_token import CACHE_BEFORE_FIRST_STEP
from codemod.rules.slice_to_last_token import RULE as LAST_TOKEN
from codemod.sources import FileKind
from tests.test_mixin_eras import ERAS, release_mixin

#: ≤ 4.53: only a model that declares cache classes gets a cache before the first step
UNTIL_4_53 = """
    @classmethod
    def _supports_default_dynamic_cache(cls):
        return cls._supports_cache_class and "jamba" not in cls.__name__.lower()

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, batch_size):
        if not self._supports_default_dynamic_cache():
            return
        model_kwargs["past_key_values"] = DynamicCache()
"""

#: 4.54 – 4.55: every model but the stateful ones, an empty DynamicCache() (len() 0: false)
FROM_4_54 = """
    @classmethod
    def _supports_default_dynamic_cache(cls):
        return not cls._is_stateful and "reformer" not in cls.__name__.lower()

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, batch_size):
        if not self._supports_default_dynamic_cache():
            return
        model_kwargs["past_key_values"] = DynamicCache()
"""

#: 4.56 on: built from the model's config (a layer per hidden layer: true while empty)
FROM_4_56 = """
    @classmethod
    def _supports_default_dynamic_cache(cls):
        return not cls._is_stateful and "reformer" not in cls.__name__.lower()

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, batch_size):
        if not self._supports_default_dynamic_cache():
            return
        dynamic_cache_kwargs = {"config": self.config.get_text_config(decoder=True)}
        model_kwargs["past_key_values"] = DynamicCache(**dynamic_cache_kwargs)
"""


def profile(helpers: str) -> MixinProfile:
    """The 4.50 – 4.56 mixin's method (``tests.test_mixin_eras``), with these further methods of its class."""
    text = ERAS["4.50-4.56"].source + textwrap.indent(textwrap.dedent(helpers), "    ")
    return profile_from_source(text, "synthetic")


@pytest.mark.parametrize(
    ("helpers", "expected"),
    [
        pytest.param(UNTIL_4_53, None, id="until-4.53"),
        pytest.param(FROM_4_54, "falsy", id="from-4.54"),
        pytest.param(FROM_4_56, "truthy", id="from-4.56"),
        pytest.param("", None, id="no-cache-helpers"),
    ],
)
def test_the_mixin_profile_says_whether_generate_makes_the_cache_first(helpers: str, expected: str | None) -> None:
    facets = profile(helpers).behaviour_facets().get(CACHE_BEFORE_FIRST_STEP)
    if expected is None:
        assert facets is None
    else:
        assert facets == [{"empty": expected, "where": "generate(), before the first step"}]


def test_the_generic_implementation_we_ship_makes_no_cache() -> None:
    """A ≤ 4.45 checkout (its stub replaced by what apply installs) and a tree without a target keep today's
    classification: the implementation this tool ships prepares inputs and makes no cache."""
    assert CACHE_BEFORE_FIRST_STEP not in hoisted_profile().behaviours


def override(source: str) -> Override:
    """A remote-code class's override (outside a transformers checkout) whose forward takes the ids and the cache."""
    source = textwrap.dedent(source).lstrip("\n")
    return Override(
        id="modeling_toy.py::ToyForCausalLM",
        file="modeling_toy.py",
        kind=FileKind.MODELING,
        model="toy",
        class_name="ToyForCausalLM",
        line=1,
        start_line=1,
        end_line=source.count("\n"),
        bases=("ToyPreTrainedModel", "GenerationMixin"),
        analysis=analyse_source(source),
        forward_params=("input_ids", "past_key_values"),
        attributes=(),
        module_functions=(),
        copied_from=None,
        copy_group=None,
        generated_from=None,
        overwritten=None,
        deprecated=False,
        in_library=False,
    )


def cut_under(test: str) -> str:
    return f"""
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if {test}:
            input_ids = input_ids[:, -1:]
        return {{"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}}
    """


@pytest.mark.parametrize(
    ("test", "helpers", "kept"),
    [
        pytest.param("past_key_values is not None", UNTIL_4_53, False, id="not-none-until-4.53"),
        pytest.param("past_key_values is not None", FROM_4_54, True, id="not-none-from-4.54"),
        pytest.param("past_key_values is not None", FROM_4_56, True, id="not-none-from-4.56"),
        # an empty DynamicCache() is false on 4.54 – 4.55: the prompt step is not cut
        pytest.param("past_key_values", FROM_4_54, False, id="truthy-4.54"),
        pytest.param("past_key_values", FROM_4_56, True, id="truthy-from-4.56"),
        # use_cache holds on the prompt step on every release
        pytest.param("past_key_values is not None or use_cache", UNTIL_4_53, True, id="or-use-cache"),
    ],
)
def test_a_cut_that_holds_on_the_prompt_step_is_kept(test: str, helpers: str, kept: bool) -> None:
    against = profile(helpers)
    finding = classify_override(override(cut_under(test)), against)
    if kept:
        assert (finding.category, finding.action) == (Category.BESPOKE, Action.KEEP)
        (reason,) = [r for r in finding.reasons if r.rule == LAST_TOKEN.code and r.kind == "bespoke"]
        assert "cuts the prompt to its last token" in reason.text
        assert reason.line == 3
    else:
        assert (finding.category, finding.action) == (Category.GENERIC, Action.DELETE)
        assert any("assisted decoding" in d.text for d in finding.differences)


def test_the_same_cut_in_the_hoisted_profile_with_the_fact_added_is_kept() -> None:
    """The fact alone decides: the generic implementation we ship, given the 4.56 fact, keeps the cut."""
    base = hoisted_profile()
    made = ((CACHE_BEFORE_FIRST_STEP, (("empty", "truthy"),)),)
    against = dataclasses.replace(
        base,
        generate_behaviours=base.generate_behaviours + made,
        behaviours=base.behaviours | {CACHE_BEFORE_FIRST_STEP},
    )
    source = cut_under("past_key_values")
    finding = classify_override(override(source), against)
    assert finding.action is Action.KEEP
    assert classify_override(override(source), base).action is (Action.DELETE)


#: what the releases' own generate() does (read from their wheels): None, or the empty cache's truth
RELEASES = {
    "4.53.3": None,
    "4.54.0": "falsy",
    "4.55.4": "falsy",
    "4.56.0": "truthy",
    "4.57.1": "truthy",
    "5.0.0": "truthy",
}


@pytest.mark.network
@pytest.mark.parametrize("version", RELEASES)
def test_real_releases(version: str) -> None:
    path = release_mixin(version)
    found = profile_from_source(path.read_text(encoding="utf-8"), f"transformers {version}").behaviour_facets()
    made = found.get(CACHE_BEFORE_FIRST_STEP)
    assert (made[0]["empty"] if made else None) == RELEASES[version]


def test_a_decoder_prompt_cut_is_a_difference_outside_the_standard_flow() -> None:
    """generate() starts a decoder with its start token alone: the cut changes only a prompt the caller gives it."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, encoder_outputs=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"decoder_input_ids": input_ids, "past_key_values": past_key_values, "encoder_outputs": encoder_outputs}
    """
    finding = classify_override(override(source), profile(FROM_4_56))
    assert finding.category is not Category.BESPOKE
    assert any("cuts a decoder prompt of several tokens" in d.text for d in finding.differences)


def test_a_cut_under_a_name_generate_never_fills_is_not_kept_for_it() -> None:
    """``past`` (4.2x's name) is never given the cache generate() makes: the cut never runs on the target, before the
    first step or after (another reason keeps such an override: it passes past_key_values from ``past``)."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past=None, **kwargs):
        if past is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past, **kwargs}
    """
    finding = classify_override(override(source), profile(FROM_4_56))
    assert not any("cuts the prompt" in r.text for r in finding.reasons)

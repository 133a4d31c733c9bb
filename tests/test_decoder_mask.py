"""An encoder-decoder wrapper that passes its decoder's own mask keeps asking the decoder for it (``decoder_mask_after``).

4.45's ``EncoderDecoderModel``, ``VisionEncoderDecoderModel`` and ``SpeechEncoderDecoderModel`` ask the decoder's
``prepare_inputs_for_generation`` for the ids, the cache and the mask, and pass that mask as
``decoder_attention_mask``: one of ones from a decoder whose method makes one when given none (BERT's, TrOCR's,
MBart's), none from GPT-2's. Upstream deleted the overrides in 4.46; the mixin then passes the caller's mask, none by
default, which an Electra decoder replaces with a default that does not count the cache, and slices the ids by the
positions where BigBird's decoder sliced them by a cache length that stops growing (the oracle's tokens differed).
The reduction keeps the two statements that ask the decoder after ``super()`` and sets both keys from them.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from codemod.analyse.classify import Action, Category, Extra, classify_override
from codemod.analyse.mixin import MixinProfile, hoisted_profile
from codemod.contracts import ExtraHow
from codemod.rules.generic_mixin import METHOD_SOURCE
from codemod.transform.plan import reduce_override, slim_parameters

from .test_classify import override
from .test_tiny import _run

WRAPPER = """
def prepare_inputs_for_generation(
    self, input_ids, past_key_values=None, attention_mask=None, use_cache=None, encoder_outputs=None, **kwargs
):
    decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
    decoder_attention_mask = decoder_inputs["attention_mask"] if "attention_mask" in decoder_inputs else None
    input_dict = {
        "attention_mask": attention_mask,
        "decoder_attention_mask": decoder_attention_mask,
        "decoder_input_ids": decoder_inputs["input_ids"],
        "encoder_outputs": encoder_outputs,
        "past_key_values": decoder_inputs["past_key_values"],
        "use_cache": use_cache,
    }
    return input_dict
"""

#: what the reduction is, after its signature (the parameters the body no longer reads go through **kwargs)
REDUCED = """\
model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)
decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
decoder_attention_mask = decoder_inputs["attention_mask"] if "attention_mask" in decoder_inputs else None
model_inputs["decoder_attention_mask"] = decoder_attention_mask
model_inputs["decoder_input_ids"] = decoder_inputs["input_ids"]
return model_inputs
"""

FORWARD = (
    "input_ids",
    "attention_mask",
    "decoder_input_ids",
    "decoder_attention_mask",
    "encoder_outputs",
    "past_key_values",
    "inputs_embeds",
    "decoder_inputs_embeds",
    "labels",
    "use_cache",
    "kwargs",
)


@pytest.fixture(scope="module")
def hoisted() -> MixinProfile:
    return hoisted_profile()


def _finding(source: str, hoisted: MixinProfile):  # type: ignore[no-untyped-def]
    return classify_override(override(source, class_name="ToyEncoderDecoderModel", forward_params=FORWARD), hoisted)


def test_the_wrapper_keeps_asking_its_decoder_for_the_mask(hoisted: MixinProfile) -> None:
    finding = _finding(WRAPPER, hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED)] == [
        Extra("", ExtraHow.KEEP_AFTER, "0,1"),
        Extra("decoder_attention_mask", ExtraHow.COMPUTED),
        Extra("decoder_input_ids", ExtraHow.COMPUTED),
    ]
    notes = [r.text for r in finding.reasons if r.kind == "note"]
    assert any(n.startswith("kept as is after super(): asks self.decoder for the mask") for n in notes)


def test_the_reduction_is_super_then_the_decoders_mask(hoisted: MixinProfile) -> None:
    finding = _finding(WRAPPER, hoisted)
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is not None
    # the statements kept after super() are placed by the rewrite; the body here is the call and the keys
    assert reduction.body.splitlines()[0] == REDUCED.splitlines()[0]
    assert 'model_inputs["decoder_attention_mask"] = decoder_attention_mask' in reduction.body
    # the scan records the expression normalised (single quotes); it is written as transformers writes it
    assert 'model_inputs["decoder_input_ids"] = decoder_inputs["input_ids"]' in reduction.body
    assert slim_parameters(finding.override, finding.extras, reduction.body) == (
        "input_ids",
        "past_key_values",
        "kwargs",
    )
    ast.parse(REDUCED)


@pytest.mark.parametrize(
    ("source", "action", "why"),
    [
        pytest.param(
            """
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                              use_cache=None, encoder_outputs=None, **kwargs):
                decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
                return {
                    "attention_mask": attention_mask,
                    "decoder_input_ids": decoder_inputs["input_ids"],
                    "encoder_outputs": encoder_outputs,
                    "past_key_values": decoder_inputs["past_key_values"],
                    "use_cache": use_cache,
                }
            """,
            Action.DELETE,
            "no mask from the decoder: the ids and the cache are what the mixin prepares",
            id="ids-and-cache-only",
        ),
    ],
)
def test_noop(hoisted: MixinProfile, source: str, action: Action, why: str) -> None:
    finding = _finding(textwrap.dedent(source), hoisted)
    assert finding.action is action, why
    assert not [e for e in finding.extras if e.how is ExtraHow.KEEP_AFTER], why


@pytest.mark.parametrize(
    ("recorded", "written"),
    [
        ("decoder_inputs['input_ids']", 'decoder_inputs["input_ids"]'),
        ("kwargs.get('rope_deltas', None)", 'kwargs.get("rope_deltas", None)'),
        ("x['a\"b']", "x['a\"b']"),  # a string holding a double quote stays as it is
        ("position_ids", "position_ids"),
    ],
)
def test_a_recorded_expression_is_written_in_double_quotes(recorded: str, written: str) -> None:
    from codemod.transform.reduce import _double_quoted

    assert _double_quoted(recorded) == written
    ast.parse(written)


def test_a_cache_read_only_inside_a_wrapper_is_no_evidence_of_the_decoders_own_cached_path() -> None:
    """A decoder head run as an encoder (its primary settings give it no cache) and with a cache only inside an
    ``EncoderDecoderModel``, whose 4.45 override asks the decoder's method without the positions generate() gives:
    the branch of the mixin a mutant of the positions' slicing breaks never ran, so the class is not identical."""
    from codemod.verify.compare import COMPOSITE_VARIANT, ScenarioOutcome, ScenarioStatus, missing_evidence

    own = ScenarioOutcome("greedy", ScenarioStatus.SAME, cache_used=False)
    inside = ScenarioOutcome(
        f"{COMPOSITE_VARIANT}/greedy", ScenarioStatus.SAME, cache_used=True, variant=COMPOSITE_VARIANT
    )
    assert "the cached path is untested" in missing_evidence([own, inside], caches=True)
    cached = ScenarioOutcome("sampling", ScenarioStatus.SAME, cache_used=True)
    assert missing_evidence([own, inside, cached], caches=True) == ""


# ------------------------------------------------------------------ the installed mixin, run (4.45.2 environment)

#: the installed method bound onto a tiny GPT-2 of the pristine release (whose own override is bypassed), asked as a
#: wrapper asks its decoder (no mask), as generate() asks (the caller's padded mask), and with that mask and positions
MIXIN_RUN = textwrap.dedent(
    r"""
    import inspect, json, logging
    from typing import Optional, Tuple, Union
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.cache_utils import Cache
    METHOD_SOURCE = None  # the installed method's source, put here by the test (the rules package needs libcst)

    namespace = {"torch": torch, "inspect": inspect, "Optional": Optional, "Tuple": Tuple, "Union": Union,
                 "Cache": Cache, "logger": logging.getLogger("mixin")}
    exec("class Installed:\n" + METHOD_SOURCE.replace("from ..cache_utils", "from transformers.cache_utils"), namespace)
    method = namespace["Installed"].prepare_inputs_for_generation
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=32, n_positions=16)).eval()
    ids = torch.tensor([[5, 6, 7], [8, 9, 10]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])

    def seen(prepared):
        return {k: v.tolist() for k, v in prepared.items() if isinstance(v, torch.Tensor) and k != "input_ids"}

    print("RESULT " + json.dumps({
        "no mask": seen(method(model, ids)),
        "mask": seen(method(model, ids, attention_mask=mask)),
        "mask and positions": seen(method(model, ids, attention_mask=mask, position_ids=torch.tensor([[0, 0, 1]] * 2))),
    }))
    """
)


@pytest.mark.network
@pytest.mark.slow
def test_the_installed_mixin_builds_positions_from_the_callers_mask_only(verify_env, tmp_path) -> None:  # noqa: F811
    """A decoder asked without a mask (4.45's wrappers ask theirs so) gets the mixin's mask of ones, as BERT's made it,
    and no positions built from it: no legacy decoder built positions from a mask it made itself, and GPT-2 inside a
    wrapper passed none (stop 37 reverted GPT-2 for that). The caller's mask still gives positions, padding at 1; the
    caller's own positions are kept."""
    found = _run(verify_env, MIXIN_RUN.replace("METHOD_SOURCE = None", f"METHOD_SOURCE = {METHOD_SOURCE!r}"), tmp_path)
    assert found["no mask"] == {"attention_mask": [[1, 1, 1], [1, 1, 1]]}
    assert found["mask"] == {"attention_mask": [[0, 1, 1], [1, 1, 1]], "position_ids": [[1, 0, 1], [0, 1, 2]]}
    assert found["mask and positions"]["position_ids"] == [[0, 0, 1], [0, 0, 1]]

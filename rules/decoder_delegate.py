"""PI182 decoder-delegate: an encoder-decoder wrapper takes its decoder's ids and cache from the decoder's own method.

The composite wrappers of 4.45 (``EncoderDecoderModel``, ``VisionEncoderDecoderModel``,
``SpeechEncoderDecoderModel``) ask the decoder to prepare ``input_ids`` and ``past_key_values`` and
pass them on as ``decoder_input_ids`` and the cache: the decoder's method slices the ids to the
tokens its cache has not seen, as the mixin slices ``decoder_input_ids``. The decoder's mask, when
it makes one, is all ones over every token (no mask given); the mixin passes the caller's, none by
default, and a decoder whose forward builds its default without counting the cache (Electra's) then
masks wrongly; and the mixin slices the ids by the positions, where a decoder may slice them its own
way (BigBird's, by a cache length that stops growing). Upstream deleted these overrides in 4.46; an
override that passes the decoder's mask is reduced to ``super()`` with the two statements that ask the
decoder kept after it, the mask and the ids taken from them (``classify._Judge.decoder_mask_after``),
and verification runs each wrapper with a decoder that makes a mask and one that makes none.

Example::

    decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
    decoder_attention_mask = decoder_inputs["attention_mask"] if "attention_mask" in decoder_inputs else None
"""

from collections.abc import Mapping

from codemod.rules._pattern import Captures
from codemod.rules.base import (
    IDS_SLICING,
    Case,
    Context,
    Coverage,
    EraNote,
    Kind,
    Match,
    MixinBehaviours,
    NoOp,
    TemplateRule,
    Value,
    ValueOrigin,
    claim,
)
from codemod.rules.guards import PAST_NAMES
from codemod.rules.values import entry


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    if captures.code("ids") != ctx.ids_param or captures.code("past") not in PAST_NAMES:
        return None
    result = captures.code("out")
    if "mask" in variant and captures.code("from") != result:
        return None  # a mask read from another dict
    mask = Value(ValueOrigin.BEHAVIOUR, "decoder-delegate")
    defines = {
        entry(result, "input_ids"): Value(ValueOrigin.IDS, "sliced by the decoder"),
        entry(result, "past_key_values"): ctx.value_of(captures.code("past")),
        entry(result, "attention_mask"): mask,
    }
    if "mask" in variant:
        defines[captures.code("mask")] = mask
    return claim(detail=variant, facets={"mask": str("mask" in variant).lower()}, defines=defines)


class DecoderDelegate(TemplateRule):
    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        if not any(name in mixin for name in IDS_SLICING):
            return Coverage(False, missing="the mixin does not slice the decoder's ids by the cache")
        differences = (
            "asks the decoder's own method for the ids and the cache: a decoder that prepares them its own "
            "way is sliced as the mixin slices instead",
        )
        if facets.get("mask") != "true":
            return Coverage(True, differences=differences)
        # in the standard flow: a decoder that makes a default mask (BERT's) gets one here, and none from the mixin
        return Coverage(
            True,
            differences=differences,
            flow_differences=(
                "passes the decoder's all-ones mask (or none) as decoder_attention_mask and ignores one the caller gives; "
                "the mixin passes the caller's, none by default",
            ),
        )


_PREPARE = "$out = self.decoder.prepare_inputs_for_generation($ids, past_key_values=$past)"

#: what an override that only does this becomes where it passes the decoder's mask (rules.doc)
BECOMES = "reduced: `super()`, then the decoder asked for its mask and ids after it"

RULE = DecoderDelegate(
    __doc__,
    Kind.STANDARD,
    {
        "ids and cache from self.decoder": _PREPARE,
        "ids, cache and mask from self.decoder": _PREPARE
        + '\n$mask = $from["attention_mask"] if "attention_mask" in $from else None',
    },
    _check,
)

ERAS = (EraNote("4.46 +", "the wrappers have no override: the mixin slices decoder_input_ids by the cache"),)

CASES = (
    Case(
        "the-wrapper",
        """
        decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
        """,
        detail="ids and cache from self.decoder",
        facets={"mask": "false"},
    ),
    Case(
        "its-mask",
        """
        decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
        decoder_attention_mask = decoder_inputs["attention_mask"] if "attention_mask" in decoder_inputs else None
        """,
        detail="ids, cache and mask from self.decoder",
        facets={"mask": "true"},
        lines=(1, 2),
    ),
    NoOp(
        "other-ids",
        """
        decoder_inputs = self.decoder.prepare_inputs_for_generation(labels, past_key_values=past_key_values)
        """,
        why="the decoder is given something other than the ids generate() passes",
        unrecognised="decoder_inputs = self.decoder.prepare_inputs_for_generation(labels",
    ),
    NoOp(
        "mask-of-another-dict",
        """
        decoder_attention_mask = inputs["attention_mask"] if "attention_mask" in inputs else None
        """,
        why="a mask read from a dict the decoder did not prepare",
        unrecognised="decoder_attention_mask = inputs['attention_mask']",
    ),
)

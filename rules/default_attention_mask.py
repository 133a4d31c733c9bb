"""PI151 default-attention-mask: when no mask is given, attend to every token (a mask of ones).

No upstream mixin does this; ``generate`` itself builds a mask for decoder-only models, which masks
padding tokens where this one does not. The implementation hoisted into a 4.45 stub mixin does it
for decoder-only models: 4.45's composites ask their decoder without a mask, and some decoders'
forwards (Electra's) build a default that does not count the cache.

Example::

    if attention_mask is None:
        attention_mask = input_ids.new_ones(input_ids.shape)
"""

from collections.abc import Mapping

from codemod.rules._pattern import Captures
from codemod.rules.base import (
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


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    if captures.code("ids") not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    return claim(detail=variant, defines={"attention_mask": Value(ValueOrigin.BEHAVIOUR, "default-attention-mask")})


class DefaultAttentionMask(TemplateRule):
    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        if self.name in mixin:  # the implementation hoisted into a 4.45 stub mixin makes the same mask
            return Coverage(True)
        return Coverage(
            True,
            differences=(
                "attends to every token when no attention_mask is given; the mixin passes none "
                "(generate() builds one for decoder-only models, masking pad tokens)",
            ),
        )


RULE = DefaultAttentionMask(
    __doc__,
    Kind.STANDARD,
    {
        "ones like the ids": """
            if attention_mask is None:
                attention_mask = $ids.new_ones($ids.shape)
        """,
        "ones like the ids (via input_shape)": """
            input_shape = $ids.shape
            if attention_mask is None:
                attention_mask = $ids.new_ones(input_shape)
        """,
        "ones like the ids, decoder-only models": """
            if attention_mask is None and inputs_embeds is None and not self.config.is_encoder_decoder:
                attention_mask = $ids.new_ones($ids.shape)
        """,
    },
    _check,
)

ERAS = (
    EraNote(
        "all",
        "no mixin does this; `generate()` builds a mask for decoder-only models, which masks padding tokens "
        "where this one does not",
    ),
)

CASES = (
    Case(
        "ones-like-the-ids",
        RULE.example,
        detail="ones like the ids",
    ),
    Case(
        "input-shape",
        """
        input_shape = input_ids.shape
        # a decoder of an encoder-decoder model gets its mask made here
        if attention_mask is None:
            attention_mask = input_ids.new_ones(input_shape)
        """,
        detail="ones like the ids (via input_shape)",
    ),
    Case(
        "decoder-only",
        """
        # the implementation hoisted into a 4.45 stub mixin: composites ask their decoder without a mask
        if attention_mask is None and inputs_embeds is None and not self.config.is_encoder_decoder:
            attention_mask = input_ids.new_ones(input_ids.shape)
        """,
        detail="ones like the ids, decoder-only models",
    ),
    NoOp(
        "zeros",
        """
        if attention_mask is None:
            attention_mask = input_ids.new_zeros(input_ids.shape)
        """,
        why="zeros attend to nothing",
        unrecognised="new_zeros",
    ),
    NoOp(
        "like-embeddings",
        """
        if attention_mask is None:
            attention_mask = inputs_embeds.new_ones(inputs_embeds.shape)
        """,
        why="shaped like the embeddings (three dimensions), not the ids",
        unrecognised="inputs_embeds.new_ones",
    ),
)

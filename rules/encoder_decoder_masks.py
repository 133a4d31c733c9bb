"""PI152 encoder-decoder-masks: give an encoder-decoder model's decoder its own attention mask.

The ``attention_mask`` of ``generate`` belongs to the encoder; the decoder's comes as
``decoder_attention_mask``. The mixins of 4.50 onwards keep the two apart.

Example::

    encoder_attention_mask = attention_mask if self.config.is_encoder_decoder else None
    attention_mask = kwargs.pop("decoder_attention_mask", None) if self.config.is_encoder_decoder else attention_mask
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        # The two statements may stand apart (5.x puts the choice of the mask's key between them).
        "the encoder's mask kept aside": "encoder_attention_mask = attention_mask if self.config.is_encoder_decoder else None",
        "the decoder's mask from kwargs": (
            'attention_mask = $kw.pop("decoder_attention_mask", None) if self.config.is_encoder_decoder else attention_mask'
        ),
    },
    lambda captures, ctx, variant: claim(
        detail=variant,
        defines={
            "encoder_attention_mask" if "encoder" in variant else "attention_mask": Value(
                ValueOrigin.PARAM, "attention_mask"
            )
        },
    ),
)

ERAS = (EraNote("4.50 +", "the mixins keep the encoder's and the decoder's masks apart"),)

CASES = (
    Case(
        "the-encoders-mask",
        """
        encoder_attention_mask = attention_mask if self.config.is_encoder_decoder else None
        """,
        detail="the encoder's mask kept aside",
    ),
    Case(
        "the-decoders-mask",
        """
        attention_mask = (
            kwargs.pop('decoder_attention_mask', None)
            if self.config.is_encoder_decoder
            else attention_mask
        )
        """,
        detail="the decoder's mask from kwargs",
    ),
    NoOp(
        "another-config-flag",
        """
        encoder_attention_mask = attention_mask if self.config.is_decoder else None
        """,
        why="is_decoder is not is_encoder_decoder: a decoder-only model's mask would be set aside",
        unrecognised="self.config.is_decoder",
    ),
)

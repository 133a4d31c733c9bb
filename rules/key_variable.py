"""PI195 key-variable: pick a key name by model type (`decoder_...` for encoder-decoder models).

Plumbing: the variable then names that key wherever the output dict is indexed with it.

Example::

    attention_mask_key = "decoder_attention_mask" if self.config.is_encoder_decoder else "attention_mask"
"""

from codemod.rules._pattern import Captures
from codemod.rules.base import Case, Context, Kind, Match, NoOp, TemplateRule, Value, ValueOrigin, claim


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    name = captures.code("name")
    decoder, plain = captures.nodes["decoder"], captures.nodes["plain"]
    decoder_key, plain_key = getattr(decoder, "evaluated_value", None), getattr(plain, "evaluated_value", None)
    if not name.isidentifier() or not isinstance(plain_key, str) or decoder_key != f"decoder_{plain_key}":
        return None
    return claim(detail=f"{name}: {plain_key} or {decoder_key}", defines={name: Value(ValueOrigin.KEY, plain_key)})


RULE = TemplateRule(
    __doc__,
    Kind.PLUMBING,
    {"by config.is_encoder_decoder": "$name = $decoder if self.config.is_encoder_decoder else $plain"},
    _check,
)

CASES = (
    Case(
        "decoder-or-plain",
        """
        position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
        """,
        detail="position_ids_key: position_ids or decoder_position_ids",
    ),
    NoOp(
        "mismatched",
        """
        mask_key = "decoder_mask" if self.config.is_encoder_decoder else "attention_mask"
        """,
        why="the two keys are not a decoder and a plain version of one name",
        unrecognised="decoder_mask",
    ),
)

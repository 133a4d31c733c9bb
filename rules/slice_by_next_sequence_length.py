"""PI104 slice-by-next-sequence-length: keep the last `next_sequence_length` ids (the 5.x decoding loop).

In transformers 5 the decoding loop tells ``prepare_inputs_for_generation`` how many tokens are new
(``next_sequence_length``) instead of passing ``cache_position``.

Example::

    input_ids = input_ids[:, -next_sequence_length:] if next_sequence_length is not None else input_ids
"""

from codemod.rules._pattern import Captures
from codemod.rules.base import Case, Context, EraNote, Kind, Match, NoOp, TemplateRule, Value, ValueOrigin, claim


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    return claim(detail=variant, defines={ids: Value(ValueOrigin.IDS, "next_sequence_length")})


RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {"conditional expression": "$ids = $ids[:, -next_sequence_length:] if next_sequence_length is not None else $ids"},
    _check,
    covered_by=("slice-by-next-sequence-length",),
)

ERAS = (
    EraNote("4.46 – 5.2", "the ids are sliced by `cache_position` instead (PI101)"),
    EraNote("5.3 +", "the mixin slices the ids by `next_sequence_length`, and on the first iteration the embeddings"),
)

CASES = (
    Case(
        "conditional-expression",
        RULE.example,
        detail="conditional expression",
    ),
    Case(
        "wrapped",
        """
        input_ids = (
            input_ids[:, -next_sequence_length :]
            if next_sequence_length is not None
            else input_ids
        )
        """,
        detail="conditional expression",
    ),
    NoOp(
        "other-length",
        """
        input_ids = input_ids[:, -new_tokens:] if new_tokens is not None else input_ids
        """,
        why="slicing by something else than next_sequence_length",
        unrecognised="new_tokens",
    ),
)

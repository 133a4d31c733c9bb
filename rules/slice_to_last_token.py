"""PI103 slice-to-last-token: with a cache, keep only the last token of the ids.

Equivalent to slicing by the cache while one token is generated per step, but not when several
tokens are new at once: assisted decoding feeds the candidate tokens together, and this keeps only
the last of them. Deleting such an override changes what the model sees there.

Example::

    if past_key_values is not None:
        input_ids = input_ids[:, -1:]
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

_SLICERS = ("slice-by-cache-position", "slice-by-next-sequence-length")


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids") or not ctx.under_past:
        return None
    # the test it is cut under, innermost first: a reduction that cuts again after super() uses the same one
    # (an empty Cache is falsy, so ``if past_key_values:`` and ``is not None`` differ on the first step)
    guard = next(g for g in reversed(ctx.guards) if g.startswith("past"))
    return claim(detail=variant, defines={ids: Value(ValueOrigin.IDS, "last token")}, facets={"guard": guard})


class SliceToLastToken(TemplateRule):
    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        if not any(name in mixin for name in _SLICERS):
            return Coverage(False, missing="the mixin does not slice the ids by the cache")
        return Coverage(
            True,
            differences=(
                "keeps only the last token where the mixin keeps every uncached token: assisted decoding "
                "(several candidate tokens per step) sees different inputs",
            ),
        )


RULE = SliceToLastToken(
    __doc__,
    Kind.STANDARD,
    {
        "[:, -1:]": "$ids = $ids[:, -1:]",
        "[:, -1].unsqueeze(-1)": "$ids = $ids[:, -1].unsqueeze(-1)",
    },
    _check,
)

ERAS = (
    EraNote(
        "4.46 +",
        "the mixins keep every new token: the same while one token is generated per step, not under assisted "
        "decoding, which feeds several",
    ),
)

CASES = (
    Case(
        "slice",
        """
        if past_key_values:
            input_ids = input_ids[:, -1:]
        """,
        detail="[:, -1:]",
        facets={"guard": "past-truthy"},
    ),
    Case(
        "unsqueeze",
        """
        if past_key_values is not None:
            input_ids = input_ids[:, -1].unsqueeze(-1)
        """,
        detail="[:, -1].unsqueeze(-1)",
        facets={"guard": "past-not-none"},
    ),
    Case(
        "old-past-name-reformatted",
        """
        if past is not None:
            input_ids = input_ids[ :, -1 : ]  # only the last token
        """,
        detail="[:, -1:]",
        facets={"guard": "past-not-none"},
    ),
    Case(
        "in-else-of-no-cache",
        """
        if past_key_values is None:
            pass
        else:
            input_ids = (input_ids[:, -1:])
        """,
        detail="[:, -1:]",
        facets={"guard": "past-not-none"},
    ),
    Case(
        "decoder-input-ids",
        """
        if past_key_values:
            decoder_input_ids = decoder_input_ids[:, -1:]
        """,
        detail="[:, -1:]",
        facets={"guard": "past-truthy"},
    ),
    NoOp(
        "two-tokens",
        """
        if past_key_values:
            input_ids = input_ids[:, -2:]
        """,
        why="two tokens are not the last token",
        unrecognised="input_ids[:, -2:]",
    ),
    NoOp(
        "unguarded",
        """
        input_ids = input_ids[:, -1:]
        """,
        why="without a cache guard the model would see one token on the first step too",
        unrecognised="input_ids[:, -1:]",
    ),
    NoOp(
        "no-cache-guard",
        """
        if past_key_values is None:
            input_ids = input_ids[:, -1:]
        """,
        why="the guard says there is no cache: this slices on the first step",
        unrecognised="input_ids[:, -1:]",
    ),
    NoOp(
        "unknown-guard",
        """
        if use_cache:
            input_ids = input_ids[:, -1:]
        """,
        why="an unknown test (use_cache) is not a cache guard",
        unrecognised="if use_cache:",
    ),
    NoOp(
        "another-variable",
        """
        if past_key_values:
            attention_mask = attention_mask[:, -1:]
        """,
        why="the mask is not the ids",
        unrecognised="attention_mask[:, -1:]",
    ),
    NoOp(
        "first-token",
        """
        if past_key_values:
            input_ids = input_ids[:, :1]
        """,
        why="the first token is not the last",
        unrecognised="input_ids[:, :1]",
    ),
)

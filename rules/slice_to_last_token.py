"""PI103 slice-to-last-token: with a cache, keep only the last token of the ids.

Equivalent to slicing by the cache while one token is generated per step, but not when several
tokens are new at once: assisted decoding feeds the candidate tokens together, and this keeps only
the last of them. Deleting such an override changes what the model sees there.

Example::

    if past_key_values is not None:
        input_ids = input_ids[:, -1:]
"""

from rules.base import Coverage, Kind, TemplateRule, Value, claim

_SLICERS = ("slice-by-cache-position", "slice-by-next-sequence-length")


def _check(captures, ctx, variant):
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids") or not ctx.under_past:
        return None
    return claim(detail=variant, defines={ids: Value("ids", "last token")})


class SliceToLastToken(TemplateRule):
    def coverage(self, facets, mixin):
        if not any(name in mixin for name in _SLICERS):
            return Coverage(False, missing="the mixin does not slice the ids by the cache")
        return Coverage(True, differences=(
            "keeps only the last token where the mixin keeps every uncached token: assisted decoding "
            "(several candidate tokens per step) sees different inputs",
        ))


RULE = SliceToLastToken(
    __doc__,
    Kind.STANDARD,
    {
        "[:, -1:]": "$ids = $ids[:, -1:]",
        "[:, -1].unsqueeze(-1)": "$ids = $ids[:, -1].unsqueeze(-1)",
    },
    _check,
)

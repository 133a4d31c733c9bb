"""PI101 slice-by-cache-position: keep only the tokens the cache has not seen, indexing with `cache_position`.

With ``inputs_embeds`` the ids may be shorter than the sequence, so the last
``len(cache_position)`` are kept instead; when the ids already have the right length (assisted
decoding slices them itself) nothing happens.

Example::

    if past_key_values is not None:
        if inputs_embeds is not None:  # Exception 1
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
            input_ids = input_ids[:, cache_position]
"""

from rules.base import Kind, TemplateRule, Value, claim

_SLICE = """
    $ids = $ids[:, -cache_position.shape[0] :]
elif $ids.shape[1] != cache_position.shape[0]:
    $ids = $ids[:, cache_position]
"""


def _check(captures, ctx, variant):
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    detail = variant + ("" if ctx.under_past else "; not under a cache guard")
    return claim(detail=detail, defines={ids: Value("ids", "cache_position")})


RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        "with the inputs_embeds exception": "if inputs_embeds is not None:" + _SLICE,
        "with the inputs_embeds and synced-GPUs exceptions": (
            "if inputs_embeds is not None or cache_position[-1] >= $ids.shape[1]:" + _SLICE
        ),
        "without the inputs_embeds exception": "if $ids.shape[1] != cache_position.shape[0]:\n    $ids = $ids[:, cache_position]",
    },
    _check,
    covered_by=("slice-by-cache-position", "slice-by-next-sequence-length"),
)

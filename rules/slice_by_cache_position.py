"""PI101 slice-by-cache-position: keep only the tokens the cache has not seen, indexing with `cache_position`.

With ``inputs_embeds`` the ids may be shorter than the sequence, so the last
``len(cache_position)`` are kept instead; when the ids already have the right length (assisted
decoding slices them itself) nothing happens. The mixins of 4.49 – 4.50 also slice the
embeddings when the ids are empty, and from 4.51 to 5.2 the mixin does all this in
``_cache_dependant_input_preparation``, which a template here claims by its call (the engine reads
one method at a time; the helper's body has the 4.50 shape).

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
# 4.49 – 4.50: prompt embeddings with no ids at all are sliced themselves ("Exception 4").
_EMBEDS_ONLY = """
if inputs_embeds is not None and $ids.shape[1] == 0:
    inputs_embeds = inputs_embeds[:, -cache_position.shape[0] :]
"""
# Exception 3: with synced GPUs cache_position may run past the ids (4.47 – 4.49: unless compiling)
_SYNCED = "inputs_embeds is not None or cache_position[-1] >= $ids.shape[1]"
_SYNCED_UNLESS_COMPILING = "inputs_embeds is not None or (is_torchdynamo_compiling() or cache_position[-1] >= $ids.shape[1])"


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
        "with the inputs_embeds and synced-GPUs exceptions": f"if {_SYNCED}:" + _SLICE,
        "with the inputs_embeds and synced-GPUs exceptions, unless compiling": f"if {_SYNCED_UNLESS_COMPILING}:" + _SLICE,
        "embeddings sliced when there are no ids; inputs_embeds and synced-GPUs exceptions": (
            _EMBEDS_ONLY + f"elif {_SYNCED}:" + _SLICE
        ),
        "embeddings sliced when there are no ids; inputs_embeds and synced-GPUs exceptions, unless compiling": (
            _EMBEDS_ONLY + f"elif {_SYNCED_UNLESS_COMPILING}:" + _SLICE
        ),
        "via _cache_dependant_input_preparation": (
            "inputs_embeds, $ids = self._cache_dependant_input_preparation($ids, inputs_embeds, cache_position)"
        ),
        "without the inputs_embeds exception": "if $ids.shape[1] != cache_position.shape[0]:\n    $ids = $ids[:, cache_position]",
    },
    _check,
    covered_by=("slice-by-cache-position", "slice-by-next-sequence-length"),
)

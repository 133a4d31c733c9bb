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

from codemod.rules._pattern import Captures
from codemod.rules.base import Case, Context, EraNote, Kind, Match, NoOp, TemplateRule, Value, ValueOrigin, claim

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
_SYNCED_UNLESS_COMPILING = (
    "inputs_embeds is not None or (is_torchdynamo_compiling() or cache_position[-1] >= $ids.shape[1])"
)


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    detail = variant + ("" if ctx.under_past else "; not under a cache guard")
    # unguarded, the ids are sliced whether or not a cache comes in (RecurrentGemma keeps its own, which
    # generate() never sees): a mixin that slices only with a cache does not do that
    return claim(
        detail=detail,
        defines={ids: Value(ValueOrigin.IDS, "cache_position")},
        facets={} if ctx.under_past else {"guard": "none"},
    )


RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        "with the inputs_embeds exception": "if inputs_embeds is not None:" + _SLICE,
        "with the inputs_embeds and synced-GPUs exceptions": f"if {_SYNCED}:" + _SLICE,
        "with the inputs_embeds and synced-GPUs exceptions, unless compiling": f"if {_SYNCED_UNLESS_COMPILING}:"
        + _SLICE,
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

ERAS = (
    EraNote(
        "≤ 4.45",
        "the mixin only raises; the implementation `apply` hoists into it slices by `cache_position`, with "
        "the `inputs_embeds` exception",
    ),
    EraNote(
        "4.46 – 4.50",
        "slices in the method, with the `inputs_embeds` exception; 4.49 – 4.50 also slice the embeddings when "
        "the ids are empty",
    ),
    EraNote(
        "4.51 – 5.2",
        "slices in `_cache_dependant_input_preparation` (5.0 – 5.2 also when a cache is only about to be used)",
    ),
    EraNote("5.3 +", "no `cache_position`: the ids are sliced by `next_sequence_length` (PI104)"),
)

CASES = (
    Case(
        "with-exception",
        RULE.example,
        detail="with the inputs_embeds exception",
    ),
    Case(
        "synced-gpus",
        """
        if past_key_values is not None:
            if inputs_embeds is not None or cache_position[-1] >= input_ids.shape[1]:  # Exception 1 and 3
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        detail="with the inputs_embeds and synced-GPUs exceptions",
    ),
    Case(
        "synced-gpus-unless-compiling",
        """
        if past_key_values is not None:
            if inputs_embeds is not None or (is_torchdynamo_compiling() or cache_position[-1] >= input_ids.shape[1]):
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        detail="with the inputs_embeds and synced-GPUs exceptions, unless compiling",
    ),
    Case(
        "embeddings-only",
        """
        if past_key_values is not None:
            # only embeddings, no ids at all
            if inputs_embeds is not None and input_ids.shape[1] == 0:
                inputs_embeds = inputs_embeds[:, -cache_position.shape[0] :]
            elif inputs_embeds is not None or cache_position[-1] >= input_ids.shape[1]:
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        detail="embeddings sliced when there are no ids; inputs_embeds and synced-GPUs exceptions",
    ),
    Case(
        "helper-method",
        """
        if past_key_values is not None:
            inputs_embeds, input_ids = self._cache_dependant_input_preparation(input_ids, inputs_embeds, cache_position)
        """,
        detail="via _cache_dependant_input_preparation",
    ),
    Case(
        "without-exception",
        """
        if past_key_values is not None:
            if input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        detail="without the inputs_embeds exception",
    ),
    Case(
        "truthy-cache-guard",
        """
        if past_key_values:
            if input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        detail="without the inputs_embeds exception",
    ),
    Case(
        "unguarded-says-so",
        """
        if input_ids.shape[1] != cache_position.shape[0]:
            input_ids = input_ids[:, cache_position]
        """,
        detail="without the inputs_embeds exception; not under a cache guard",
        facets={"guard": "none"},
    ),
    Case(
        "reformatted",
        """
        if past_key_values is not None:
            # with embeddings the ids may be short
            if (inputs_embeds is not None):
                input_ids = input_ids[ : , - cache_position.shape[0] : ]
            elif (
                input_ids.shape[1]
                != cache_position.shape[0]
            ):
                input_ids = input_ids[:, cache_position,]
        """,
        detail="with the inputs_embeds exception",
    ),
    Case(
        "decoder-input-ids",
        """
        if past_key_values is not None:
            if inputs_embeds is not None:
                decoder_input_ids = decoder_input_ids[:, -cache_position.shape[0] :]
            elif decoder_input_ids.shape[1] != cache_position.shape[0]:
                decoder_input_ids = decoder_input_ids[:, cache_position]
        """,
        detail="with the inputs_embeds exception",
    ),
    NoOp(
        "another-variable",
        """
        if past_key_values is not None:
            if inputs_embeds is not None:
                attention_mask = attention_mask[:, -cache_position.shape[0] :]
            elif attention_mask.shape[1] != cache_position.shape[0]:
                attention_mask = attention_mask[:, cache_position]
        """,
        why="slicing another variable by cache_position is not slicing the ids",
        unrecognised="attention_mask = attention_mask[:, -cache_position.shape[0]:]",
    ),
    NoOp(
        "other-slice",
        """
        if past_key_values is not None:
            if input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, -1:]
        """,
        why="the slice has to index with cache_position, not merely compare against it: this one keeps the last token",
        unrecognised="if input_ids.shape[1] != cache_position.shape[0]",
    ),
)

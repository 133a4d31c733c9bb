"""PI163 cache-position-from-cache: derive `cache_position` from what the cache holds when the caller's cannot be trusted.

The generic implementation hoisted into a stub mixin (≤ 4.45) meets callers that give no
``cache_position`` (a composite asking its decoder) and ``generate(use_cache=False)`` for a model
whose forward caches anyway (it reads ``config.use_cache``): generate()'s positions then span every
token. Both happen to models with legacy tuple caches (those with Cache classes heed ``use_cache``):
there the cache's length says what is new, counted as the legacy overrides did, keeping the last
token when the ids are no longer than the cache.

Example::

    if isinstance(past_key_values, tuple) and inputs_embeds is None and (cache_position is None or kwargs.get("use_cache") is False):
        past_length = min(past_key_values[0][0].shape[2], input_ids.shape[1] - 1)
        cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        "legacy tuple cache, the last token kept": """
            if isinstance(past_key_values, tuple) and inputs_embeds is None and (cache_position is None or kwargs.get("use_cache") is False):
                past_length = min(past_key_values[0][0].shape[2], input_ids.shape[1] - 1)
                cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        """,
    },
    lambda captures, ctx, variant: claim(
        detail=variant, defines={"cache_position": Value(ValueOrigin.BEHAVIOUR, "cache-position-from-cache")}
    ),
    # an override slicing by the cache's own length does what this does, and more
    covered_by=("slice-by-past-length", "slice-by-cache-length"),
)

ERAS = (
    EraNote("≤ 4.45", "only the hoisted implementation does this, for legacy tuple caches; no release's mixin does"),
)

CASES = (
    Case(
        "formatted-over-lines",
        """
        if (
            isinstance(past_key_values, tuple)
            and inputs_embeds is None
            and (cache_position is None or kwargs.get("use_cache") is False)
        ):
            past_length = min(past_key_values[0][0].shape[2], input_ids.shape[1] - 1)
            cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        """,
        detail="legacy tuple cache, the last token kept",
    ),
    NoOp(
        "any-cache",
        """
        if inputs_embeds is None and (cache_position is None or kwargs.get("use_cache") is False):
            past_length = min(past_key_values[0][0].shape[2], input_ids.shape[1] - 1)
            cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        """,
        why="not only for legacy tuple caches: a Cache object cannot be indexed like one",
        unrecognised="if inputs_embeds is None and",
    ),
    NoOp(
        "no-token-kept",
        """
        if isinstance(past_key_values, tuple) and inputs_embeds is None and (cache_position is None or kwargs.get("use_cache") is False):
            past_length = past_key_values[0][0].shape[2]
            cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        """,
        why="without the min() no token is left when the ids are no longer than the cache",
        unrecognised="past_length = past_key_values[0][0].shape[2]",
    ),
)

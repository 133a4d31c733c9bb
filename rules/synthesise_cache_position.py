"""PI161 synthesise-cache-position: forward `cache_position`, or derive it from the cache when the model has no Cache classes.

The 4.46 mixin's first step: models with Cache classes get ``cache_position`` passed on; for the
others, a call outside ``generate`` that gives none gets one computed from the legacy cache, so
that slicing by ``cache_position`` works for every model.

Example::

    if self._supports_cache_class:
        model_inputs["cache_position"] = cache_position
    elif cache_position is None:
        past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        "forwarded only for models with Cache classes": """
            if self._supports_cache_class:
                model_inputs["cache_position"] = cache_position
            elif cache_position is None:
                past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
                cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        """,
    },
    lambda captures, ctx, variant: claim(
        detail=variant,
        outputs={"cache_position": Value(ValueOrigin.BEHAVIOUR, "synthesise-cache-position")},
        defines={"cache_position": Value(ValueOrigin.BEHAVIOUR, "synthesise-cache-position")},
        # the class attribute under which the key is passed: forward must take it there (soundness)
        facets={"passed_when": "_supports_cache_class"},
    ),
)

ERAS = (
    EraNote(
        "≤ 4.45",
        "the hoisted implementation forwards `cache_position` to models with Cache classes and derives it "
        "from the legacy cache for the others",
    ),
    EraNote("4.46 – 4.53", "the mixin's first step"),
    EraNote("4.54 +", "`cache_position` is always passed on"),
)

CASES = (
    Case(
        "forwarded-or-derived",
        """
        if self._supports_cache_class:
            model_inputs["cache_position"] = cache_position
        elif cache_position is None:
            past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
            cache_position = torch.arange(
                past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device
            )
        """,
        detail="forwarded only for models with Cache classes",
        facets={"passed_when": "_supports_cache_class"},
    ),
    NoOp(
        "half",
        """
        if self._supports_cache_class:
            model_inputs["cache_position"] = cache_position
        """,
        why="only half of the mixin's block",
        unrecognised="if self._supports_cache_class:",
    ),
)

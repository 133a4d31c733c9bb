"""PI171 state-space-cache: prepare a Mamba-style state cache (`cache_params`) instead of key/value caches.

After the first step only the last token is fed and the mask is dropped; on the first step
``cache_position`` is stretched to the convolution kernel's width. No generic mixin of the 4.x era
knows ``cache_params``, so such an override stays.

Example::

    if use_cache:
        # `cache_position` should have been initialized in `generate`
        if cache_position is None:
            raise ValueError(
                "`cache_position` should not be None as it should have been initialized in "
                "`model.generate`, you are responsible for passing in a valid `cache_position` if "
                "you are calling `prepare_inputs_for_generation` directly with `use_cache=True`"
            )
        if cache_position[0] > 0:
            input_ids = input_ids[:, -1].unsqueeze(-1)

            if attention_mask is not None:
                attention_mask = None

        else:
            # we initialize the `cache_position` to full size of `conv_states` at prefill stage
            cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

RULE = TemplateRule(
    __doc__,
    Kind.BESPOKE,
    {
        "last token after the first step; cache_position over the conv kernel": """
            if use_cache:
                if cache_position is None:
                    raise ValueError($_)
                if cache_position[0] > 0:
                    $ids = $ids[:, -1].unsqueeze(-1)
                    if attention_mask is not None:
                        attention_mask = None
                else:
                    cache_position = torch.arange(0, self.config.conv_kernel, device=$ids.device)
        """,
    },
    lambda captures, ctx, variant: claim(
        detail=variant,
        defines={
            captures.code("ids"): Value(ValueOrigin.IDS, "last token (state-space cache)"),
            "attention_mask": Value(ValueOrigin.BEHAVIOUR, "state-space-cache"),
            "cache_position": Value(ValueOrigin.BEHAVIOUR, "state-space-cache"),
        },
    ),
)

ERAS = (EraNote("4.x", "no mixin knows `cache_params`: such an override stays"),)

CASES = (
    Case(
        "conv-kernel",
        """
        if use_cache:
            # generate sets cache_position
            if cache_position is None:
                raise ValueError("`cache_position` is needed with `use_cache=True`")
            if cache_position[0] > 0:
                input_ids = input_ids[:, -1].unsqueeze(-1)

                if attention_mask is not None:
                    attention_mask = None
            else:
                # the whole convolution window on the first step
                cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)
        """,
        detail="last token after the first step; cache_position over the conv kernel",
    ),
    NoOp(
        "no-check",
        """
        if use_cache:
            if cache_position[0] > 0:
                input_ids = input_ids[:, -1].unsqueeze(-1)
                if attention_mask is not None:
                    attention_mask = None
            else:
                cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)
        """,
        why="without the check that generate passed cache_position",
        unrecognised="if use_cache:",
    ),
)

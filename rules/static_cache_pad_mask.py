"""PI132 static-cache-pad-mask: pad the 2D attention mask with zeros to a static cache's length.

Bloom's way to give a compiled forward a fixed-shape mask: the 2D mask is extended with zeros up
to ``get_max_length()`` instead of being turned into a 4D causal mask. No generic mixin does this.

Example::

    if isinstance(past_key_values, StaticCache) and attention_mask is not None:
        target_length = past_key_values.get_max_length()
        batch_size, seq_length = attention_mask.shape
        diff = target_length - seq_length

        new_attn_mask = torch.zeros(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
        attention_mask = torch.cat(
            [attention_mask, new_attn_mask],
            dim=-1,
        )
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

RULE = TemplateRule(
    __doc__,
    Kind.BESPOKE,
    {
        "zeros up to the cache length": """
            if isinstance($p, StaticCache) and attention_mask is not None:
                target_length = $p.$length()
                batch_size, seq_length = attention_mask.shape
                diff = target_length - seq_length
                new_attn_mask = torch.zeros(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
                attention_mask = torch.cat([attention_mask, new_attn_mask], dim=-1)
        """
    },
    lambda captures, ctx, variant: claim(
        detail=variant, defines={"attention_mask": Value(ValueOrigin.BEHAVIOUR, "static-cache-pad-mask")}
    ),
)

ERAS = (EraNote("all", "no mixin pads the 2D mask: such an override stays"),)

CASES = (
    Case(
        "zeros-to-the-cache-length",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask is not None:
            target_length = past_key_values.get_max_cache_shape()
            batch_size, seq_length = attention_mask.shape
            diff = target_length - seq_length

            new_attn_mask = torch.zeros(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
            attention_mask = torch.cat(
                [attention_mask, new_attn_mask],
                dim=-1,
            )
        """,
        detail="zeros up to the cache length",
    ),
    NoOp(
        "ones",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask is not None:
            target_length = past_key_values.get_max_length()
            batch_size, seq_length = attention_mask.shape
            diff = target_length - seq_length
            new_attn_mask = torch.ones(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
            attention_mask = torch.cat([attention_mask, new_attn_mask], dim=-1)
        """,
        why="padding with ones is not Bloom's zero padding",
        unrecognised="torch.ones",
    ),
)

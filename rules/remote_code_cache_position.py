"""PI162 remote-code-cache-position: create `cache_position` for remote-code models that still expect it (5.x).

Example::

    if self.is_remote_code() and "cache_position" in set(inspect.signature(self.forward).parameters):
        logger.warning_once("The remote code model you are currently using seems to expect `cache_position`.")
        past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
        cache_position = torch.arange(sequence_length, device=input_ids.device) + past_seen_tokens
        model_inputs["cache_position"] = cache_position
"""

from rules.base import Kind, TemplateRule, Value, claim

RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        "from the cache's length": """
            if self.is_remote_code() and "cache_position" in set(inspect.signature(self.forward).parameters):
                logger.warning_once($_)
                past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
                cache_position = torch.arange(sequence_length, device=input_ids.device) + past_seen_tokens
                model_inputs["cache_position"] = cache_position
        """,
    },
    lambda captures, ctx, variant: claim(
        detail=variant, outputs={"cache_position": Value("behaviour", "remote-code-cache-position")}
    ),
)

"""PI162 remote-code-cache-position: create `cache_position` for remote-code models that still expect it (5.x).

Example::

    if self.is_remote_code() and "cache_position" in set(inspect.signature(self.forward).parameters):
        logger.warning_once("The remote code model you are currently using seems to expect `cache_position`.")
        past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
        cache_position = torch.arange(sequence_length, device=input_ids.device) + past_seen_tokens
        model_inputs["cache_position"] = cache_position
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

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
        detail=variant, outputs={"cache_position": Value(ValueOrigin.BEHAVIOUR, "remote-code-cache-position")}
    ),
)

ERAS = (EraNote("5.3 +", "the mixin creates `cache_position` for remote code whose `forward` still takes it"),)

CASES = (
    Case(
        "another-warning",
        """
        if self.is_remote_code() and "cache_position" in set(inspect.signature(self.forward).parameters):
            logger.warning_once("remote code expects cache_position")
            past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(sequence_length, device=input_ids.device) + past_seen_tokens
            model_inputs["cache_position"] = cache_position
        """,
        detail="from the cache's length",
    ),
    NoOp(
        "every-model",
        """
        if "cache_position" in set(inspect.signature(self.forward).parameters):
            logger.warning_once("remote code expects cache_position")
            past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(sequence_length, device=input_ids.device) + past_seen_tokens
            model_inputs["cache_position"] = cache_position
        """,
        why="not only for remote code: every model whose forward takes cache_position would get these",
        unrecognised="if 'cache_position' in set(inspect.signature(self.forward).parameters):",
    ),
    NoOp(
        "from-zero",
        """
        if self.is_remote_code() and "cache_position" in set(inspect.signature(self.forward).parameters):
            logger.warning_once("remote code expects cache_position")
            past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
            cache_position = torch.arange(sequence_length, device=input_ids.device)
            model_inputs["cache_position"] = cache_position
        """,
        why="positions counted from 0 on every step, not from what the cache holds",
        unrecognised="if self.is_remote_code()",
    ),
)

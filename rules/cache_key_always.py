"""PI198 cache-key-always: pass the cache under its key even when there is none yet (None on the first step).

Plumbing: a forward sees ``past_key_values=None`` either way. It matters to a caller that reads the
key from the prepared dict: 4.45's composite models (``EncoderDecoderModel`` and kin) take
``decoder_inputs["past_key_values"]`` from their decoder's prepared inputs, so the hoisted
implementation keeps the key for models whose forward takes a cache.

Example::

    if "past_key_values" in inspect.signature(self.forward).parameters:
        model_inputs["past_key_values"] = past_key_values
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, claim

RULE = TemplateRule(
    __doc__,
    Kind.PLUMBING,
    {
        "when the forward takes it": """
            if "past_key_values" in inspect.signature(self.forward).parameters:
                model_inputs["past_key_values"] = past_key_values
        """,
    },
    # no output of its own: only a forward that takes the cache gets the key, and None is what it
    # sees without one; the cache itself is output where the ids are sliced by it
    lambda captures, ctx, variant: claim(detail=variant),
)

ERAS = (
    EraNote(
        "≤ 4.45",
        "the hoisted implementation keeps the key for models whose `forward` takes a cache (4.45's composites read it)",
    ),
)

CASES = (
    Case(
        "when-the-forward-takes-it",
        RULE.example,
        detail="when the forward takes it",
    ),
    NoOp(
        "another-parameter",
        """
        if "cache_params" in inspect.signature(self.forward).parameters:
            model_inputs["past_key_values"] = past_key_values
        """,
        why="the test asks for another parameter than the one the key is passed as",
        unrecognised="if 'cache_params' in inspect.signature(self.forward).parameters:",
    ),
)

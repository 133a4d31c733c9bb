"""PI193 forward-kwargs: pass every keyword argument not already set on to the model.

Example::

    for key, value in kwargs.items():
        if key not in model_inputs:
            model_inputs[key] = value
"""

from codemod.rules._pattern import Captures
from codemod.rules.base import Case, Context, EraNote, Kind, Match, NoOp, TemplateRule, claim


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    if captures.code("kw") != ctx.var_kwargs or captures.code("d") not in ctx.output_names:
        return None
    if "never" in captures:
        never = captures.nodes["never"]
        keys = [e.value.evaluated_value for e in getattr(never, "elements", ()) if hasattr(e.value, "evaluated_value")]
        facets = {"never": ",".join(keys)}
        if "first_only" in captures:
            facets["first_step_only"] = captures.code("first_only")
        return claim(detail="except " + ", ".join(keys), forwards_kwargs=True, facets=facets)
    return claim(detail=variant, forwards_kwargs=True)


RULE = TemplateRule(
    __doc__,
    Kind.PLUMBING,
    {
        "keys not yet set": """
            for key, value in $kw.items():
                if key not in $d:
                    $d[key] = value
        """,
        "except some keys": """
            kwargs_to_avoid_forwarding = $never
            for key, value in $kw.items():
                if key not in $d and key not in kwargs_to_avoid_forwarding:
                    $d[key] = value
        """,
        "except some keys; multimodal inputs only on the first iteration": """
            kwargs_to_avoid_forwarding = $never
            for key, value in $kw.items():
                if key in kwargs_to_avoid_forwarding:
                    continue
                elif key in $first_only and (not is_first_iteration and $kw.get("use_cache", True)):
                    continue
                elif key not in $d:
                    $d[key] = value
        """,
    },
    _check,
)

ERAS = (
    EraNote("4.46 – 5.2", "every keyword argument not yet set is forwarded, `labels` dropped afterwards"),
    EraNote(
        "5.3 +",
        "never `labels` or `next_sequence_length`; 5.23 also drops multimodal inputs after the first iteration",
    ),
)

CASES = (
    Case(
        "keys-not-yet-set",
        """
        # everything else goes to the model
        for key, value in kwargs.items():
            if key not in model_inputs:
                model_inputs[key] = value  # as given
        """,
        detail="keys not yet set",
    ),
    Case(
        "except-some-keys",
        """
        kwargs_to_avoid_forwarding = ("labels", "next_sequence_length")
        for key, value in kwargs.items():
            if key not in model_inputs and key not in kwargs_to_avoid_forwarding:
                model_inputs[key] = value
        """,
        detail="except labels, next_sequence_length",
        facets={"never": "labels,next_sequence_length"},
    ),
    NoOp(
        "other-dict",
        """
        for key, value in extra.items():
            if key not in model_inputs:
                model_inputs[key] = value
        """,
        why="forwarding from a dict that is not **kwargs",
        unrecognised="for key, value in extra.items():",
    ),
    NoOp(
        "not-the-output",
        """
        for key, value in kwargs.items():
            if key not in inputs:
                inputs[key] = value
        """,
        why="into a dict that is not returned",
        unrecognised="for key, value in kwargs.items():",
    ),
)

"""PI193 forward-kwargs: pass every keyword argument not already set on to the model.

Example::

    for key, value in kwargs.items():
        if key not in model_inputs:
            model_inputs[key] = value
"""

from rules.base import Kind, TemplateRule, claim


def _check(captures, ctx, variant):
    if captures.code("kw") != ctx.var_kwargs or captures.code("d") not in ctx.output_names:
        return None
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
    },
    _check,
)

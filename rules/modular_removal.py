"""PI197 raises: the method only raises (in a modular file: the class removes the inherited method).

``utils/modular_model_converter.py`` drops an inherited method whose body raises, so the generated
class falls back to the mixin. Deleting such a stub would bring the parent's override back (the
modular trap). Outside modular files, a model whose method raises cannot generate.

Example::

    raise AttributeError("Not needed for this model")
"""

from codemod.rules.base import Case, Kind, NoOp, TemplateRule, claim

RULE = TemplateRule(
    __doc__,
    Kind.BESPOKE,
    {
        "AttributeError": "raise AttributeError($_)",
        "NotImplementedError": "raise NotImplementedError($_)",
    },
    lambda captures, ctx, variant: claim(detail=f"raises {variant}", returns=True),
)

CASES = (
    Case(
        "not-implemented",
        """
        raise NotImplementedError("use the text model")
        """,
        detail="raises NotImplementedError",
    ),
    NoOp(
        "value-error",
        """
        raise ValueError("not supported")
        """,
        why="other exceptions are not the converter's removal marker",
        unrecognised="raise ValueError",
    ),
)

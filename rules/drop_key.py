"""PI194 drop-key: remove a key from the prepared inputs.

Example::

    model_inputs.pop("labels", None)
"""

import libcst as cst
import libcst.matchers as m

from codemod.rules._pattern import string_key
from codemod.rules.base import Case, Context, Kind, Match, NoOp, Rule, Statements, parse_docstring

#: the facet of a drop that raises KeyError where the key is missing (``del d[key]``, ``d.pop(key)``)
_RAISES = {"missing": "raises"}


class DropKey(Rule):
    kind = Kind.PLUMBING

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if isinstance(statement, cst.For):
            return self._loop(statement, ctx)
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        call = None
        if isinstance(small, cst.Expr):
            call = small.value
        elif isinstance(small, cst.Assign) and m.matches(small.targets[0].target, m.Name("_")):
            call = small.value
        elif (
            isinstance(small, cst.Del)
            and isinstance(small.target, cst.Subscript)
            and isinstance(small.target.value, cst.Name)
        ):
            key = _subscript_key(small.target)
            if key is not None and small.target.value.value in ctx.output_names:
                return Match(1, self.name, key, drops=(key,), facets=_RAISES)
            return None
        names = m.OneOf(*(m.Name(n) for n in (*ctx.output_names, *([ctx.var_kwargs] if ctx.var_kwargs else []))))
        if not isinstance(call, cst.Call) or not m.matches(
            call, m.Call(func=m.Attribute(value=names, attr=m.Name("pop")))
        ):
            return None
        key = string_key(call.args[0].value) if call.args else None
        if key is None:
            return None
        # ``pop(key)`` with no default raises where the key is missing, as ``del`` does
        return Match(1, self.name, key, drops=(key,), facets=_RAISES if len(call.args) == 1 else {})

    def _loop(self, loop: cst.For, ctx: Context) -> Match | None:
        """``for key in ("a", "b"): model_inputs.pop(key, None)``: several keys removed (a reduction's form)."""
        if (
            loop.orelse is not None
            or not isinstance(loop.target, cst.Name)
            or not isinstance(loop.iter, (cst.Tuple, cst.List))
        ):
            return None
        keys = [string_key(e.value) for e in loop.iter.elements]
        if (
            not keys
            or any(k is None for k in keys)
            or not isinstance(loop.body, cst.IndentedBlock)
            or len(loop.body.body) != 1
        ):
            return None
        pop = m.SimpleStatementLine(
            body=[
                m.Expr(
                    m.Call(
                        func=m.Attribute(value=m.OneOf(*(m.Name(n) for n in ctx.output_names)), attr=m.Name("pop")),
                        args=[m.Arg(m.Name(loop.target.value)), m.Arg(m.Name("None"))],
                    )
                )
            ]
        )
        if not m.matches(loop.body.body[0], pop):
            return None
        dropped = tuple(k for k in keys if k is not None)
        return Match(1, self.name, ", ".join(dropped), drops=dropped)


def _subscript_key(node: cst.Subscript) -> str | None:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return string_key(node.slice[0].slice.value)
    return None


RULE = DropKey()

#: what an override that only does this becomes (rules.doc)
BECOMES = "deleted where the mixin drops the key too (`labels`); otherwise reduced: `super()`, then the key removed"

CASES = (
    Case(
        "pop",
        RULE.example,
        detail="labels",
    ),
    Case(
        "pop-assigned",
        """
        _ = model_inputs.pop('labels')
        """,
        detail="labels",
        facets={"missing": "raises"},
    ),
    Case(
        "loop",
        """
        for key in ("position_ids", "token_type_ids"):
            model_inputs.pop(key, None)
        """,
        detail="position_ids, token_type_ids",
    ),
    Case(
        "del",
        """
        del model_inputs["token_type_ids"]
        """,
        detail="token_type_ids",
        facets={"missing": "raises"},
    ),
    NoOp(
        "variable-key",
        """
        model_inputs.pop(name, None)
        """,
        why="a key the rule cannot read (a variable)",
        unrecognised="model_inputs.pop(name, None)",
    ),
    NoOp(
        "other-dict",
        """
        extra.pop("labels", None)
        """,
        why="a dict the rule does not know (not the output dict)",
        unrecognised="extra.pop",
    ),
    NoOp(
        "loop-that-does-more",
        """
        for key in ("position_ids", "token_type_ids"):
            model_inputs[key] = model_inputs[key][:, -1:]
        """,
        why="a loop over keys that does anything but remove them",
        unrecognised="for key in ('position_ids', 'token_type_ids'):",
    ),
)

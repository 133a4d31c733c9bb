"""PI181 delegate: take the prepared inputs from another implementation (`super()` or a sub-model).

``super().prepare_inputs_for_generation(...)`` is the mixin's generic version (an override that
only adds or adjusts keys after it is already reduced); ``self.language_model.prepare_inputs_for_generation``
is the text model's own, which the composite model's mixin replaces only where the two agree;
``self.base_model_prepare_inputs_for_generation(*args, **kwargs)`` is a bound method stored on the
instance (peft keeps the wrapped model's that way), whose target only the running code knows.
Parameters the call is not given are withheld from the result unless added back.

Example::

    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)
"""

from typing import NamedTuple

import libcst as cst
import libcst.matchers as m

from codemod.analyse.analysis import Delegation
from codemod.contracts import ValueOrigin
from codemod.rules._pattern import node_code
from codemod.rules.base import Case, Context, Kind, Match, NoOp, Rule, Statements, Value, parse_docstring
from codemod.rules.values import value_of

_METHOD = "prepare_inputs_for_generation"


class Delegate(Rule):
    kind = Kind.PLUMBING

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        found = _delegating_call(statements[start], ctx)
        if found is None:
            return None
        call, returns = found
        delegated = _target(call)
        if delegated is None:
            return None
        target, delegation, args = delegated
        given = _arguments(args, ctx)
        withheld = tuple(
            p
            for p in ctx.params
            if p not in given.passed
            and p != ctx.var_kwargs
            and p != ctx.ids_param
            and (p in ctx.keyword_only or not given.spreads_args)
        )
        details = [f"from {target}"]
        if given.adjusted:
            details.append("adjusts " + ", ".join(f"{k}={v}" for k, v in given.adjusted.items()))
        if withheld:
            details.append("not given " + ", ".join(withheld))
        return Match(
            1,
            self.name,
            "; ".join(details),
            outputs=given.adjusted,
            resets_outputs=True,
            forwards_kwargs=given.spreads_kwargs,
            delegates_to=target,
            returns=returns,
            withholds=withheld,
            delegation=delegation,
        )


def _delegating_call(statement: cst.CSTNode, ctx: Context) -> tuple[cst.Call, bool] | None:
    """The call a ``return <call>`` or ``<dict> = <call>`` line makes, and whether it returns it."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    call: cst.BaseExpression | None
    if isinstance(small, cst.Return):
        call = small.value
    elif (
        isinstance(small, cst.Assign)
        and len(small.targets) == 1
        and m.matches(small.targets[0].target, m.OneOf(*(m.Name(n) for n in ctx.output_names)))
    ):
        call = small.value
    else:
        return None
    if not isinstance(call, cst.Call):
        return None
    return call, isinstance(small, cst.Return)


def _target(call: cst.Call) -> tuple[str, Delegation, list[cst.Arg]] | None:
    """Who ``call`` asks for the prepared inputs (``super``, a sub-model, a stored method), how, and with which
    arguments; None when it asks nothing this rule knows."""
    if m.matches(call, m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name(m.MatchIfTrue(_stored_method))))):
        return node_code(call.func), Delegation.STORED_METHOD, list(call.args)
    if not isinstance(call.func, cst.Attribute) or not m.matches(call.func, m.Attribute(attr=m.Name(_METHOD))):
        return None
    owner = call.func.value
    args = list(call.args)
    if m.matches(owner, m.Call(func=m.Name("super"), args=[])):
        return "super", Delegation.SUPER, args
    if m.matches(owner, m.Name("GenerationMixin")) and args and m.matches(args[0].value, m.Name("self")):
        # The mixin's own method, skipping any parent's override (modular files do this so that
        # the converter does not inline the parent's version).
        return "super", Delegation.SUPER, args[1:]
    if m.matches(owner, m.Attribute(value=m.Name("self"))):
        return node_code(owner), Delegation.SUBMODEL, args
    return None


class _Given(NamedTuple):
    """What a delegating call is given: the parameters passed on, the keys given another value, and whether it
    spreads ``**kwargs`` (the override's own) and ``*args``."""

    passed: set[str]
    adjusted: dict[str, Value]
    spreads_kwargs: bool
    spreads_args: bool


def _arguments(args: list[cst.Arg], ctx: Context) -> _Given:
    passed: set[str] = set()
    adjusted: dict[str, Value] = {}
    spreads_kwargs = spreads_args = False
    for arg in args:
        if arg.star == "**":
            spreads_kwargs = spreads_kwargs or m.matches(arg.value, m.Name(ctx.var_kwargs or ""))
            continue
        if arg.star == "*":
            spreads_args = True
            continue
        value = value_of(arg.value, ctx)
        if isinstance(arg.value, cst.Name):
            passed.add(arg.value.value)
        if arg.keyword is not None:
            passed.add(arg.keyword.value)
            if value != ctx.value_of(arg.keyword.value) and value.origin is not ValueOrigin.IDS:
                adjusted[arg.keyword.value] = value
    return _Given(passed, adjusted, spreads_kwargs, spreads_args)


def _stored_method(name: str) -> bool:
    """``base_model_prepare_inputs_for_generation``: an attribute named after the method, not the method."""
    return name != _METHOD and _METHOD in name


RULE = Delegate()

#: what an override that only does this becomes (rules.doc)
BECOMES = (
    "deleted when it asks `super()` and changes nothing; a sub-model's method of the release becomes `super()` "
    "(reduced); a method stored on the instance, or a sub-model outside transformers, is kept"
)

CASES = (
    Case(
        "super",
        """
        model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
        """,
        detail="from super; not given past_key_values, attention_mask, inputs_embeds, cache_position, position_ids, use_cache, token_type_ids, pixel_values, image_sizes, is_first_iteration, next_sequence_length, cache_params",
    ),
    Case(
        "return-super",
        """
        return super().prepare_inputs_for_generation(*args, **kwargs)
        """,
        detail="from super",
    ),
    Case(
        "sub-model",
        """
        model_inputs = self.language_model.prepare_inputs_for_generation(
            input_ids,
            past_key_values=past_key_values,
            **kwargs,
        )
        """,
        detail="from self.language_model; not given attention_mask, inputs_embeds, cache_position, position_ids, use_cache, token_type_ids, pixel_values, image_sizes, is_first_iteration, next_sequence_length, cache_params",
    ),
    Case(
        "mixin-directly",
        """
        model_inputs = GenerationMixin.prepare_inputs_for_generation(self, input_ids, **kwargs)
        """,
        detail="from super; not given past_key_values, attention_mask, inputs_embeds, cache_position, position_ids, use_cache, token_type_ids, pixel_values, image_sizes, is_first_iteration, next_sequence_length, cache_params",
    ),
    Case(
        "adjusted",
        """
        model_inputs = super().prepare_inputs_for_generation(input_ids, attention_mask=None, **kwargs)
        """,
        detail="from super; adjusts attention_mask=none; not given past_key_values, inputs_embeds, cache_position, position_ids, use_cache, token_type_ids, pixel_values, image_sizes, is_first_iteration, next_sequence_length, cache_params",
    ),
    NoOp(
        "foreign-object",
        """
        model_inputs = helper.prepare_inputs_for_generation(input_ids, **kwargs)
        """,
        why="another object's method is not a delegation to this model's mixin or sub-model",
        unrecognised="helper.prepare_inputs_for_generation",
    ),
    NoOp(
        "not-the-output",
        """
        other = super().prepare_inputs_for_generation(input_ids, **kwargs)
        """,
        why="the delegated result is not the output dict (another variable)",
        unrecognised="other = super()",
    ),
)

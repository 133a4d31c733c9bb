"""Where an expression's value comes from, as far as the recognisers can tell (a ``Value``)."""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from codemod.contracts import ValueOrigin
from codemod.rules._pattern import node_code, string_key
from codemod.rules.base import Context, Value
from codemod.rules.guards import guard_of

_CONTIGUOUS = m.Call(
    func=m.Attribute(attr=m.Name("contiguous") | m.Name("clone")),
)


def kwargs_key(node: cst.BaseExpression, ctx: Context) -> str | None:
    """``k`` for ``kwargs.get("k", ...)``, ``kwargs.pop("k", ...)`` or ``kwargs["k"]``."""
    if ctx.var_kwargs is None:
        return None
    if m.matches(node, m.Call(func=m.Attribute(value=m.Name(ctx.var_kwargs), attr=m.Name("get") | m.Name("pop")))):
        assert isinstance(node, cst.Call)
        if node.args and node.args[0].keyword is None:
            return string_key(node.args[0].value)
    if m.matches(node, m.Subscript(value=m.Name(ctx.var_kwargs))):
        assert isinstance(node, cst.Subscript)
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return string_key(node.slice[0].slice.value)
    return None


def entry(name: str, key: str) -> str:
    """The symbol name of ``name["key"]``: a dict entry a rule describes (``rules.decoder_delegate``)."""
    return f'{name}["{key}"]'


def _entry(node: cst.BaseExpression) -> str | None:
    """``entry(name, key)`` for a string subscript of a name, else None."""
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and len(node.slice) == 1:
        index = node.slice[0].slice
        key = string_key(index.value) if isinstance(index, cst.Index) else None
        if key is not None:
            return entry(node.value.value, key)
    return None


def value_of(node: cst.BaseExpression, ctx: Context) -> Value:
    if isinstance(node, cst.Name):
        if node.value == "None":
            return Value(ValueOrigin.NONE)
        if node.value in ("True", "False"):
            return Value(ValueOrigin.CONST, node.value)
        return ctx.value_of(node.value)
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return Value(ValueOrigin.CONST, node_code(node))
    if m.matches(node, m.Attribute(value=m.Attribute(value=m.Name("self"), attr=m.Name("config")))):
        return Value(ValueOrigin.CONST, node_code(node))  # a config setting is fixed for the model
    entry = _entry(node)
    if entry is not None and entry in ctx.symbols:
        return ctx.symbols[entry]  # ``result["key"]`` of a dict a rule described (``rules.decoder_delegate``)
    key = kwargs_key(node, ctx)
    if key is not None:
        return ctx.value_of(key) if key in ctx.symbols else Value(ValueOrigin.PARAM, key)
    if m.matches(node, _CONTIGUOUS):
        assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        inner = value_of(node.func.value, ctx)
        if inner.origin is ValueOrigin.IDS:
            return Value(ValueOrigin.IDS, f"{inner.name}, contiguous")
        return inner
    if isinstance(node, cst.IfExp):
        guards = guard_of(node.test)
        if guards is not None and m.matches(node.orelse, m.Name("None")):
            value = value_of(node.body, ctx)
            step = _step(guards[0])
            if step and value.origin is ValueOrigin.PARAM:
                return Value(step, value.name)
        if guards is not None and m.matches(node.body, m.Name("None")):
            value = value_of(node.orelse, ctx)
            step = _step(guards[1])
            if step and value.origin is ValueOrigin.PARAM:
                return Value(step, value.name)
    return Value(ValueOrigin.EXPR, node_code(node))


def _step(guard: str) -> ValueOrigin | None:
    """The step a guard holds on: first-step or later-step (also the names of ``Context.step``)."""
    if guard in ("first-step", "no-past"):
        return ValueOrigin.FIRST_STEP
    if guard in ("later-step", "past-not-none", "past-truthy"):
        return ValueOrigin.LATER_STEP
    return None


def step_value(value: Value, ctx: Context) -> Value:
    """A parameter assigned under a step guard holds only on that step."""
    guard = ctx.step or (ctx.guards[-1] if ctx.guards else None)
    step = _step(guard) if guard else None
    if step and value.origin is ValueOrigin.PARAM:
        return Value(step, value.name)
    if step and value.origin is ValueOrigin.NONE:
        return Value(ValueOrigin.NONE, step.value)  # None on that step only
    return value

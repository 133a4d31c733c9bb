"""The ``if`` tests the engine understands, so that it can look inside the blocks they guard.

A guard is named by what it says about the decoding step:

- ``past-not-none`` / ``past-truthy``: there is a cache (``past_key_values is not None`` /
  ``if past_key_values:``; an empty ``DynamicCache`` is falsy, so the two differ on the first step
  of a model with Cache classes);
- ``past-or-use-cache``: there is a cache, or one is being used (the 5.0 – 5.2 mixin slices under
  ``past_key_values is not None or use_cache``, for stateful models that build their cache later);
- ``no-past``: there is no cache yet;
- ``first-step`` / ``later-step``: the first forward pass or a later one (``cache_position[0] == 0``,
  ``is_first_iteration`` ...);
- ``present:NAME`` / ``absent:NAME``: ``NAME is not None`` / ``NAME is None`` (or ``kwargs.get("NAME")``).

``guard_of(test)`` returns the guards of the ``if`` branch and of the ``else`` branch, or ``None``
when the test is not a guard (then only a rule that knows the whole statement can claim it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst
import libcst.matchers as m

from codemod.rules._pattern import Template, string_key

if TYPE_CHECKING:
    from codemod.rules.base import Context

PAST_NAMES = ("past_key_values", "past", "past_key_value")

_ATOMS: Sequence[tuple[str, str, str]] = (
    # (template, guard of the if-branch, guard of the else-branch)
    ("$p is not None", "past-not-none", "no-past"),
    ("$p is None", "no-past", "past-not-none"),
    ("$p", "past-truthy", "no-past"),
    ("not $p", "no-past", "past-truthy"),
    ("$p is not None or use_cache", "past-or-use-cache", "no-past"),
    ("cache_position[0] == 0", "first-step", "later-step"),
    ("cache_position[0] != 0", "later-step", "first-step"),
    ("cache_position[0] > 0", "later-step", "first-step"),
    ("is_first_iteration", "first-step", "later-step"),
    ("not is_first_iteration", "later-step", "first-step"),
    # Without a cache every step sees the whole sequence, so "first step or no cache" is the step on
    # which extra inputs must be passed: the same guard for our purposes.
    ("is_first_iteration or not use_cache", "first-step", "later-step"),
    ("is_first_iteration or not $kw.get('use_cache', True)", "first-step", "later-step"),
    ("not is_first_iteration and use_cache", "later-step", "first-step"),
    ("use_cache and not is_first_iteration", "later-step", "first-step"),
    ("$x is not None", "present", "absent"),
    ("$x is None", "absent", "present"),
    # a key of ``**kwargs`` tested as a parameter would be (a reduction's "None when the caller gives it")
    ("$kw.get($k) is not None", "present", "absent"),
    ("$kw.get($k) is None", "absent", "present"),
)
_COMPILED = tuple((Template.expression(t), yes, no) for t, yes, no in _ATOMS)


def guard_of(test: cst.BaseExpression) -> tuple[str, str] | None:
    """``(if_guard, else_guard)`` for a test the engine understands, else ``None``."""
    for template, yes, no in _COMPILED:
        captures = template.match_expression(test)
        if captures is None:
            continue
        if "p" in captures:
            if captures.code("p") not in PAST_NAMES:
                continue
        if "k" in captures:
            key, kwargs = string_key(captures.nodes["k"]), captures.nodes["kw"]
            # the dict must be a ``**kwargs`` by its name (``kwargs``, ``model_kwargs``): ``config.get(...)`` is no input
            if key is None or not (isinstance(kwargs, cst.Name) and kwargs.value.endswith("kwargs")):
                continue
            return f"{yes}:{key}", f"{no}:{key}"
        if "x" in captures:
            name = captures.nodes["x"]
            if not isinstance(name, cst.Name):
                continue
            if name.value in PAST_NAMES:  # handled by the past atoms above
                continue
            return f"{yes}:{name.value}", f"{no}:{name.value}"
        return yes, no
    return None


#: a test that holds only when ``**kwargs`` (``$kw``) carries the keyword ``$k``
_IN_KWARGS = tuple(
    Template.expression(code)
    for code in (
        "$kw.get($k) is not None",
        "$kw.get($k, None) is not None",
        "$k in $kw",
        "$kw.get($k)",
        "$kw.get($k, None)",
    )
)


def never_true(test: cst.BaseExpression, ctx: Context) -> bool:
    """Whether ``test`` can never hold: an ``and`` of conditions one of which asks ``**kwargs`` for a keyword the
    signature names (4.45's Qwen2-Audio: ``if input_features is not None and kwargs.get("attention_mask") is not
    None``, with ``attention_mask`` a parameter). Python binds such a keyword to the parameter, never to ``**kwargs``;
    only a positional-only parameter's name may reach it."""
    named = set(ctx.params) - {ctx.var_kwargs} - set(ctx.positional_only)
    for conjunct in _conjuncts(test):
        for template in _IN_KWARGS:
            captures = template.match_expression(conjunct)
            if captures is None:
                continue
            kwargs = captures.nodes["kw"]
            if (
                isinstance(kwargs, cst.Name)
                and kwargs.value == ctx.var_kwargs
                and string_key(captures.nodes["k"]) in named
            ):
                return True
    return False


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The conditions an ``and`` joins (however nested), or ``test`` alone."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def never_runs(statement: cst.CSTNode, ctx: Context) -> bool:
    """Whether ``statement`` changes nothing: an ``if`` without an ``else`` whose test never holds (``never_true``) and
    calls nothing but ``**kwargs``' ``get`` (what the test evaluates before it fails could otherwise do something)."""
    if not isinstance(statement, cst.If) or statement.orelse is not None or not never_true(statement.test, ctx):
        return False
    lookup = m.Call(func=m.Attribute(value=m.Name(ctx.var_kwargs or ""), attr=m.Name("get")))
    return all(m.matches(call, lookup) for call in m.findall(statement.test, m.Call()))

"""PI190 output-dict: build, update and return the dict of model inputs.

Plumbing: records which keys the override returns and where each value comes from (a parameter,
the sliced ids, a value computed by another behaviour, a literal, or a parameter only on the first
step). A dict that does not include ``**kwargs`` is *closed*: keys it does not list are dropped,
where the mixin would forward them.

Example::

    model_inputs = {"input_ids": input_ids}
    model_inputs.update({"past_key_values": past_key_values, "use_cache": kwargs.get("use_cache")})
    model_inputs["attention_mask"] = attention_mask
    return model_inputs
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from codemod.contracts import ValueOrigin
from codemod.rules._pattern import node_code, string_key
from codemod.rules.base import Case, Context, Kind, Match, NoOp, Rule, Statements, Value, parse_docstring
from codemod.rules.values import step_value, value_of


def _dict_items(node: cst.Dict, ctx: Context) -> tuple[dict[str, Value], dict[str, str], bool] | None:
    """Values and code of a dict literal with string keys; the flag says ``**kwargs`` is spread in."""
    items: dict[str, Value] = {}
    codes: dict[str, str] = {}
    spreads_kwargs = False
    for element in node.elements:
        if not isinstance(element, cst.DictElement):  # a StarredDictElement (``**kwargs``)
            if ctx.var_kwargs and m.matches(element.value, m.Name(ctx.var_kwargs)):
                spreads_kwargs = True
                continue
            return None
        key = string_key(element.key)
        if key is None:
            return None
        items[key] = step_value(value_of(element.value, ctx), ctx)
        codes[key] = node_code(element.value)
    return items, codes, spreads_kwargs


def _key(node: cst.BaseExpression, ctx: Context) -> str | None:
    """A string key, or a variable holding one (``attention_mask_key``, see rules.key_variable)."""
    if isinstance(node, cst.Name) and ctx.value_of(node.value).origin is ValueOrigin.KEY:
        return ctx.value_of(node.value).name
    return string_key(node)


class OutputDict(Rule):
    kind = Kind.PLUMBING

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        small = statement.body[0]
        if isinstance(small, cst.Return) and small.value is not None:
            return self._returned(small.value, ctx)
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            return self._assigned(small.targets[0].target, small.value, ctx)
        if not isinstance(small, cst.Expr) or not isinstance(small.value, cst.Call):
            return None
        return self._updated(small.value, ctx)

    def _returned(self, value: cst.BaseExpression, ctx: Context) -> Match | None:
        """``return {...}`` / ``return model_inputs``."""
        if isinstance(value, cst.Dict):
            parsed = _dict_items(value, ctx)
            if parsed is None:
                return None
            items, codes, spread = parsed
            return Match(
                1,
                self.name,
                "returns a dict literal",
                outputs=items,
                resets_outputs=True,
                forwards_kwargs=spread,
                returns=True,
                output_code=codes,
            )
        if isinstance(value, cst.Name) and value.value in ctx.output_names:
            return Match(1, self.name, "returns the dict", returns=True)
        return None

    def _assigned(
        self, target: cst.BaseAssignTargetExpression, value: cst.BaseExpression, ctx: Context
    ) -> Match | None:
        """``model_inputs = {...}`` / ``model_inputs["key"] = value``."""
        outputs = ctx.output_names
        if isinstance(target, cst.Name) and target.value in outputs and isinstance(value, cst.Dict):
            parsed = _dict_items(value, ctx)
            if parsed is None:
                return None
            items, codes, spread = parsed
            return Match(
                1,
                self.name,
                "builds the dict",
                outputs=items,
                resets_outputs=True,
                forwards_kwargs=spread,
                output_code=codes,
            )
        if (
            isinstance(target, cst.Subscript)
            and isinstance(target.value, cst.Name)
            and target.value.value in outputs
            and len(target.slice) == 1
            and isinstance(target.slice[0].slice, cst.Index)
        ):
            key = _key(target.slice[0].slice.value, ctx)
            if key is None:
                return None
            return Match(
                1,
                self.name,
                "sets a key",
                outputs={key: step_value(value_of(value, ctx), ctx)},
                output_code={key: node_code(value)},
            )
        return None

    def _updated(self, call: cst.Call, ctx: Context) -> Match | None:
        """``model_inputs.update({...})`` / ``model_inputs.update(key=value)``."""
        if not m.matches(
            call.func, m.Attribute(value=m.OneOf(*(m.Name(n) for n in ctx.output_names)), attr=m.Name("update"))
        ):
            return None
        if len(call.args) == 1 and call.args[0].keyword is None and isinstance(call.args[0].value, cst.Dict):
            parsed = _dict_items(call.args[0].value, ctx)
            if parsed is None:
                return None
            items, codes, spread = parsed
            return Match(1, self.name, "updates the dict", outputs=items, forwards_kwargs=spread, output_code=codes)
        keywords = [arg.keyword for arg in call.args if arg.keyword is not None and not arg.star]
        if len(keywords) == len(call.args):  # every argument a keyword
            items = {
                kw.value: step_value(value_of(arg.value, ctx), ctx)
                for kw, arg in zip(keywords, call.args, strict=False)
            }
            codes = {kw.value: node_code(arg.value) for kw, arg in zip(keywords, call.args, strict=False)}
            return Match(1, self.name, "updates the dict", outputs=items, output_code=codes)
        return None


RULE = OutputDict()

CASES = (
    Case(
        "build",
        """
        model_inputs = {"input_ids": input_ids}
        """,
        detail="builds the dict",
    ),
    Case(
        "update-dict",
        """
        model_inputs.update({"use_cache": use_cache, "attention_mask": attention_mask,})
        """,
        detail="updates the dict",
    ),
    Case(
        "update-keywords",
        """
        model_inputs.update(use_cache=use_cache)
        """,
        detail="updates the dict",
    ),
    Case(
        "set-key",
        """
        model_inputs['use_cache'] = use_cache
        """,
        detail="sets a key",
    ),
    Case(
        "return-literal",
        """
        return {"input_ids": input_ids, **kwargs}
        """,
        detail="returns a dict literal",
    ),
    Case(
        "return-name",
        """
        return model_inputs
        """,
        detail="returns the dict",
    ),
    NoOp(
        "variable-key",
        """
        model_inputs = {name: input_ids}
        """,
        why="a key the rule cannot read (a variable)",
        unrecognised="{name: input_ids}",
    ),
    NoOp(
        "spread-other-dict",
        """
        model_inputs = {"input_ids": input_ids, **extra}
        """,
        why="a dict spread in that is not **kwargs: its keys are unknown",
        unrecognised="**extra",
    ),
    NoOp(
        "variable-subscript",
        """
        model_inputs[name] = input_ids
        """,
        why="a key the rule cannot read (a variable)",
        unrecognised="model_inputs[name]",
    ),
)

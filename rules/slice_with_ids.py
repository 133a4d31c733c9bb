"""PI141 slice-with-ids: cut an input that runs along the sequence (e.g. `token_type_ids`) to the new tokens.

The mixins do it in a loop over the names they know (the ``names`` facet): 4.46 cuts to the ids'
length; 4.47 – 5.2 to the length of what is fed (the embeddings on their step), from 5.0 also when
a cache is only about to be used; 5.3+ first move the inputs out of ``**kwargs`` and cut what is
longer than the new tokens.

Example::

    if past_key_values:
        if token_type_ids is not None:
            token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
"""

from collections.abc import Mapping

import libcst as cst

from codemod.rules._pattern import Captures, string_key
from codemod.rules.base import (
    Case,
    Context,
    Coverage,
    EraNote,
    Kind,
    Match,
    MixinBehaviours,
    NoOp,
    TemplateRule,
    Value,
    ValueOrigin,
    claim,
)
from codemod.rules.guards import guard_of

#: what a key variable in a mixin's list of names stands for
_KEY_VARIABLES = {"position_ids_key": ("position_ids", "decoder_position_ids")}


def _names(node: cst.BaseExpression) -> tuple[str, ...] | None:
    """The keys of a list or tuple of string literals (and ``position_ids_key``), else None."""
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    names: list[str] = []
    for element in node.elements:
        value = element.value
        if isinstance(value, cst.Name) and value.value in _KEY_VARIABLES:
            names.extend(_KEY_VARIABLES[value.value])
        elif (key := string_key(value)) is not None:
            names.append(key)
        else:
            return None
    return tuple(dict.fromkeys(names))


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    if "ids" in captures and captures.code("ids") not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    if "names" in captures:  # a mixin's loop
        names = _names(captures.nodes["names"])
        if not names:
            return None
        if "embeds" in captures and captures.code("embeds") not in _EMBEDS:
            return None
        if "cached" in captures:
            guard = guard_of(captures.nodes["cached"])
            if guard is None or not guard[0].startswith("past"):
                return None
        sliced = Value(ValueOrigin.BEHAVIOUR, "slice-with-ids")
        return claim(
            detail=f"{', '.join(names)}, when passed ({variant})",
            outputs={name: sliced for name in names},
            facets={"names": ",".join(names)},
        )
    name = captures.code("x")
    if not name.isidentifier() or not ctx.under_past:
        return None
    return claim(
        detail=name, defines={name: Value(ValueOrigin.BEHAVIOUR, f"slice-with-ids:{name}")}, facets={"names": name}
    )


class SliceWithIds(TemplateRule):
    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        handled = {n for f in mixin.get(self.name, ()) for n in f.get("names", "").split(",")}
        mine = set(facets.get("names", "").split(","))
        if mine <= handled:
            return Coverage(True)
        return Coverage(False, missing=f"the mixin does not slice {', '.join(sorted(mine - handled))}")


# 4.47 – 5.2: cut to the length of what is fed, the embeddings on their step (4.47 – 4.49 index the
# dict, later ones .get() from it); 5.2 along the last dimension (2D or 3D inputs).
_FED_LENGTH_LOOP = """
for model_input_name in $names:
    model_input = kwargs.get(model_input_name)
    if model_input is not None:
        if $cached:
            current_input_length = (
                model_inputs["inputs_embeds"].shape[1] if $embeds is not None else model_inputs[input_ids_key].shape[1]
            )
            model_input = model_input[{dims}, -current_input_length:]
            model_input = model_input.clone(memory_format=torch.contiguous_format)
        model_inputs[model_input_name] = model_input
"""
_EMBEDS = ("model_inputs['inputs_embeds']", "model_inputs.get('inputs_embeds')")
# 5.3+: position_ids and token type ids are moved out of kwargs, then whatever is longer than the new
# tokens is cut.
_MOVE_POSITION_IDS = """
position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
if (position_ids := kwargs.pop(position_ids_key, None)) is not None:
    model_inputs[position_ids_key] = position_ids
"""
_CUT_LONGER = """
for model_input_name in $names:
    model_input = model_inputs.get(model_input_name)
    if model_input is not None and model_input.shape[-1] != sequence_length:
        model_input = model_input[..., -sequence_length:].clone(memory_format=torch.contiguous_format)
        model_inputs[model_input_name] = model_input
"""

#: what an override that only does this becomes where the mixin does not cut the input (rules.doc)
BECOMES = "reduced: `super()`, then the input cut to the new tokens like the ids"

RULE = SliceWithIds(
    __doc__,
    Kind.STANDARD,
    {
        "when present": """
            if $x is not None:
                $x = $x[:, -$ids.shape[1] :]
        """,
        "when present, contiguous": """
            if $x is not None:
                $x = $x[:, -$ids.shape[1] :]
                $x = $x.clone(memory_format=torch.contiguous_format)
        """,
        "to the ids' length": """
            for model_input_name in $names:
                model_input = kwargs.get(model_input_name)
                if model_input is not None:
                    if $cached:
                        model_input = model_input[:, -$ids.shape[1] :]
                        model_input = model_input.clone(memory_format=torch.contiguous_format)
                    model_inputs[model_input_name] = model_input
        """,
        "to the fed length": _FED_LENGTH_LOOP.format(dims=":"),
        "to the fed length, along the last dimension": _FED_LENGTH_LOOP.format(dims="..."),
        # 5.3 – 5.19 move token_type_ids out of kwargs, 5.20+ every token type key
        "longer than the new tokens; token_type_ids moved out of kwargs": (
            _MOVE_POSITION_IDS
            + """
if (token_type_ids := kwargs.pop("token_type_ids", None)) is not None:
    model_inputs["token_type_ids"] = token_type_ids
"""
            + _CUT_LONGER
        ),
        "longer than the new tokens; token type ids moved out of kwargs": (
            _MOVE_POSITION_IDS
            + """
for token_type_key in ("token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids"):
    if (token_type := kwargs.pop(token_type_key, None)) is not None:
        model_inputs[token_type_key] = token_type
"""
            + _CUT_LONGER
        ),
    },
    _check,
)

ERAS = (
    EraNote("≤ 4.45", "the hoisted implementation cuts `position_ids` and `token_type_ids` to the new tokens"),
    EraNote("4.46", "cut to the ids' length"),
    EraNote(
        "4.47 – 5.2",
        "cut to the length of what is fed (the embeddings on their step); from 5.0 also when a cache is only "
        "about to be used",
    ),
    EraNote("5.3 +", "moved out of `**kwargs` first, then cut where longer than the new tokens"),
)

CASES = (
    Case(
        "token-type-ids",
        RULE.example,
        detail="token_type_ids",
        facets={"names": "token_type_ids"},
    ),
    Case(
        "contiguous",
        """
        if past_key_values is not None:
            if token_type_ids is not None:
                token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
                token_type_ids = token_type_ids.clone(memory_format=torch.contiguous_format)
        """,
        detail="token_type_ids",
        facets={"names": "token_type_ids"},
    ),
    Case(
        "any-name",
        """
        if past_key_values:
            if mm_token_type_ids is not None:
                mm_token_type_ids = mm_token_type_ids[:, -input_ids.shape[1]:]
        """,
        detail="mm_token_type_ids",
        facets={"names": "mm_token_type_ids"},
    ),
    Case(
        "mixin-loop",
        """
        for model_input_name in ["position_ids", "token_type_ids"]:
            model_input = kwargs.get(model_input_name)
            if model_input is not None:
                if past_key_values:
                    model_input = model_input[:, -input_ids.shape[1] :]
                    model_input = model_input.clone(memory_format=torch.contiguous_format)
                model_inputs[model_input_name] = model_input
        """,
        detail="position_ids, token_type_ids, when passed (to the ids' length)",
        facets={"names": "position_ids,token_type_ids"},
    ),
    NoOp(
        "unguarded",
        """
        if token_type_ids is not None:
            token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
        """,
        why="without a cache guard the input is cut on the first step too",
        unrecognised="token_type_ids[:, -input_ids.shape[1]:]",
    ),
    NoOp(
        "other-length",
        """
        if past_key_values:
            if token_type_ids is not None:
                token_type_ids = token_type_ids[:, -attention_mask.shape[1] :]
        """,
        why="cut to the length of something that is not the ids",
        unrecognised="attention_mask.shape[1]",
    ),
    NoOp(
        "other-source",
        """
        if past_key_values:
            if token_type_ids is not None:
                token_type_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        why="a different input is assigned",
        unrecognised="token_type_ids = position_ids",
    ),
)

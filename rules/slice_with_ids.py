"""PI141 slice-with-ids: cut an input that runs along the sequence (e.g. `token_type_ids`) to the new tokens.

Example::

    if past_key_values:
        if token_type_ids is not None:
            token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
"""

from rules.base import Coverage, Kind, TemplateRule, Value, claim


def _check(captures, ctx, variant):
    if "ids" in captures and captures.code("ids") not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    if variant in _MIXIN_NAMES:
        names = _MIXIN_NAMES[variant]
        sliced = Value("behaviour", "slice-with-ids")
        return claim(detail=f"{', '.join(names)}, when passed", outputs={name: sliced for name in names},
                     facets={"names": ",".join(names)})
    name = captures.code("x")
    if not name.isidentifier() or not ctx.under_past:
        return None
    return claim(detail=name, defines={name: Value("behaviour", f"slice-with-ids:{name}")}, facets={"names": name})


_MIXIN_NAMES = {
    "the mixin's loop": ("position_ids", "token_type_ids"),
    "the 5.x mixin's loops": (
        "position_ids", "decoder_position_ids", "token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids"
    ),
}


class SliceWithIds(TemplateRule):
    def coverage(self, facets, mixin):
        handled = {n for f in mixin.get(self.name, ()) for n in f.get("names", "").split(",")}
        mine = set(facets.get("names", "").split(","))
        if mine <= handled:
            return Coverage(True)
        return Coverage(False, missing=f"the mixin does not slice {', '.join(sorted(mine - handled))}")


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
        "the mixin's loop": """
            for model_input_name in ["position_ids", "token_type_ids"]:
                model_input = kwargs.get(model_input_name)
                if model_input is not None:
                    if past_key_values:
                        model_input = model_input[:, -$ids.shape[1] :]
                        model_input = model_input.clone(memory_format=torch.contiguous_format)
                    model_inputs[model_input_name] = model_input
        """,
        "the 5.x mixin's loops": """
            position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
            if (position_ids := kwargs.pop(position_ids_key, None)) is not None:
                model_inputs[position_ids_key] = position_ids
            for token_type_key in ("token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids"):
                if (token_type := kwargs.pop(token_type_key, None)) is not None:
                    model_inputs[token_type_key] = token_type
            for model_input_name in [position_ids_key, "token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids"]:
                model_input = model_inputs.get(model_input_name)
                if model_input is not None and model_input.shape[-1] != sequence_length:
                    model_input = model_input[..., -sequence_length:].clone(memory_format=torch.contiguous_format)
                    model_inputs[model_input_name] = model_input
        """,
    },
    _check,
)

"""PI111 position-ids-from-mask: build `position_ids` from the attention mask (cumsum - 1, padding set to 1).

Left-padded rows then start at position 0 on their first real token. With a cache the positions
are sliced to the new tokens (or, in some models, to the last token only, which differs from the
mixin when several tokens are new, as in assisted decoding).

Example::

    if attention_mask is not None and position_ids is None:
        # create position_ids on the fly for batch generation
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
"""

from collections.abc import Mapping

import libcst as cst

from codemod.rules._pattern import Template, string_key
from codemod.rules.base import (
    Case,
    Context,
    Coverage,
    EraNote,
    Kind,
    Match,
    MixinBehaviours,
    NoOp,
    Rule,
    Statements,
    Value,
    ValueOrigin,
    parse_docstring,
)
from codemod.rules.default_attention_mask import RULE as DEFAULT_MASK
from codemod.rules.guards import guard_of

_TESTS = {
    "": Template.expression("attention_mask is not None and position_ids is None"),
    "unless the model uses ALiBi": Template.expression(
        "not self.$_.use_alibi and attention_mask is not None and position_ids is None"
    ),
}
_BUILD = Template.parse(
    """
    position_ids = attention_mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)
    """
)
_SLICES = {
    "sliced to the new tokens": Template.parse("position_ids = position_ids[:, -$ids.shape[1] :]"),
    "sliced to the last token": Template.parse("position_ids = position_ids[:, -1].unsqueeze(-1)"),
}
_CLONE = Template.parse("position_ids = position_ids.clone(memory_format=torch.contiguous_format)")
_RESET = Template.parse("position_ids = None")
# The mixin's form (4.46 – 5.2): only when the model's forward takes position_ids; slicing happens
# later. From 4.50 the key is a variable (decoder_position_ids for encoder-decoder models); 5.2 pads
# with 0.
_MIXIN = Template.parse(
    """
    if (
        attention_mask is not None
        and kwargs.get($key) is None
        and $key in set(inspect.signature(self.forward).parameters.keys())
    ):
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, $padding)
        kwargs[$key] = position_ids
    """
)


def _mixin_key(node: cst.BaseExpression, ctx: Context) -> str | None:
    """``position_ids``, or a key variable that names it (``position_ids_key``, see rules.key_variable)."""
    if isinstance(node, cst.Name) and ctx.value_of(node.value) == Value(ValueOrigin.KEY, "position_ids"):
        return node.value
    return "position_ids" if string_key(node) == "position_ids" else None


class PositionIdsFromMask(Rule):
    kind = Kind.STANDARD

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if not isinstance(statement, cst.If):
            return None
        mixin = _MIXIN.match(statements, start)
        if mixin is not None:
            key, padding = _mixin_key(mixin.nodes["key"], ctx), mixin.nodes["padding"]
            if key is None or not isinstance(padding, cst.Integer):
                return None
            details = ["only when forward accepts position_ids", "sliced with the ids later"]
            if key != "position_ids":
                details.append(f"keyed by {key} (decoder_position_ids for encoder-decoder models)")
            if padding.value != "1":
                details.append(f"padding set to {padding.value}")
            return Match(
                1,
                self.name,
                "; ".join(details),
                defines={"position_ids": Value(ValueOrigin.BEHAVIOUR, self.name)},
                outputs={"position_ids": Value(ValueOrigin.BEHAVIOUR, self.name)},
                facets={"when": "forward accepts position_ids", "slice": "new tokens", "padding": padding.value},
            )
        condition = next((label for label, t in _TESTS.items() if t.match_expression(statement.test)), None)
        if condition is None:
            return None
        body = statement.body.body
        if _BUILD.match(body, 0) is None:
            return None
        details = [condition] if condition else []
        facets = {"padding": "1", "when": "alibi off" if condition else "always"}
        rest = body[2:]
        if rest:
            if len(rest) != 1 or not isinstance(rest[0], cst.If) or rest[0].orelse is not None:
                return None
            guard = guard_of(rest[0].test)
            if guard is None or not guard[0].startswith("past"):
                return None
            inner = rest[0].body.body
            label = next((label for label, t in _SLICES.items() if t.match(inner, 0)), None)
            if label is None or len(inner) > 2 or (len(inner) == 2 and _CLONE.match(inner, 1) is None):
                return None
            details.append(label + (", contiguous" if len(inner) == 2 else ""))
            facets["slice"] = "last token" if "last" in label else "new tokens"
        else:
            details.append("not sliced")
            facets["slice"] = "none"
        orelse = statement.orelse
        implies: tuple[str, ...] = ()
        defines = {"position_ids": Value(ValueOrigin.BEHAVIOUR, self.name)}
        if orelse is not None:
            if not isinstance(orelse, cst.Else) or _RESET.match(orelse.body.body, 0) is None:
                return None
            rest = orelse.body.body[1:]
            if rest:
                # XGLM's else: no mask either, so it makes the default one (rules.default_attention_mask)
                default_mask = DEFAULT_MASK.match(rest, 0, ctx)
                if default_mask is None or len(rest) != default_mask.consumed:
                    return None
                implies, defines = (DEFAULT_MASK.name,), {**defines, **default_mask.defines}
                details.append("a mask of ones when none is given")
            details.append("ignores position_ids passed without a mask")
            facets["passed"] = "ignored without a mask"
        return Match(1, self.name, "; ".join(details), defines=defines, facets=facets, implies=implies)

    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        found = mixin.get(self.name)
        if not found:
            return Coverage(False, missing="the mixin does not build position_ids from the attention mask")
        theirs = found[0]
        differences = []
        flow = []
        if facets.get("slice") == "last token":
            differences.append(
                "slices position_ids to the last token where the mixin keeps every new token "
                "(assisted decoding sees different positions)"
            )
        if facets.get("slice") == "none":
            differences.append("does not slice position_ids to the new tokens; the mixin does")
        if facets.get("when") == "alibi off":  # an ALiBi configuration gets no position_ids: fewer inputs
            flow.append("builds position_ids only without ALiBi; the mixin builds them whenever forward accepts them")
        if facets.get("passed"):
            differences.append("drops position_ids passed without an attention mask; the mixin forwards them")
        if theirs.get("padding", "1") != facets.get("padding", "1"):
            differences.append(
                f"fills padded positions with {facets.get('padding', '1')}, the mixin with {theirs['padding']} "
                "(only padded positions differ)"
            )
        if theirs.get("where"):
            differences.append(f"the mixin builds them {theirs['where']}")
        return Coverage(True, differences=tuple(differences), flow_differences=tuple(flow))


RULE = PositionIdsFromMask()

ERAS = (
    EraNote(
        "≤ 4.45",
        "the hoisted implementation builds them from the mask when `forward` accepts them, and slices them "
        "with `token_type_ids` to the new tokens",
    ),
    EraNote(
        "4.46 – 5.2",
        "built in the method when `forward` accepts them and none are passed, sliced to the new tokens (5.2 "
        "pads with 0)",
    ),
    EraNote("5.3 +", "built once, in `generate()` (`_prepare_position_ids_for_generation`, padding 0)"),
)

CASES = (
    Case(
        "new-tokens",
        """
        if attention_mask is not None and position_ids is None:
            # positions for batched generation
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        detail="sliced to the new tokens",
        facets={"padding": "1", "slice": "new tokens", "when": "always"},
    ),
    Case(
        "last-token",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -1].unsqueeze(-1)
        """,
        detail="sliced to the last token",
        facets={"padding": "1", "slice": "last token", "when": "always"},
    ),
    Case(
        "clone",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values is not None:
                position_ids = position_ids[:, -input_ids.shape[1] :]

                # a stable stride for compiled graphs
                position_ids = position_ids.clone(memory_format=torch.contiguous_format)
        """,
        detail="sliced to the new tokens, contiguous",
        facets={"padding": "1", "slice": "new tokens", "when": "always"},
    ),
    Case(
        "else-none",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        else:
            position_ids = None
        """,
        detail="sliced to the new tokens; ignores position_ids passed without a mask",
        facets={"padding": "1", "passed": "ignored without a mask", "slice": "new tokens", "when": "always"},
    ),
    Case(
        "else-none-and-a-default-mask",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        else:
            position_ids = None
            if attention_mask is None:
                attention_mask = input_ids.new_ones(input_ids.shape)
        """,
        detail="sliced to the new tokens; a mask of ones when none is given; ignores position_ids passed without a mask",
        facets={"padding": "1", "passed": "ignored without a mask", "slice": "new tokens", "when": "always"},
        implies=("default-attention-mask",),
    ),
    Case(
        "alibi",
        """
        if not self.transformer.use_alibi and attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        detail="unless the model uses ALiBi; sliced to the new tokens",
        facets={"padding": "1", "slice": "new tokens", "when": "alibi off"},
    ),
    Case(
        "not-sliced",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        """,
        detail="not sliced",
        facets={"padding": "1", "slice": "none", "when": "always"},
    ),
    Case(
        "mixin-form",
        """
        if (
            attention_mask is not None
            and kwargs.get("position_ids") is None
            and "position_ids" in set(inspect.signature(self.forward).parameters.keys())
        ):
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            kwargs["position_ids"] = position_ids
        """,
        detail="only when forward accepts position_ids; sliced with the ids later",
        facets={"padding": "1", "slice": "new tokens", "when": "forward accepts position_ids"},
    ),
    Case(
        "mixin-form-key-variable-padding-0",
        """
        position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
        if (
            attention_mask is not None
            and kwargs.get(position_ids_key) is None
            and position_ids_key in set(inspect.signature(self.forward).parameters.keys())
        ):
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 0)
            kwargs[position_ids_key] = position_ids
        """,
        detail="only when forward accepts position_ids; sliced with the ids later; keyed by position_ids_key (decoder_position_ids for encoder-decoder models); padding set to 0",
        facets={"padding": "0", "slice": "new tokens", "when": "forward accepts position_ids"},
        others=("key-variable",),
    ),
    Case(
        "reformatted",
        """
        if (attention_mask is not None) and (position_ids is None):
            position_ids = (attention_mask.long().cumsum(-1) - 1)
            position_ids.masked_fill_(attention_mask == 0, 1)  # padding
            if past_key_values:
                position_ids = position_ids[ :, -input_ids.shape[1]: ]
        """,
        detail="sliced to the new tokens",
        facets={"padding": "1", "slice": "new tokens", "when": "always"},
    ),
    NoOp(
        "no-masked-fill",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        why="without masked_fill_ the padded positions are negative",
        unrecognised="if attention_mask is not None and position_ids is None:",
    ),
    NoOp(
        "other-padding",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 0)
        """,
        why="a different padding value (0) in the models' form",
        unrecognised="masked_fill_(attention_mask == 0, 0)",
    ),
    NoOp(
        "extra-statement",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            position_ids = position_ids + self.config.position_offset
        """,
        why="something else happens in the block (an offset is added)",
        unrecognised="position_offset",
    ),
    NoOp(
        "slice-not-under-cache",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if use_cache:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        why="sliced under a test that is not a cache guard",
        unrecognised="if use_cache:",
    ),
    NoOp(
        "other-else",
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        else:
            position_ids = position_ids + 1
        """,
        why="the else branch does something else than dropping passed position_ids",
        unrecognised="position_ids + 1",
    ),
    NoOp(
        "other-test",
        """
        if position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        """,
        why="the test is not the usual one (no attention mask is checked for)",
        unrecognised="attention_mask.long().cumsum(-1) - 1",
    ),
)

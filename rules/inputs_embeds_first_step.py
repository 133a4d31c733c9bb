"""PI121 inputs-embeds-first-step: feed `inputs_embeds` on the first step and the ids afterwards.

Generation may start from embeddings; once the cache holds them, the newly generated ids are fed.
The first step is told by ``cache_position[0] == 0``, or (older code) by the absence of a cache; the
mixins of 4.49 – 4.57 feed the embeddings whenever ``cache_position`` covers all of them (the first
step of each new prompt), those of 5.x on the ``is_first_iteration`` the decoding loop passes.

Example::

    if inputs_embeds is not None and cache_position[0] == 0:
        model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
    else:
        model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
"""

from collections.abc import Mapping, Sequence

import libcst as cst

from codemod.contracts import ValueOrigin
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
    parse_docstring,
)
from codemod.rules.guards import PAST_NAMES
from codemod.rules.slice_by_cache_length import RULE as CACHE_LENGTH
from codemod.rules.values import value_of

_TESTS = {
    "first step by cache_position": Template.expression("inputs_embeds is not None and cache_position[0] == 0"),
    "first step by an absent cache": Template.expression("inputs_embeds is not None and $p is None"),
    "first step by is_first_iteration": Template.expression("inputs_embeds is not None and is_first_iteration"),
    "first step by len(cache_position)": Template.expression(
        "inputs_embeds is not None and len(cache_position) == inputs_embeds.shape[1]"
    ),
    # the 4.36 – 4.44 idiom (slice-by-cache-length), which counts the past length itself
    "first step by the past length": Template.expression("inputs_embeds is not None and past_length == 0"),
    # remote-code Phi-3's: no cache yet, or an empty Cache object
    "first step by an absent or empty cache": Template.expression(
        "(inputs_embeds is not None and $p is None) or (inputs_embeds is not None and len($p) == 0)"
    ),
}
_FACETS = {
    "first step by cache_position": "cache_position",
    "first step by an absent cache": "no cache",
    "first step by is_first_iteration": "is_first_iteration",
    "first step by len(cache_position)": "len(cache_position)",
    "first step by the past length": "past length",
    "first step by an absent or empty cache": "no cache or an empty one",
}
_ASSIGN = Template.parse("$d = $value")
#: what an "absent cache" test may name: a key/value cache, or a state-space model's cache
_CACHE_NAMES = (*PAST_NAMES, "cache_params")


def _first_step_test(test: cst.BaseExpression) -> str | None:
    """The label of a known first-step test; ``X is None`` counts only when X is a cache."""
    for label, template in _TESTS.items():
        captures = template.match_expression(test)
        if captures is not None and ("p" not in captures or captures.code("p") in _CACHE_NAMES):
            return label
    return None


# The mixin's form (4.46 – 5.2), which also picks the ids key for encoder-decoder models; only its
# test of the first step changed (the first_step facet -> the test).
_MIXIN_SHAPE = """
input_ids_key = "decoder_input_ids" if self.config.is_encoder_decoder else "input_ids"
if not self.config.is_encoder_decoder:
    if inputs_embeds is not None and {test}:
        model_inputs[input_ids_key] = None
        model_inputs["inputs_embeds"] = inputs_embeds
    else:
        model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
        model_inputs["inputs_embeds"] = None
else:
    model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
"""
_MIXIN = {
    "cache_position": Template.parse(_MIXIN_SHAPE.format(test="cache_position[0] == 0")),  # 4.46 – 4.48
    "len(cache_position)": Template.parse(  # 4.49 – 4.57
        _MIXIN_SHAPE.format(test="len(cache_position) == inputs_embeds.shape[1]")
    ),
    "is_first_iteration": Template.parse(_MIXIN_SHAPE.format(test="is_first_iteration")),  # 5.0 – 5.2
}


# The 5.x mixin's form (5.3+): the first iteration feeds the (last next_sequence_length) embeddings,
# later ones the last next_sequence_length ids. 5.3 reuses inputs_embeds for the sliced embeddings.
_MIXIN_V5 = Template.parse(
    """
    input_ids_key = "decoder_input_ids" if self.config.is_encoder_decoder else "input_ids"
    if not self.config.is_encoder_decoder and inputs_embeds is not None and is_first_iteration:
        model_inputs[input_ids_key] = None
        $embeds = (
            inputs_embeds[:, -next_sequence_length:, :] if next_sequence_length is not None else inputs_embeds
        )
        model_inputs["inputs_embeds"] = $embeds.clone(memory_format=torch.contiguous_format)
        batch_size, sequence_length = $embeds.shape[:2]
    else:
        input_ids = input_ids[:, -next_sequence_length:] if next_sequence_length is not None else input_ids
        model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
        batch_size, sequence_length = input_ids.shape[:2]
    """
)


def _dict_assignment(block: Sequence[cst.CSTNode], ctx: Context) -> dict[str, Value] | None:
    if len(block) != 1:
        return None
    captures = _ASSIGN.match(block, 0)
    if captures is None or captures.code("d") not in ctx.output_names:
        return None
    value = captures.nodes["value"]
    if not isinstance(value, cst.Dict):
        return None
    items = {}
    for element in value.elements:
        key = string_key(element.key) if isinstance(element, cst.DictElement) else None
        if key is None:
            return None
        items[key] = value_of(element.value, ctx)
    return items


class InputsEmbedsFirstStep(Rule):
    kind = Kind.STANDARD

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        if _MIXIN_V5.match(statements, start) is not None:
            ids = Value(ValueOrigin.IDS, "next_sequence_length, contiguous")
            return Match(
                2,
                self.name,
                "first iteration; then the last next_sequence_length ids; decoder_input_ids for "
                "encoder-decoder models",
                outputs={
                    "input_ids": ids,
                    "decoder_input_ids": ids,
                    "inputs_embeds": Value(ValueOrigin.FIRST_STEP, "inputs_embeds"),
                },
                defines={"input_ids": ids},
                implies=("encoder-decoder-ids-key", "slice-by-next-sequence-length"),
                facets={"first_step": "is_first_iteration"},
            )
        for first_step, template in _MIXIN.items():
            if template.match(statements, start) is not None:
                ids = ctx.value_of(ctx.ids_param)
                return Match(
                    2,
                    self.name,
                    f"first step by {first_step}; decoder_input_ids for encoder-decoder models",
                    outputs={
                        "input_ids": ids,
                        "decoder_input_ids": ids,
                        "inputs_embeds": Value(ValueOrigin.FIRST_STEP, "inputs_embeds"),
                    },
                    resets_outputs=False,
                    implies=("encoder-decoder-ids-key",),
                    facets={"first_step": first_step},
                )
        statement = statements[start]
        if not isinstance(statement, cst.If) or not isinstance(statement.orelse, cst.Else):
            return None
        label = _first_step_test(statement.test)
        if label is None:
            return None
        if _FACETS[label] == "past length" and ctx.value_of("past_length") != Value(
            ValueOrigin.BEHAVIOUR, CACHE_LENGTH.name
        ):
            return None  # a past_length the engine did not see counted from the cache
        first = _dict_assignment(statement.body.body, ctx)
        later = _dict_assignment(statement.orelse.body.body, ctx)
        if first is None or later is None:
            return None
        if first.get("inputs_embeds") != Value(ValueOrigin.PARAM, "inputs_embeds"):
            return None
        sliced = later.get(ctx.ids_param) or later.get("input_ids")
        if sliced is None or sliced.origin is not ValueOrigin.IDS:
            return None
        if (
            first.get("input_ids", Value(ValueOrigin.NONE)).origin is not ValueOrigin.NONE
            or later.get("inputs_embeds", Value(ValueOrigin.NONE)).origin is not ValueOrigin.NONE
        ):
            return None
        extra = (set(first) | set(later)) - {"input_ids", "inputs_embeds", ctx.ids_param}
        if extra:
            return None
        outputs = {"input_ids": sliced, "inputs_embeds": Value(ValueOrigin.FIRST_STEP, "inputs_embeds")}
        detail = label + ("" if "contiguous" not in sliced.name else "; ids made contiguous")
        return Match(1, self.name, detail, outputs=outputs, resets_outputs=True, facets={"first_step": _FACETS[label]})

    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        found = mixin.get(self.name)
        if not found:
            return Coverage(False, missing="the mixin does not feed inputs_embeds on the first step")
        if facets.get("first_step") == "no cache" and found[0].get("first_step") != "no cache":
            return Coverage(
                True,
                differences=(
                    "tells the first step by an absent cache: with a Cache object (never None) it never feeds "
                    "inputs_embeds, where the mixin feeds them on the first step",
                ),
            )
        return Coverage(True)


RULE = InputsEmbedsFirstStep()

ERAS = (
    EraNote("≤ 4.45", "the hoisted implementation feeds them on the first step only, to decoder-only models"),
    EraNote("4.46 – 4.48", "fed when `cache_position[0] == 0`"),
    EraNote("4.49 – 4.57", "fed whenever `cache_position` covers all of them (the first step of each new prompt)"),
    EraNote(
        "5.x",
        "fed on the `is_first_iteration` the decoding loop passes (5.3 +: the last `next_sequence_length` of them)",
    ),
)

CASES = (
    Case(
        "cache-position",
        RULE.example,
        detail="first step by cache_position; ids made contiguous",
        facets={"first_step": "cache_position"},
    ),
    Case(
        "absent-cache",
        """
        if inputs_embeds is not None and past_key_values is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """,
        detail="first step by an absent cache",
        facets={"first_step": "no cache"},
    ),
    Case(
        "absent-old-past",
        """
        if inputs_embeds is not None and past is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids.contiguous()}
        """,
        detail="first step by an absent cache; ids made contiguous",
        facets={"first_step": "no cache"},
    ),
    Case(
        "absent-state-space-cache",
        """
        if inputs_embeds is not None and cache_params is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids.contiguous()}
        """,
        detail="first step by an absent cache; ids made contiguous",
        facets={"first_step": "no cache"},
    ),
    Case(
        "absent-or-empty-cache",
        """
        if (inputs_embeds is not None and past_key_values is None) or (inputs_embeds is not None and len(past_key_values) == 0):
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """,
        detail="first step by an absent or empty cache",
        facets={"first_step": "no cache or an empty one"},
    ),
    Case(
        "past-length",
        """
        past_length = 0
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
        if inputs_embeds is not None and past_length == 0:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """,
        detail="first step by the past length",
        facets={"first_step": "past length"},
        others=("slice-by-cache-length",),
    ),
    NoOp(
        "past-length-not-counted-from-the-cache",
        """
        if inputs_embeds is not None and past_length == 0:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """,
        why="a past_length that nothing recognised counted from the cache may be anything",
        unrecognised="if inputs_embeds is not None and past_length == 0:",
    ),
    Case(
        "is-first-iteration",
        """
        if inputs_embeds is not None and is_first_iteration:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        detail="first step by is_first_iteration",
        facets={"first_step": "is_first_iteration"},
    ),
    Case(
        "len-cache-position",
        """
        if inputs_embeds is not None and len(cache_position) == inputs_embeds.shape[1]:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        detail="first step by len(cache_position)",
        facets={"first_step": "len(cache_position)"},
    ),
    Case(
        "reformatted",
        """
        # embeddings only on the first step
        if (inputs_embeds is not None) and cache_position[0] == 0:
            model_inputs = {'inputs_embeds': inputs_embeds, 'input_ids': None,}
        else:
            # the clone keeps strides stable
            model_inputs = {
                'input_ids': input_ids.clone(memory_format=torch.contiguous_format),
                'inputs_embeds': None,
            }
        """,
        detail="first step by cache_position; ids made contiguous",
        facets={"first_step": "cache_position"},
    ),
    Case(
        "mixin-form",
        """
        input_ids_key = "decoder_input_ids" if self.config.is_encoder_decoder else "input_ids"
        if not self.config.is_encoder_decoder:
            if inputs_embeds is not None and cache_position[0] == 0:
                model_inputs[input_ids_key] = None
                model_inputs["inputs_embeds"] = inputs_embeds
            else:
                model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
                model_inputs["inputs_embeds"] = None
        else:
            model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
        """,
        detail="first step by cache_position; decoder_input_ids for encoder-decoder models",
        facets={"first_step": "cache_position"},
        implies=("encoder-decoder-ids-key",),
    ),
    NoOp(
        "extra-key",
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None, "pixel_values": pixel_values}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        why="an extra key on the first step is model-specific",
        unrecognised="if inputs_embeds is not None and cache_position[0] == 0:",
    ),
    NoOp(
        "no-else",
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds}
        """,
        why="no else branch: what is fed later is unknown",
        unrecognised="if inputs_embeds is not None",
    ),
    NoOp(
        "scaled-embeddings",
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds * self.scale, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        why="the embeddings are changed",
        unrecognised="inputs_embeds * self.scale",
    ),
    NoOp(
        "embeddings-later-too",
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": inputs_embeds}
        """,
        why="later steps still get the embeddings",
        unrecognised="if inputs_embeds is not None",
    ),
    NoOp(
        "not-the-ids",
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": attention_mask, "inputs_embeds": None}
        """,
        why="later steps feed something that is not the ids",
        unrecognised="if inputs_embeds is not None",
    ),
    NoOp(
        "not-the-output",
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            inputs = {"inputs_embeds": inputs_embeds}
        else:
            inputs = {"input_ids": input_ids}
        """,
        why="a dict the function does not return",
        unrecognised="if inputs_embeds is not None",
    ),
    NoOp(
        "not-a-cache-test",
        """
        if inputs_embeds is not None and attention_mask is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """,
        why="a test of something else than the cache (the mask) does not tell the first step",
        unrecognised="if inputs_embeds is not None and attention_mask is None:",
    ),
)

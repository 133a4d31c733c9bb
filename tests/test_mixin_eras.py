"""The mixin of every era is recognised: no statement left over, the right era, behaviours and facets.

``codemod.analyse.mixin.profile_from_source`` runs the recognisers over a checkout's own
``GenerationMixin.prepare_inputs_for_generation``; a statement no rule claims adds no behaviour,
and classification would then be relative to a mixin that seems to do less than it does. The
bodies below are small hand-written mixins in the shape of each era (the statements that era's
mixin is made of, without its comments and docstrings); the ``network`` test checks real wheels.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from codemod.analyse.mixin import Era, MixinProfile, hoisted_profile, profile_from_source
from codemod.analyse.recognise import analyse_statements
from codemod.cache import cache_dir


def mixin_source(signature: str, *pieces: str, helpers: str = "") -> str:
    """A module with ``GenerationMixin.prepare_inputs_for_generation(self, <signature>)``.

    The body is the ``pieces`` in order (each dedented on its own); ``helpers`` are further methods.
    """
    body = "".join(textwrap.dedent(piece).strip("\n") + "\n" for piece in pieces)
    method = f"def prepare_inputs_for_generation(self, {signature}):\n" + textwrap.indent(body, "    ")
    return "class GenerationMixin:\n" + textwrap.indent(method + textwrap.dedent(helpers), "    ")


SIGNATURE = "input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None, cache_position=None, **kwargs"

# --- the pieces several eras share ------------------------------------------------------------------

CACHE_POSITION_FOR_CACHE_CLASSES = """
    model_inputs = {}
    if self._supports_cache_class:
        model_inputs["cache_position"] = cache_position
    elif cache_position is None:
        past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
        cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
"""

IDS_OR_EMBEDS = """
    input_ids_key = "decoder_input_ids" if self.config.is_encoder_decoder else "input_ids"
    if not self.config.is_encoder_decoder:
        if inputs_embeds is not None and {first_step}:
            model_inputs[input_ids_key] = None
            model_inputs["inputs_embeds"] = inputs_embeds
        else:
            model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
            model_inputs["inputs_embeds"] = None
    else:
        model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
"""

DECODER_KEYS = """
    encoder_attention_mask = attention_mask if self.config.is_encoder_decoder else None
    attention_mask = kwargs.pop("decoder_attention_mask", None) if self.config.is_encoder_decoder else attention_mask
    attention_mask_key = "decoder_attention_mask" if self.config.is_encoder_decoder else "attention_mask"
    position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
"""

POSITION_IDS = """
    if (
        attention_mask is not None
        and kwargs.get({key}) is None
        and {key} in set(inspect.signature(self.forward).parameters.keys())
    ):
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, {padding})
        kwargs[{key}] = position_ids
"""

SLICE_LIKE_WHAT_IS_FED = """
    for model_input_name in {names}:
        model_input = kwargs.get(model_input_name)
        if model_input is not None:
            if {cached}:
                current_input_length = (
                    model_inputs["inputs_embeds"].shape[1] if {embeds} is not None
                    else model_inputs[input_ids_key].shape[1]
                )
                model_input = model_input[{dims}, -current_input_length:]
                model_input = model_input.clone(memory_format=torch.contiguous_format)
            model_inputs[model_input_name] = model_input
"""

# 4.52 – 5.2: the base model's (or its decoder's) helper, else create_masks_for_generate
COMPILEABLE_CACHE_MASK = """
    if (
        isinstance(past_key_values, Cache)
        and past_key_values.is_compileable
        and attention_mask is not None
        and attention_mask.ndim == 2
    ):
        batch_size, sequence_length = model_inputs[input_ids_key].shape[:2]
        base_model = getattr(self, self.base_model_prefix, self)
        decoder = base_model.get_decoder() if hasattr(base_model, "get_decoder") else None
        causal_mask_creation_function = getattr(base_model, "_prepare_4d_causal_attention_mask_with_cache_position", None)
        if causal_mask_creation_function is None and decoder is not None:
            causal_mask_creation_function = getattr(decoder, "_prepare_4d_causal_attention_mask_with_cache_position", None)
        if causal_mask_creation_function is None:
            position_ids = model_inputs.get(position_ids_key)
            causal_mask_creation_function = getattr(self, "create_masks_for_generate", create_masks_for_generate)
            attention_mask = causal_mask_creation_function(
                config=self.config, attention_mask=attention_mask, position_ids=position_ids
            )
        else:
            attention_mask = causal_mask_creation_function(
                attention_mask, sequence_length=sequence_length, batch_size=batch_size, cache_position=cache_position
            )
"""

MASKS_OUT = """
    if attention_mask is not None:
        model_inputs[attention_mask_key] = attention_mask
    if encoder_attention_mask is not None:
        model_inputs["attention_mask"] = encoder_attention_mask
"""

FORWARD_THE_REST = """
    for key, value in kwargs.items():
        if key not in model_inputs:
            model_inputs[key] = value
    model_inputs.pop("labels", None)
    return model_inputs
"""

# --- 5.3+: ids sliced by next_sequence_length, position ids built once in generate() --------------

NEXT_SEQUENCE_SIGNATURE = (
    "input_ids, next_sequence_length=None, past_key_values=None, attention_mask=None, inputs_embeds=None, "
    "is_first_iteration=False, **kwargs"
)

IDS_OR_EMBEDS_BY_NEXT_SEQUENCE_LENGTH = """
    model_inputs = {}
    input_ids_key = "decoder_input_ids" if self.config.is_encoder_decoder else "input_ids"
    if not self.config.is_encoder_decoder and inputs_embeds is not None and is_first_iteration:
        model_inputs[input_ids_key] = None
        prompt_embeds = inputs_embeds[:, -next_sequence_length:, :] if next_sequence_length is not None else inputs_embeds
        model_inputs["inputs_embeds"] = prompt_embeds.clone(memory_format=torch.contiguous_format)
        batch_size, sequence_length = prompt_embeds.shape[:2]
    else:
        input_ids = input_ids[:, -next_sequence_length:] if next_sequence_length is not None else input_ids
        model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
        batch_size, sequence_length = input_ids.shape[:2]
    if past_key_values is not None:
        model_inputs["past_key_values"] = past_key_values
    position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
    if (position_ids := kwargs.pop(position_ids_key, None)) is not None:
        model_inputs[position_ids_key] = position_ids
"""

CUT_WHAT_IS_LONGER = """
    for model_input_name in {names}:
        model_input = model_inputs.get(model_input_name)
        if model_input is not None and model_input.shape[-1] != sequence_length:
            model_input = model_input[..., -sequence_length:].clone(memory_format=torch.contiguous_format)
            model_inputs[model_input_name] = model_input
"""

MASK_FOR_COMPILEABLE_CACHES = """
    encoder_attention_mask = attention_mask if self.config.is_encoder_decoder else None
    attention_mask_key = "decoder_attention_mask" if self.config.is_encoder_decoder else "attention_mask"
    attention_mask = kwargs.pop("decoder_attention_mask", None) if self.config.is_encoder_decoder else attention_mask
    if isinstance(past_key_values, Cache) and past_key_values.is_compileable and {mask_test}:
        causal_mask_creation_function = getattr(self, "create_masks_for_generate", create_masks_for_generate)
        attention_mask = causal_mask_creation_function(
            config=self.config, attention_mask=attention_mask, past_key_values=model_inputs.get("past_key_values")
        )
"""

# generate() builds position ids once (5.3+); the mixin profile looks for this helper in the class
POSITION_IDS_IN_GENERATE = """
def _prepare_position_ids_for_generation(self, attention_mask):
    position_ids = attention_mask.long().cumsum(-1) - 1
    return position_ids.masked_fill(attention_mask == 0, 0)
"""

REMOTE_CODE_CACHE_POSITION = """
    if self.is_remote_code() and "cache_position" in set(inspect.signature(self.forward).parameters):
        logger.warning_once("remote code expects cache_position")
        past_seen_tokens = past_key_values.get_seq_length() if past_key_values is not None else 0
        cache_position = torch.arange(sequence_length, device=input_ids.device) + past_seen_tokens
        model_inputs["cache_position"] = cache_position
"""


@dataclasses.dataclass(frozen=True)
class EraCase:
    source: str
    era: Era
    behaviours: frozenset[str]
    #: behaviour -> facets its (first) occurrence must have
    facets: dict[str, dict[str, str]]
    never_forwarded: tuple[str, ...] = ("labels",)


CACHE_POSITION_BEHAVIOURS = frozenset(
    {
        "slice-by-cache-position",
        "inputs-embeds-first-step",
        "encoder-decoder-ids-key",
        "position-ids-from-mask",
        "slice-with-ids",
        "static-cache-mask",
        "forward-kwargs",
        "drop-key",
        "output-dict",
    }
)
POSITION_IDS_BY_THE_MIXIN = {"when": "forward accepts position_ids", "slice": "new tokens", "padding": "1"}
DECODER_NAMES = "position_ids,token_type_ids,decoder_position_ids"
BASE_MODEL_ELSE_GENERIC = "the base model's helper, else create_masks_for_generate (a model may override it)"

ERAS = {
    # cache_position forwarded for Cache classes; the synced-GPUs exception skipped while compiling;
    # position ids and token type ids cut to the length of what is fed; a 4D mask for StaticCache
    "4.47-4.49": EraCase(
        mixin_source(
            SIGNATURE,
            CACHE_POSITION_FOR_CACHE_CLASSES,
            """
            if past_key_values is not None:
                model_inputs["past_key_values"] = past_key_values
                if inputs_embeds is not None or (is_torchdynamo_compiling() or cache_position[-1] >= input_ids.shape[1]):
                    input_ids = input_ids[:, -cache_position.shape[0] :]
                elif input_ids.shape[1] != cache_position.shape[0]:
                    input_ids = input_ids[:, cache_position]
            """,
            IDS_OR_EMBEDS.format(first_step="cache_position[0] == 0"),
            POSITION_IDS.format(key='"position_ids"', padding=1),
            SLICE_LIKE_WHAT_IS_FED.format(
                names='["position_ids", "token_type_ids"]',
                cached="past_key_values is not None",
                embeds='model_inputs["inputs_embeds"]',
                dims=":",
            ),
            """
            if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
                batch_size, sequence_length = model_inputs[input_ids_key].shape
                base_model = getattr(self, self.base_model_prefix, None)
                causal_mask_creation_function = getattr(base_model, "_prepare_4d_causal_attention_mask_with_cache_position", None)
                attention_mask = causal_mask_creation_function(
                    attention_mask, sequence_length=sequence_length, batch_size=batch_size, cache_position=cache_position
                )
            if attention_mask is not None:
                model_inputs["attention_mask"] = attention_mask
            """,
            FORWARD_THE_REST,
        ),
        Era.CACHE_POSITION,
        CACHE_POSITION_BEHAVIOURS | {"synthesise-cache-position"},
        {
            "inputs-embeds-first-step": {"first_step": "cache_position"},
            "position-ids-from-mask": POSITION_IDS_BY_THE_MIXIN,
            "slice-with-ids": {"names": "position_ids,token_type_ids"},
            "static-cache-mask": {"cache": "StaticCache", "helper": "the base model's helper"},
        },
    ),
    # 4.50: the embeddings are sliced when there are no ids; the first step of each prompt is told by
    # the length of cache_position; decoder keys for encoder-decoder models (4.51 – 4.56 have the
    # slicing in _cache_dependant_input_preparation, see "4.57")
    "4.50-4.56": EraCase(
        mixin_source(
            SIGNATURE,
            CACHE_POSITION_FOR_CACHE_CLASSES,
            """
            if past_key_values is not None:
                model_inputs["past_key_values"] = past_key_values
                if inputs_embeds is not None and input_ids.shape[1] == 0:
                    inputs_embeds = inputs_embeds[:, -cache_position.shape[0] :]
                elif inputs_embeds is not None or cache_position[-1] >= input_ids.shape[1]:
                    input_ids = input_ids[:, -cache_position.shape[0] :]
                elif input_ids.shape[1] != cache_position.shape[0]:
                    input_ids = input_ids[:, cache_position]
            """,
            IDS_OR_EMBEDS.format(first_step="len(cache_position) == inputs_embeds.shape[1]"),
            DECODER_KEYS,
            POSITION_IDS.format(key="position_ids_key", padding=1),
            SLICE_LIKE_WHAT_IS_FED.format(
                names='["position_ids", "token_type_ids", "decoder_position_ids"]',
                cached="past_key_values is not None",
                embeds='model_inputs.get("inputs_embeds")',
                dims=":",
            ),
            COMPILEABLE_CACHE_MASK,
            MASKS_OUT,
            FORWARD_THE_REST,
        ),
        Era.CACHE_POSITION,
        CACHE_POSITION_BEHAVIOURS | {"synthesise-cache-position", "encoder-decoder-masks", "key-variable"},
        {
            "inputs-embeds-first-step": {"first_step": "len(cache_position)"},
            "position-ids-from-mask": POSITION_IDS_BY_THE_MIXIN,
            "slice-with-ids": {"names": DECODER_NAMES},
            "static-cache-mask": {"cache": "any compileable Cache", "helper": BASE_MODEL_ELSE_GENERIC},
        },
    ),
    # 4.54 only: flash attention's cumulative sequence lengths, after the rest
    "4.54": EraCase(
        mixin_source(
            SIGNATURE,
            """
            model_inputs = {}
            model_inputs["cache_position"] = cache_position
            if past_key_values is not None:
                model_inputs["past_key_values"] = past_key_values
                inputs_embeds, input_ids = self._cache_dependant_input_preparation(input_ids, inputs_embeds, cache_position)
            model_inputs["input_ids"] = input_ids
            if "flash" in self.config._attn_implementation and self._supports_attention_backend:
                tensor_kws = {"dtype": torch.int32, "device": self.device}
                pos = model_inputs["position_ids"][:, -1]
                cu_seq_lens_k = torch.cat([torch.zeros(1, **tensor_kws), pos.cumsum(0).add(1)], 0)
                max_length_k = int(pos.max()) + 1
                bs, seq_len = input_ids.size()
                q_len = torch.ones(bs, **tensor_kws) if seq_len == 1 else pos.to(torch.int32).add(1)
                cu_seq_lens_q = torch.cat([torch.zeros(1, **tensor_kws), q_len.cumsum(0)], 0)
                max_length_q = int(q_len.max())
                model_inputs.update(
                    cu_seq_lens_q=cu_seq_lens_q.to(self.device), cu_seq_lens_k=cu_seq_lens_k.to(self.device),
                    max_length_q=max_length_q, max_length_k=max_length_k,
                )
            """,
            FORWARD_THE_REST,
        ),
        Era.CACHE_POSITION,
        frozenset({"slice-by-cache-position", "flash-attention-seq-lens", "forward-kwargs"}),
        {},
    ),
    # 4.51 – 5.2 slice in _cache_dependant_input_preparation; from 4.54 cache_position is always passed
    "4.57": EraCase(
        mixin_source(
            SIGNATURE,
            """
            model_inputs = {}
            model_inputs["cache_position"] = cache_position
            if past_key_values is not None:
                model_inputs["past_key_values"] = past_key_values
                inputs_embeds, input_ids = self._cache_dependant_input_preparation(input_ids, inputs_embeds, cache_position)
            """,
            IDS_OR_EMBEDS.format(first_step="len(cache_position) == inputs_embeds.shape[1]"),
            DECODER_KEYS,
            POSITION_IDS.format(key="position_ids_key", padding=1),
            SLICE_LIKE_WHAT_IS_FED.format(
                names='["position_ids", "token_type_ids", "decoder_position_ids"]',
                cached="past_key_values is not None",
                embeds='model_inputs.get("inputs_embeds")',
                dims=":",
            ),
            COMPILEABLE_CACHE_MASK,
            MASKS_OUT,
            FORWARD_THE_REST,
        ),
        Era.CACHE_POSITION,
        CACHE_POSITION_BEHAVIOURS | {"encoder-decoder-masks", "key-variable"},
        {
            "inputs-embeds-first-step": {"first_step": "len(cache_position)"},
            "position-ids-from-mask": POSITION_IDS_BY_THE_MIXIN,
            "slice-with-ids": {"names": DECODER_NAMES},
            "static-cache-mask": {"cache": "any compileable Cache", "helper": BASE_MODEL_ELSE_GENERIC},
        },
    ),
    # 5.0 – 5.2: sliced also when a cache is about to be used (use_cache, defaulting to the config);
    # the first step is the loop's is_first_iteration; 5.2 pads position ids with 0, slices 3D inputs
    "5.0-5.2": EraCase(
        mixin_source(
            SIGNATURE.replace("**kwargs", "is_first_iteration=False, **kwargs"),
            """
            model_inputs = {}
            model_inputs["cache_position"] = cache_position
            if past_key_values is not None:
                model_inputs["past_key_values"] = past_key_values
            use_cache = kwargs.get("use_cache")
            if use_cache is None:
                use_cache = getattr(self.config, "use_cache", False)
            if past_key_values is not None or use_cache:
                inputs_embeds, input_ids = self._cache_dependant_input_preparation(input_ids, inputs_embeds, cache_position)
            """,
            IDS_OR_EMBEDS.format(first_step="is_first_iteration"),
            DECODER_KEYS,
            POSITION_IDS.format(key="position_ids_key", padding=0),
            SLICE_LIKE_WHAT_IS_FED.format(
                names='["position_ids", "token_type_ids", "decoder_position_ids"]',
                cached="past_key_values is not None or use_cache",
                embeds='model_inputs.get("inputs_embeds")',
                dims="...",
            ),
            COMPILEABLE_CACHE_MASK,
            MASKS_OUT,
            FORWARD_THE_REST,
        ),
        Era.CACHE_POSITION,
        CACHE_POSITION_BEHAVIOURS | {"encoder-decoder-masks", "key-variable", "read-kwarg"},
        {
            "inputs-embeds-first-step": {"first_step": "is_first_iteration"},
            "position-ids-from-mask": {**POSITION_IDS_BY_THE_MIXIN, "padding": "0"},
            "slice-with-ids": {"names": DECODER_NAMES},
            "static-cache-mask": {"cache": "any compileable Cache", "helper": BASE_MODEL_ELSE_GENERIC},
        },
    ),
    # 5.3 – 5.20: next_sequence_length; position ids and token_type_ids moved out of kwargs and cut
    # when longer; labels and next_sequence_length never forwarded; moved onto the model's device
    "5.3-5.20": EraCase(
        mixin_source(
            NEXT_SEQUENCE_SIGNATURE,
            IDS_OR_EMBEDS_BY_NEXT_SEQUENCE_LENGTH,
            """
            if (token_type_ids := kwargs.pop("token_type_ids", None)) is not None:
                model_inputs["token_type_ids"] = token_type_ids
            """,
            CUT_WHAT_IS_LONGER.format(names='[position_ids_key, "token_type_ids", "mm_token_type_ids"]'),
            MASK_FOR_COMPILEABLE_CACHES.format(mask_test="attention_mask is not None and attention_mask.ndim == 2"),
            MASKS_OUT,
            """
            kwargs_to_avoid_forwarding = ("labels", "next_sequence_length")
            for key, value in kwargs.items():
                if key not in model_inputs and key not in kwargs_to_avoid_forwarding:
                    model_inputs[key] = value
            """,
            REMOTE_CODE_CACHE_POSITION,
            """
            input_tensor = model_inputs.get("inputs_embeds", model_inputs[input_ids_key])
            if self.device.type != "meta" and input_tensor is not None and input_tensor.device != self.device:
                for key, value in model_inputs.items():
                    if isinstance(value, torch.Tensor):
                        model_inputs[key] = value.to(self.device)
            return model_inputs
            """,
            helpers=POSITION_IDS_IN_GENERATE,
        ),
        Era.NEXT_SEQUENCE_LENGTH,
        frozenset(
            {
                "slice-by-next-sequence-length",
                "inputs-embeds-first-step",
                "slice-with-ids",
                "static-cache-mask",
                "forward-kwargs",
                "remote-code-cache-position",
                "move-to-device",
                "position-ids-from-mask",
            }
        ),
        {
            "inputs-embeds-first-step": {"first_step": "is_first_iteration"},
            "slice-with-ids": {"names": "position_ids,decoder_position_ids,token_type_ids,mm_token_type_ids"},
            "forward-kwargs": {"never": "labels,next_sequence_length"},
            "position-ids-from-mask": {**POSITION_IDS_BY_THE_MIXIN, "padding": "0", "where": "once, in generate()"},
        },
        never_forwarded=("labels", "next_sequence_length"),
    ),
    # 5.23: every token type key moved out of kwargs; multimodal inputs only on the first iteration
    "5.23": EraCase(
        mixin_source(
            NEXT_SEQUENCE_SIGNATURE,
            IDS_OR_EMBEDS_BY_NEXT_SEQUENCE_LENGTH,
            """
            for token_type_key in ("token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids"):
                if (token_type := kwargs.pop(token_type_key, None)) is not None:
                    model_inputs[token_type_key] = token_type
            """,
            CUT_WHAT_IS_LONGER.format(
                names='[position_ids_key, "token_type_ids", "mm_token_type_ids", "moe_mm_token_type_ids"]'
            ),
            MASK_FOR_COMPILEABLE_CACHES.format(mask_test="(attention_mask is None or attention_mask.ndim == 2)"),
            MASKS_OUT,
            """
            kwargs_to_avoid_forwarding = ("labels", "next_sequence_length")
            for key, value in kwargs.items():
                if key in kwargs_to_avoid_forwarding:
                    continue
                elif key in MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL and (
                    not is_first_iteration and kwargs.get("use_cache", True)
                ):
                    continue
                elif key not in model_inputs:
                    model_inputs[key] = value
            """,
            REMOTE_CODE_CACHE_POSITION,
            """
            input_tensor = model_inputs.get("inputs_embeds", model_inputs[input_ids_key])
            if self.device.type != "meta" and input_tensor is not None and input_tensor.device != self.device:
                model_inputs = move_to_device(model_inputs, self.device)
            return model_inputs
            """,
            helpers=POSITION_IDS_IN_GENERATE,
        ),
        Era.NEXT_SEQUENCE_LENGTH,
        frozenset(
            {
                "slice-by-next-sequence-length",
                "inputs-embeds-first-step",
                "slice-with-ids",
                "static-cache-mask",
                "forward-kwargs",
                "remote-code-cache-position",
                "move-to-device",
                "position-ids-from-mask",
            }
        ),
        {
            "slice-with-ids": {
                "names": "position_ids,decoder_position_ids,token_type_ids,mm_token_type_ids,moe_mm_token_type_ids"
            },
            "forward-kwargs": {
                "never": "labels,next_sequence_length",
                "first_step_only": "MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL",
            },
        },
        never_forwarded=("labels", "next_sequence_length"),
    ),
}


def assert_fully_recognised(profile: MixinProfile) -> None:
    assert profile.unrecognised == (), "\n".join(f"line {u.line}: {u.code}" for u in profile.unrecognised)


@pytest.mark.parametrize("label", ERAS)
def test_era_is_fully_recognised(label: str) -> None:
    case = ERAS[label]
    profile = profile_from_source(case.source, f"synthetic {label}")
    assert_fully_recognised(profile)
    assert profile.era is case.era
    assert case.behaviours <= profile.behaviours, sorted(case.behaviours - profile.behaviours)
    found = profile.behaviour_facets()
    for behaviour, facets in case.facets.items():
        assert facets.items() <= found[behaviour][0].items(), (behaviour, found[behaviour])
    assert profile.never_forwarded == case.never_forwarded


def test_slicing_by_cache_position_is_under_a_cache_guard() -> None:
    """``past_key_values is not None or use_cache`` (5.0 – 5.2) counts as a cache guard, like the others."""
    for label in ("4.47-4.49", "4.50-4.56", "4.57", "5.0-5.2"):
        profile = profile_from_source(ERAS[label].source, label)
        assert profile.analysis is not None
        (slicing,) = [r for r in profile.analysis.recognised if r.behaviour == "slice-by-cache-position"]
        assert "not under a cache guard" not in slicing.detail


def test_the_helper_call_is_claimed_only_with_the_ids_and_embeddings_in_place() -> None:
    source = mixin_source(
        SIGNATURE,
        """
        model_inputs = {}
        inputs_embeds, input_ids = self._cache_dependant_input_preparation(inputs_embeds, input_ids, cache_position)
        return model_inputs
    """,
    )
    profile = profile_from_source(source, "swapped arguments")
    assert len(profile.unrecognised) == 1 and "_cache_dependant_input_preparation" in profile.unrecognised[0].code
    assert profile.era is Era.UNKNOWN


def test_hoisted_mixin_stays_fully_recognised() -> None:
    profile = hoisted_profile()
    assert_fully_recognised(profile)
    assert profile.era is Era.CACHE_POSITION
    assert profile.hoisted
    assert {
        "slice-by-cache-position",
        "inputs-embeds-first-step",
        "position-ids-from-mask",
        "slice-with-ids",
        "static-cache-mask",
        "synthesise-cache-position",
        "forward-kwargs",
    } <= profile.behaviours


# --- real releases -----------------------------------------------------------------------------------

#: a spread of releases between the two the integration tests scan (4.46.3 and 5.23.0), one per shape
RELEASES = {
    "4.47.1": Era.CACHE_POSITION,  # the synced-GPUs exception skipped while compiling
    "4.50.3": Era.CACHE_POSITION,  # three-branch slicing, len(cache_position), decoder keys
    "4.54.1": Era.CACHE_POSITION,  # _cache_dependant_input_preparation, compileable caches, flash attention
    "5.1.0": Era.CACHE_POSITION,  # use_cache guard, is_first_iteration
    "5.10.0": Era.NEXT_SEQUENCE_LENGTH,  # next_sequence_length, token_type_ids moved out of kwargs
}
MIXIN_MEMBER = "transformers/generation/utils.py"


def release_mixin(version: str) -> Path:
    """``transformers/generation/utils.py`` of a release's wheel, downloaded once into the user cache."""
    target = cache_dir("wheels", version) / MIXIN_MEMBER
    if target.is_file():
        return target
    download = cache_dir("wheels", version, "download")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            f"transformers=={version}",
            "-d",
            str(download),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    wheels = sorted(download.glob(f"transformers-{version}-*.whl"))
    if done.returncode != 0 or not wheels:
        pytest.fail(f"pip download transformers=={version} failed:\n{done.stderr}")
    with zipfile.ZipFile(wheels[0]) as archive:
        text = archive.read(MIXIN_MEMBER)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(text)
    partial.replace(target)  # atomic: a concurrent worker sees the whole file or none
    for wheel in wheels:  # only the one file is kept
        wheel.unlink()
    download.rmdir()
    return target


@pytest.mark.network
@pytest.mark.parametrize("version", RELEASES)
def test_real_release_mixin_is_fully_recognised(version: str) -> None:
    path = release_mixin(version)
    profile = profile_from_source(path.read_text(encoding="utf-8"), f"transformers {version}")
    assert_fully_recognised(profile)
    assert profile.era is RELEASES[version]
    assert {
        "inputs-embeds-first-step",
        "slice-with-ids",
        "static-cache-mask",
        "forward-kwargs",
        "position-ids-from-mask",
    } <= profile.behaviours


@pytest.mark.parametrize(
    ("source", "why"),
    [
        pytest.param(
            """
            for model_input_name in ["position_ids", extra_name]:
                model_input = kwargs.get(model_input_name)
                if model_input is not None:
                    if past_key_values is not None:
                        model_input = model_input[:, -input_ids.shape[1] :]
                        model_input = model_input.clone(memory_format=torch.contiguous_format)
                    model_inputs[model_input_name] = model_input
            """,
            "a name the loop cannot read",
            id="slice-with-ids-variable-name",
        ),
        pytest.param(
            """
            for model_input_name in ["position_ids", "token_type_ids"]:
                model_input = kwargs.get(model_input_name)
                if model_input is not None:
                    if use_cache:
                        model_input = model_input[:, -input_ids.shape[1] :]
                        model_input = model_input.clone(memory_format=torch.contiguous_format)
                    model_inputs[model_input_name] = model_input
            """,
            "sliced under a test that is not a cache guard",
            id="slice-with-ids-not-a-cache-guard",
        ),
        pytest.param(
            """
            for model_input_name in ["position_ids", "token_type_ids"]:
                model_input = kwargs.get(model_input_name)
                if model_input is not None:
                    if past_key_values is not None:
                        current_input_length = (
                            inputs_embeds.shape[1] if inputs_embeds is not None else model_inputs[input_ids_key].shape[1]
                        )
                        model_input = model_input[:, -current_input_length:]
                        model_input = model_input.clone(memory_format=torch.contiguous_format)
                    model_inputs[model_input_name] = model_input
            """,
            "the length of the embeddings given, not of those fed",
            id="slice-with-ids-other-length",
        ),
        pytest.param(
            """
            if attention_mask is not None and kwargs.get(key) is None and key in set(inspect.signature(self.forward).parameters.keys()):
                position_ids = attention_mask.long().cumsum(-1) - 1
                position_ids.masked_fill_(attention_mask == 0, 1)
                kwargs[key] = position_ids
            """,
            "a key variable that is not known to name position_ids",
            id="position-ids-unknown-key",
        ),
        pytest.param(
            """
            use_cache = kwargs.get("use_cache")
            if use_cache is None:
                use_cache = getattr(self.config, "output_attentions", False)
            """,
            "falls back to another setting",
            id="read-kwarg-other-setting",
        ),
    ],
)
def test_mixin_templates_stay_tight(source: str, why: str) -> None:
    """Near misses of the mixins' idioms leave a statement unrecognised (and so keep an override bespoke)."""
    assert analyse_statements(textwrap.dedent(source)).unrecognised, why

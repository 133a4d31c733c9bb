"""How each model class is really used: the config settings that put a tiny model on the paths users
take, and the variants of them worth verifying as well.

A tiny model built from config defaults can switch off exactly the code a migration changes: a
BERT-style ``*ForCausalLM`` defaults to ``is_decoder=False`` and then never uses a cache, so every
cache scenario passes whatever its ``prepare_inputs_for_generation`` does. Here each class gets the
settings its own code asks for (the class warns without ``is_decoder=True``), and then, as
variants, the other valid settings of the switches that change generation paths:

- ``is_decoder=False`` for those decoder heads (they still generate, without a cache);
- the eager attention implementation for classes that default to SDPA (the masks differ);
- the other layout of the model's own cache where a config switch picks it (``multi_query``): an
  override that read the past length by the layout is checked on both;
- cross-attention on: alone, given encoder states by the caller (an override that returned a closed
  dict dropped them), and as the decoder of an ``EncoderDecoderModel``, whose own
  ``prepare_inputs_for_generation`` calls the decoder's: a change to the decoder's reaches it;
- a long-context RoPE (``longrope``) whose switch to its long factors falls inside the scenarios' sequences, for a
  class whose own code reads ``original_max_position_embeddings`` (Phi-3's override drops the cache the step a
  sequence passes it: the cached keys were rotated with the short factors). Tiny configs keep the default
  length (4,096), so without the variant that code never runs.

A class's own code may also make a scenario necessary (``required_scenarios``): the llava family's legacy prompt
path runs only on the prompt ``multimodal-legacy`` sends, Phi-3's cache reset only in the long-rope variant, so
where that prompt or variant cannot be built the class is not identical but unverified.

Runs in the verification environment (stdlib, torch, transformers), like :mod:`tiny`; the old side
decides the variants and writes them into the manifest, the new side replays them.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from typing import Any

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (model classes, configs, models) are Any.

#: class names of language-model heads that may be the decoder half of an encoder family
DECODER_HEAD = re.compile(r"(ForCausalLM|LMHeadModel|GenerationDecoder|Decoder)$")

#: scenarios each variant runs (the primary model runs every scenario)
IS_DECODER_FALSE_SCENARIOS = ("greedy", "left-padded-batch", "sampling", "assisted")
EAGER_SCENARIOS = ("left-padded-batch", "static-cache", "assisted")
ENCODER_DECODER_SCENARIOS = ("greedy", "greedy-no-cache", "left-padded-batch", "beam-search", "sampling", "assisted")
CROSS_ATTENTION_SCENARIOS = ("greedy", "encoder-hidden-states", "greedy-no-cache")
#: config switches that pick the layout of the model's own cache, which its code reads the past length by
#: (GPTBigCode's and Falcon's ``multi_query``): the other value runs the scenarios that slice by that length
CACHE_LAYOUT_SWITCHES = ("multi_query",)
CACHE_LAYOUT_SCENARIOS = ("left-padded-batch", "beam-search", "assisted", "prefilled-cache")
#: the original context length of the long-RoPE variant: a prompt of 7 tokens passes it on its second new token
LONG_ROPE_ORIGINAL_LENGTH = 8
LONG_ROPE = "long-rope"
LONG_ROPE_SCENARIOS = ("greedy", "greedy-no-cache", "left-padded-batch", "sampling", "long")


@dataclasses.dataclass(frozen=True)
class Variant:
    """One way of configuring the class: its settings, the scenarios it runs, how it is built."""

    name: str  # "as-used" for the primary model, else what differs ("is_decoder=False")
    settings: dict[str, Any]  # config attributes set before the model is built
    scenarios: tuple[str, ...] | None = None  # None: every scenario
    #: "encoder-decoder": built as the decoder of an EncoderDecoderModel (with a tiny BERT encoder)
    composite: str | None = None
    #: from_pretrained() keyword arguments (an attention implementation is decided at load time)
    load: dict[str, Any] = dataclasses.field(default_factory=dict)
    why: str = ""
    #: why the variant could not be built (its scenarios then run on neither side)
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Variant:
        scenarios = data.get("scenarios")
        return cls(
            data["name"],
            dict(data.get("settings") or {}),
            tuple(scenarios) if scenarios is not None else None,
            data.get("composite"),
            dict(data.get("load") or {}),
            data.get("why", ""),
            data.get("error", ""),
        )

    @property
    def primary(self) -> bool:
        return self.name == PRIMARY

    def scenario_name(self, scenario: str) -> str:
        """How a scenario of this variant is named in the report: ``is_decoder=False/greedy``."""
        return scenario if self.primary else f"{self.name}/{scenario}"


PRIMARY = "as-used"


def _source(obj: Any) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _forward_takes(model_class: type[Any], name: str) -> bool:
    try:
        return name in inspect.signature(model_class.forward).parameters
    except (TypeError, ValueError):
        return False


def is_decoder_head(model_class: type, config: Any) -> bool:
    """A language-model head of an encoder family that its code runs as a decoder only with
    ``is_decoder=True`` (it warns otherwise): the setting a user sets to generate with it."""
    if getattr(config, "is_encoder_decoder", False) or not DECODER_HEAD.search(model_class.__name__):
        return False
    if not hasattr(config, "is_decoder"):
        return False
    module = inspect.getmodule(model_class)
    return "is_decoder" in _source(model_class) or "config.is_decoder" in _source(module)


#: what else a model type's decoder needs to decode with a cache, and why
DECODER_SETTINGS: dict[str, dict[str, Any]] = {
    # Mega's moving average runs both ways by default, and a two-way average cannot be cached
    "mega": {"bidirectional": False},
}


def primary_settings(model_class: type, config: Any) -> dict[str, Any]:
    """The settings the class is used with: a decoder head is a decoder, and the cache is on."""
    settings: dict[str, Any] = {}
    if is_decoder_head(model_class, config) and config.is_decoder is False:
        settings["is_decoder"] = True
        settings.update(DECODER_SETTINGS.get(str(getattr(config, "model_type", "")), {}))
    if getattr(config, "use_cache", None) is False:
        settings["use_cache"] = True
    return settings


def _sdpa_by_default(model_class: type, config: Any) -> bool:
    implementation = getattr(config, "_attn_implementation", None)
    return bool(getattr(model_class, "_supports_sdpa", False)) and implementation in (None, "sdpa")


def _can_decode_for_an_encoder(model_class: type, config: Any) -> bool:
    """Whether the class can be the decoder of an ``EncoderDecoderModel``: a decoder head whose forward attends to
    encoder states with ``add_cross_attention`` on, BERT-style (``is_decoder`` too) or GPT-2-style (a decoder-only
    model that needs no ``is_decoder``: ViT-GPT2 and bert2gpt2 run it so)."""
    return (
        not getattr(config, "is_encoder_decoder", False)
        and DECODER_HEAD.search(model_class.__name__) is not None
        and hasattr(config, "add_cross_attention")
        and _forward_takes(model_class, "encoder_hidden_states")
        # a BERT-style class decodes only as a decoder head (a subclass whose own code never says so is used as
        # its module shows, an encoder)
        and (is_decoder_head(model_class, config) or not _reads_is_decoder(model_class))
    )


def _reads_is_decoder(model_class: type) -> bool:
    """Whether the class, or a model class it inherits (transformers' own or a user's, not the shared bases of
    ``modeling_utils``), reads ``is_decoder``: BERT-style, where GPT-2's family needs no such switch."""
    shared = (
        "builtins",
        "torch.",
        "transformers.modeling_utils",
        "transformers.generation",
        "transformers.integrations",
    )
    return any("is_decoder" in _source(c) for c in model_class.__mro__ if not c.__module__.startswith(shared))


def _registered(config: Any) -> bool:
    """Whether ``AutoConfig`` knows the config's model type: an ``EncoderDecoderModel`` rebuilds its
    decoder's config through it (a decoder sub-config such as ``blip_text_model`` is unknown)."""
    try:
        from transformers import CONFIG_MAPPING

        return str(getattr(config, "model_type", "")) in CONFIG_MAPPING
    except Exception:  # noqa: BLE001 - no mapping to ask: do not build the composite
        return False


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: config attributes whose reading in a class's own ``prepare_inputs_for_generation`` means a path only one scenario
#: takes: 4.45's llava family compares the prompt's image tokens with them and, on a prompt with fewer (the legacy
#: path), passes the image on every step
LEGACY_PROMPT_ATTRIBUTES = ("image_seq_length", "video_seq_length")


def _reads_long_rope(code: Any, model_class: type) -> bool:
    """``code`` (the class, or its method) reads ``original_max_position_embeddings``, in a module that knows
    ``longrope``: a long-context RoPE whose switch to its long factors the class's own code handles."""
    return "original_max_position_embeddings" in _source(code) and "longrope" in _source(
        inspect.getmodule(model_class)
    )


def required_scenarios(model_class: type) -> dict[str, str]:
    """Scenario -> why, for each scenario an identical verdict needs because the class's own code takes a path only
    that scenario's inputs reach. Read off the method the class runs (its own override or one it inherits), on the
    old side: a change that drops the path must not be called identical by scenarios that never took it (a legacy
    prompt that could not be built, a long-rope variant that did not build)."""
    method = getattr(model_class, "prepare_inputs_for_generation", None)
    source = _source(method)
    out = {}
    read = [name for name in LEGACY_PROMPT_ATTRIBUTES if f"config.{name}" in source]
    if read:
        out["multimodal-legacy"] = (
            f"its prepare_inputs_for_generation reads {' and '.join(read)}: a prompt with "
            "fewer image tokens takes the legacy path"
        )
    if _reads_long_rope(method, model_class):
        # greedy decoding passes the variant's original context on its second new token (tests/test_usage.py)
        out[f"{LONG_ROPE}/greedy"] = (
            "its prepare_inputs_for_generation reads original_max_position_embeddings: only "
            "a sequence that passes it takes that path"
        )
    return out


def long_rope_settings(model_class: type, config: Any) -> dict[str, Any] | None:
    """Settings that switch a long-context RoPE to its long factors inside the scenarios' sequences, for a class
    whose own code reads ``original_max_position_embeddings`` (and a module that knows ``longrope``); None
    otherwise. The short factors are 1 (plain RoPE), the long ones grow with the frequency index."""
    if _int(getattr(config, "original_max_position_embeddings", None)) is None or not hasattr(config, "rope_scaling"):
        return None
    if not _reads_long_rope(model_class, model_class):
        return None
    hidden, heads = _int(getattr(config, "hidden_size", None)), _int(getattr(config, "num_attention_heads", None))
    head_dim = _int(getattr(config, "head_dim", None)) or (hidden // heads if hidden and heads else None)
    if not head_dim:
        return None
    half = head_dim // 2
    factors = {"short_factor": [1.0] * half, "long_factor": [1.0 + (i + 1) / half for i in range(half)]}
    return {
        "rope_scaling": {"type": "longrope", **factors},
        "original_max_position_embeddings": LONG_ROPE_ORIGINAL_LENGTH,
    }


def variants(model_class: type, config: Any, primary: dict[str, Any]) -> list[Variant]:
    """The primary variant first (``config`` was built with the ``primary`` settings), then the other
    valid settings of the switches that matter."""
    out = [Variant(PRIMARY, primary, why=_why(primary))]
    if primary.get("is_decoder"):  # the config defaults to a plain model: both ways are valid
        out.append(
            Variant(
                "is_decoder=False",
                {**primary, "is_decoder": False},
                IS_DECODER_FALSE_SCENARIOS,
                why="the class also runs as a plain (cache-less) model",
            )
        )
    if _sdpa_by_default(model_class, config):
        out.append(
            Variant(
                "eager",
                primary,
                EAGER_SCENARIOS,
                load={"attn_implementation": "eager"},
                why="the default attention is SDPA; eager builds its masks differently",
            )
        )
    if _can_decode_for_an_encoder(model_class, config):
        cross = {**primary, "is_decoder": True, "add_cross_attention": True}
        out.append(
            Variant(
                "cross-attention",
                cross,
                CROSS_ATTENTION_SCENARIOS,
                why="a decoder attending to encoder states the caller passes to generate()",
            )
        )
    for switch in CACHE_LAYOUT_SWITCHES:
        value = getattr(config, switch, None)
        if isinstance(value, bool):
            out.append(
                Variant(
                    f"{switch}={not value}",
                    {**primary, switch: not value},
                    CACHE_LAYOUT_SCENARIOS,
                    why=f"{switch} picks the layout of the cache the model reads its past length from",
                )
            )
    long_rope = long_rope_settings(model_class, config)
    if long_rope is not None:
        out.append(
            Variant(
                LONG_ROPE,
                {**primary, **long_rope},
                LONG_ROPE_SCENARIOS,
                why="a long-context RoPE switching factors within the sequence, which the class's own "
                "code reads (original_max_position_embeddings)",
            )
        )
    if _can_decode_for_an_encoder(model_class, config) and _registered(config):
        out.append(
            Variant(
                "encoder-decoder",
                {**primary, "is_decoder": True, "add_cross_attention": True},
                ENCODER_DECODER_SCENARIOS,
                composite="encoder-decoder",
                why="the decoder of an EncoderDecoderModel, whose override calls this one",
            )
        )
    out.extend(other_decoders(model_class, config))
    return out


#: the decoders an encoder-decoder wrapper also runs with (model type -> config class, causal LM class): one whose
#: ``prepare_inputs_for_generation`` makes a mask of ones when asked without one (BERT's, as TrOCR's and MBart's do),
#: one that passes none (GPT-2's)
WRAPPER_DECODERS = {"bert": ("BertConfig", "BertLMHeadModel"), "gpt2": ("GPT2Config", "GPT2LMHeadModel")}
#: the composite of a variant whose wrapper runs another decoder: ``decoder:<model type>``
OTHER_DECODER = "decoder:"


def is_wrapper(model_class: type, config: Any) -> bool:
    """An encoder-decoder wrapper: built from any encoder and any decoder (``__init__(config, encoder, decoder)``),
    its config holding the decoder's (``EncoderDecoderModel``, ``VisionEncoderDecoderModel``,
    ``SpeechEncoderDecoderModel``, and wrappers of the same shape in a user's code)."""
    try:
        parameters = inspect.signature(model_class).parameters  # its __init__, less self
    except (TypeError, ValueError):
        return False
    decoder = getattr(config, "decoder", None)
    return {"encoder", "decoder"} <= set(parameters) and isinstance(getattr(decoder, "model_type", None), str)


def other_decoders(model_class: type, config: Any) -> list[Variant]:
    """For a wrapper, a variant per decoder of :data:`WRAPPER_DECODERS` its own config does not already use: what a
    wrapper prepares for its decoder may come from the decoder's own ``prepare_inputs_for_generation`` (4.45's ask the
    decoder for its mask), and decoders make different ones: a verdict on one decoder says nothing of the others."""
    if not is_wrapper(model_class, config):
        return []
    used = str(config.decoder.model_type)
    return [
        Variant(
            f"decoder={kind}",
            {},
            ENCODER_DECODER_SCENARIOS,
            composite=OTHER_DECODER + kind,
            why=f"the wrapper with a {kind} decoder (its own config's is {used}): a wrapper is built from any "
            "decoder, and what it prepares may come from the decoder's method",
        )
        for kind in WRAPPER_DECODERS
        if kind != used
    ]


def _why(settings: dict[str, Any]) -> str:
    if not settings:
        return "the config's own settings"
    reasons = []
    if settings.get("is_decoder"):
        reasons.append("is_decoder=True: the class runs as a decoder (and caches) only so")
    if settings.get("use_cache"):
        reasons.append("use_cache=True")
    return "; ".join(reasons)


def apply_settings(config: Any, settings: dict[str, Any]) -> Any:
    """``config`` with ``settings`` set (on the text config of a composite too, where it has one)."""
    for key, value in settings.items():
        setattr(config, key, value)
    return config


# ------------------------------------------------------------------------------------------ composite


#: the sizes of the halves this module builds itself: the composite's BERT encoder, a wrapper's other decoder
TINY_BERT = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "max_position_embeddings": 64,
}
TINY_GPT2 = {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64}


def with_decoder(wrapper: Any, kind: str, seed: int) -> Any:
    """``wrapper`` rebuilt around a tiny decoder of ``kind`` (:data:`WRAPPER_DECODERS`) with cross-attention on, its
    encoder and its special tokens kept."""
    import torch
    import transformers

    config_name, model_name = WRAPPER_DECODERS[kind]
    old = wrapper.config.decoder
    sizes = TINY_BERT if kind == "bert" else TINY_GPT2
    # the old decoder's special tokens, None for none (GPT-2's defaults lie outside a tiny vocabulary)
    tokens = {name: getattr(old, name, None) for name in ("pad_token_id", "bos_token_id", "eos_token_id")}
    config = getattr(transformers, config_name)(
        vocab_size=old.vocab_size,
        is_decoder=True,
        add_cross_attention=True,
        **sizes,
        **{k: v if _int(v) is not None else None for k, v in tokens.items()},
    )
    torch.manual_seed(seed + 200)
    decoder = getattr(transformers, model_name)(config)
    model = type(wrapper)(encoder=wrapper.encoder, decoder=decoder)
    for name in ("decoder_start_token_id", "pad_token_id", "eos_token_id"):
        setattr(model.config, name, getattr(wrapper.config, name, None))
    model.generation_config = wrapper.generation_config
    return model.eval()


def encoder_decoder(decoder: Any, seed: int) -> Any:
    """An ``EncoderDecoderModel`` with a tiny BERT encoder and ``decoder`` (cross-attention on)."""
    import torch
    from transformers import BertConfig, BertModel, EncoderDecoderModel

    # the composite projects the encoder states when their width differs (enc_to_dec_proj)
    encoder_config = BertConfig(vocab_size=99, pad_token_id=0, **TINY_BERT)
    torch.manual_seed(seed + 100)
    encoder = BertModel(encoder_config)
    model = EncoderDecoderModel(encoder=encoder, decoder=decoder)
    text = decoder.config
    start = next(
        (
            v
            for v in (getattr(text, "bos_token_id", None), getattr(text, "pad_token_id", None), 0)
            if _int(v) is not None
        ),
        0,
    )
    model.config.decoder_start_token_id = start
    pad = getattr(text, "pad_token_id", None)
    model.config.pad_token_id = pad if pad is not None else 0
    return model.eval()

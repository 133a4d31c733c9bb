"""Tiny random models for any generative transformers class, built from its config class's defaults.

This module runs inside the *verification* environment (torch plus the checkout's dependencies,
with the transformers under test on ``PYTHONPATH``): it imports only the standard library, torch
and transformers, never ``codemod``, and is importable by path (``sys.path.insert(0, ".../verify");
import tiny``).

There are no weights and no Hub configs: a config comes from ``model_class.config_class()`` with
every size shrunk. Shrinking is table-driven (:data:`GROUPS` names the attributes of each kind of
size, :data:`SIZES` the values to try), recursing into sub-configs (``text_config``,
``vision_config``, ``attn_config``...), truncating per-layer lists, and keeping every special token
id valid (the vocabulary grows to hold the largest one). The config is then rebuilt through its
class, from only the values that changed, so that ``__init__`` recomputes what it derives and runs
its own validation. :data:`FIXUPS` holds the few per-model adjustments the table can't express.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import math
import random
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
import transformers

__all__ = [
    "TinyModelError",
    "tiny_config",
    "tiny_model",
    "generation_inputs",
    "multimodal_inputs",
    "special_token_ids",
    "GROUPS",
    "SIZES",
    "FIXUPS",
]


class TinyModelError(Exception):
    """A tiny model (or its inputs) can't be made for this class; the message is a one-line reason."""


#: the sizes to try, in order: the first that builds wins (each is tiny; the later ones fit the
#: few models whose arithmetic wants bigger or differently divisible dimensions)
SIZES: tuple[dict[str, int], ...] = (
    {"layers": 2, "hidden": 64, "heads": 4, "intermediate": 64, "experts": 4, "top_k": 2, "image": 32, "patch": 8},
    {"layers": 2, "hidden": 32, "heads": 2, "intermediate": 37, "experts": 4, "top_k": 2, "image": 32, "patch": 8},
    {"layers": 2, "hidden": 128, "heads": 8, "intermediate": 128, "experts": 4, "top_k": 2, "image": 64, "patch": 16},
    {"layers": 4, "hidden": 96, "heads": 6, "intermediate": 96, "experts": 8, "top_k": 2, "image": 48, "patch": 16},
)

#: smallest and largest ``max_position_embeddings`` (and kin) a tiny model keeps
MIN_POSITIONS, MAX_POSITIONS = 64, 512
#: the smallest vocabulary: room for random ids that avoid every special token
MIN_VOCAB = 99

#: attribute names of each kind of size (exact names; a sub-config is shrunk with the same table)
GROUPS: dict[str, tuple[str, ...]] = {
    "layers": (
        "num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_encoder_layers", "num_decoder_layers",
        "encoder_layers", "decoder_layers", "speech_encoder_layers", "t2u_encoder_layers", "t2u_decoder_layers",
        "num_text_layers", "num_vision_layers", "text_layers", "vision_layers", "depth",
    ),
    "hidden": (
        "hidden_size", "d_model", "n_embd", "n_embed", "embed_dim", "model_dim", "word_embed_proj_dim",
        "embedding_size", "input_embedding_size", "output_embedding_size", "encoder_hidden_size",
        "projection_dim", "shared_representation_size", "ema_projection_size", "hidden_dim", "dim",
        "vision_embed_dim", "text_embed_dim", "projector_hidden_size", "xpath_unit_hidden_size",
    ),
    "heads": (
        "num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
        "decoder_attention_heads", "speech_encoder_attention_heads", "t2u_encoder_attention_heads",
        "t2u_decoder_attention_heads", "num_encoder_attention_heads", "num_decoder_attention_heads",
    ),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "kv_n_heads", "n_head_kv", "multi_query_group_num"),
    "intermediate": (
        "intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner", "dff",
        "ffn_hidden_size", "moe_intermediate_size", "shared_expert_intermediate_size", "nffn_hidden_size",
        "speech_encoder_intermediate_size", "t2u_encoder_ffn_dim", "t2u_decoder_ffn_dim", "intermediate_dim",
        "vision_intermediate_size", "mlp_dim",
    ),
    "head_dim": ("head_dim", "d_kv", "kv_channels", "attention_head_size", "head_size"),
    "experts": ("num_experts", "num_local_experts", "moe_num_experts", "n_routed_experts"),
    "top_k": ("num_experts_per_tok", "moe_top_k", "num_selected_experts", "num_experts_per_token"),
    "positions": (
        "max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "max_sequence_length",
        "max_source_positions", "max_target_positions", "max_encoder_position_embeddings",
        "max_decoder_position_embeddings", "t2u_max_position_embeddings", "max_text_positions",
    ),
    "vocab": ("vocab_size", "src_vocab_size", "tgt_vocab_size", "decoder_vocab_size", "text_vocab_size"),
}
_GROUP_OF = {name: group for group, names in GROUPS.items() for name in names}

#: keys whose value (or values) is a special token id, by suffix
_TOKEN_SUFFIXES = ("token_id", "token_ids", "token_index", "_token")
#: sub-config keys that are not configs of a model part (never recursed into)
_NOT_SUBCONFIGS = {"rope_scaling", "rope_parameters", "quantization_config", "id2label", "label2id",
                   "task_specific_params", "vocabulary_map", "ffn_act_fn"}
#: attributes that every PretrainedConfig has and that don't describe the model
_BOOKKEEPING = {"transformers_version", "_name_or_path", "architectures", "_commit_hash",
                "_attn_implementation_autoset", "_attn_implementation_internal", "torch_dtype", "dtype"}


# ----------------------------------------------------------------------------------------- fixups
# Each fixup gets the config dict (already shrunk by the table, at the level of the config whose
# model_type it is keyed by) and the size; it edits the dict in place.

def _fix_gpt_neo(d: dict, size: dict) -> None:
    # attention_types ([[pattern, repeats]]) must expand to exactly num_layers entries
    d["attention_types"] = [[["global", "local"], size["layers"] // 2]]
    d.pop("attention_layers", None)
    d["window_size"] = min(d.get("window_size", 256), 8)  # a local window shorter than the prompt


def _fix_led(d: dict, size: dict) -> None:
    # the encoder pads to a multiple of the (even) attention window: keep it small
    d["attention_window"] = [4] * size["layers"]


def _fix_longformer_like(d: dict, size: dict) -> None:
    if isinstance(d.get("attention_window"), (int, list)):
        d["attention_window"] = [4] * size["layers"]


def _fix_mllama_text(d: dict, size: dict) -> None:
    # cross_attention_layers are layer indices: keep one, inside the shrunk stack
    d["cross_attention_layers"] = [size["layers"] - 1]


def _fix_mllama_vision(d: dict, size: dict) -> None:
    # the global stack and the intermediate-layer taps are indices into the local stack
    d["num_global_layers"] = 1
    d["intermediate_layers_indices"] = [0]
    d["vision_output_dim"] = size["hidden"] * 2  # hidden * (1 + len(intermediate_layers_indices))
    d["image_size"], d["patch_size"] = size["image"], size["patch"]
    d["max_num_tiles"] = 2
    d["supported_aspect_ratios"] = [[1, 1], [1, 2], [2, 1]]


def _fix_jetmoe(d: dict, size: dict) -> None:
    # heads are num_key_value_heads * num_experts_per_tok; kv_channels is the head size
    d["num_key_value_heads"] = size["heads"] // size["top_k"]
    d["kv_channels"] = size["hidden"] // size["heads"]


def _fix_dbrx(d: dict, size: dict) -> None:
    # the attention and ffn sizes live in plain dicts, not sub-configs with a model_type
    attn = dict(d.get("attn_config") or {})
    attn["kv_n_heads"] = 1 if attn.get("kv_n_heads", 1) == 1 else 2
    ffn = dict(d.get("ffn_config") or {})
    ffn.update(ffn_hidden_size=size["intermediate"], moe_num_experts=size["experts"], moe_top_k=size["top_k"])
    d["attn_config"], d["ffn_config"] = attn, ffn


def _fix_seamless(d: dict, size: dict) -> None:
    # the vocoder's upsampling halves its channels at every stage, and its unit/lang/speaker
    # embeddings feed it: small but still >= 1 channel at the end; the conformer's depthwise
    # conv and relative positions are sized for long speech
    d["upsample_initial_channel"] = 64
    d["unit_embed_dim"] = d["lang_embed_dim"] = d["spkr_embed_dim"] = 16
    d["conv_depthwise_kernel_size"] = 3
    d["num_conv_pos_embeddings"] = 16
    d["num_conv_pos_embedding_groups"] = 2
    for key in ("t2u_variance_predictor_embed_dim", "t2u_variance_predictor_hidden_dim"):
        if key in d:
            d[key] = size["hidden"]
    d["vocoder_num_spkrs"], d["vocoder_num_langs"] = 4, 4
    d["t2u_max_new_tokens"] = 16


def _fix_speecht5(d: dict, size: dict) -> None:
    # a small conv feature encoder (the raw audio is downsampled 5*2*2=20x) and positional conv
    d["conv_dim"] = [32, 32, 32]
    d["conv_stride"] = [5, 2, 2]
    d["conv_kernel"] = [10, 3, 3]
    d["num_feat_extract_layers"] = 3
    d["num_conv_pos_embeddings"] = 16
    d["num_conv_pos_embedding_groups"] = 2
    d["speech_decoder_prenet_units"] = d["speech_decoder_postnet_units"] = 32
    d["speaker_embedding_dim"] = 16
    d["max_speech_positions"] = 512
    d["encoder_max_relative_position"] = 16
    d["apply_spec_augment"] = False


def _fix_speech_to_text(d: dict, size: dict) -> None:
    # the conv subsampler's channels are free; the features per frame are the input's shape
    d["conv_channels"] = 32


def _fix_chameleon(d: dict, size: dict) -> None:
    # the VQ image tokenizer: a small resolution and channel count, few levels
    vq = dict(d.get("vq_config") or {})
    vq.update(embed_dim=16, num_embeddings=64, latent_channels=16, resolution=32, base_channels=16,
              channel_multiplier=[1, 2], num_res_blocks=1)
    d["vq_config"] = vq


def _fix_fuyu(d: dict, size: dict) -> None:
    # Fuyu keeps text sizes both at top level and in text_config; they must agree
    text = dict(d.get("text_config") or {})
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "max_position_embeddings", "vocab_size"):
        if key in d and key in text:
            text[key] = d[key]
    d["text_config"] = text


def _fix_nllb_moe(d: dict, size: dict) -> None:
    # every other layer is sparse by default (step 4): make both layers sparse so experts run
    d["encoder_sparse_step"] = d["decoder_sparse_step"] = 1
    d["expert_capacity"] = 16


def _fix_switch(d: dict, size: dict) -> None:
    # sparse every other layer, with room for every token in each expert
    d["encoder_sparse_step"] = d["decoder_sparse_step"] = 1
    d["expert_capacity"] = 16


def _fix_markuplm(d: dict, size: dict) -> None:
    # the xpath tag/subscript pad ids index embedding tables that keep their default sizes
    d.pop("xpath_unit_hidden_size", None)


def _fix_udop(d: dict, size: dict) -> None:
    # the 2D position embeddings index bounding boxes in [0, 1000]
    d["max_2d_position_embeddings"] = 1024


def _fix_llava_onevision(d: dict, size: dict) -> None:
    # anyres pinpoints must be multiples of the (tiny) image size
    s = size["image"]
    d["image_grid_pinpoints"] = [[s, s], [s, 2 * s], [2 * s, s], [2 * s, 2 * s]]


def _fix_git(d: dict, size: dict) -> None:
    pass


FIXUPS: dict[str, Callable[[dict, dict], None]] = {
    "gpt_neo": _fix_gpt_neo,
    "led": _fix_led,
    "longformer": _fix_longformer_like,
    "mllama_text_model": _fix_mllama_text,
    "mllama_vision_model": _fix_mllama_vision,
    "jetmoe": _fix_jetmoe,
    "dbrx": _fix_dbrx,
    "seamless_m4t": _fix_seamless,
    "seamless_m4t_v2": _fix_seamless,
    "speecht5": _fix_speecht5,
    "speech_to_text": _fix_speech_to_text,
    "chameleon": _fix_chameleon,
    "fuyu": _fix_fuyu,
    "nllb-moe": _fix_nllb_moe,
    "switch_transformers": _fix_switch,
    "markuplm": _fix_markuplm,
    "udop": _fix_udop,
    "llava_onevision": _fix_llava_onevision,
}


# ------------------------------------------------------------------------------------------ config

def _config_base() -> type:
    return getattr(transformers, "PreTrainedConfig", None) or transformers.PretrainedConfig


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_token_key(key: str) -> bool:
    return key.endswith(_TOKEN_SUFFIXES)


def _token_ids(value: Any) -> Iterator[int]:
    if _is_int(value):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _token_ids(item)


def _is_subconfig(key: str, value: Any) -> bool:
    return isinstance(value, dict) and key not in _NOT_SUBCONFIGS and (
        "model_type" in value or key.endswith(("_config", "config")) or key in ("encoder", "decoder", "generator")
    )


def special_token_ids(config: Any) -> set[int]:
    """Every special token id named anywhere in ``config`` (a config object or its dict), sub-configs included."""
    tree = config.to_dict() if hasattr(config, "to_dict") else config
    found: set[int] = set()

    def walk(d: dict) -> None:
        for key, value in d.items():
            if _is_subconfig(key, value) or (isinstance(value, dict) and key not in _NOT_SUBCONFIGS):
                walk(value)
            elif _is_token_key(key) and not key.startswith("t2u_"):
                found.update(i for i in _token_ids(value) if i >= 0)

    walk(tree)
    return found


def _shrink(d: dict, size: dict, vocab: int, notes: list[str], path: str) -> dict:
    """A copy of config dict ``d`` with every size in :data:`GROUPS` made tiny (recursively)."""
    out = dict(d)
    old_layers = {v for k, v in d.items() if _GROUP_OF.get(k) == "layers" and _is_int(v) and v > size["layers"]}

    def first(group: str, default: int) -> int:
        for key, value in out.items():
            if _GROUP_OF.get(key) == group and _is_int(value):
                return value
        return default

    for key, value in d.items():
        group = _GROUP_OF.get(key.lstrip("_"))
        if not _is_int(value) or group is None:
            continue
        if group == "layers":
            new = min(value, size["layers"]) if value > 0 else value
        elif group == "hidden":
            new = size["hidden"] if value > size["hidden"] else value
        elif group == "heads":
            new = size["heads"] if value > size["heads"] else value
        elif group == "intermediate":
            new = size["intermediate"] if value > size["intermediate"] else value
        elif group == "experts":
            new = min(value, size["experts"])
        elif group == "top_k":
            new = min(value, size["top_k"])
        elif group == "positions":
            new = min(max(value, MIN_POSITIONS), MAX_POSITIONS) if value > MAX_POSITIONS else value
        elif group == "vocab":
            new = vocab
        else:
            continue
        out[key] = new
    # kinds that depend on the shrunk heads/hidden of the same level
    heads = first("heads", size["heads"])
    hidden = first("hidden", size["hidden"])
    old_heads = next((v for k, v in d.items() if _GROUP_OF.get(k) == "heads" and _is_int(v)), None)
    for key, value in d.items():
        group = _GROUP_OF.get(key)
        if group == "kv_heads" and _is_int(value):
            if value == old_heads:
                out[key] = heads  # plain multi-head attention stays so
            elif value == 1:
                out[key] = 1  # multi-query stays so
            else:
                out[key] = 2 if heads % 2 == 0 else 1
        elif group == "head_dim" and _is_int(value):
            out[key] = max(hidden // max(heads, 1), 4)
    # images: small, with patches dividing them
    image, patch = out.get("image_size"), out.get("patch_size")
    if _is_int(image) and image > size["image"]:
        out["image_size"] = size["image"]
        if _is_int(patch) and (patch > size["patch"] or size["image"] % patch):
            out["patch_size"] = size["patch"]
    elif isinstance(image, (list, tuple)) and len(image) == 2 and all(_is_int(x) for x in image):
        if max(image) > size["image"]:
            out["image_size"] = [size["image"], size["image"]]
            if isinstance(patch, (list, tuple)):
                out["patch_size"] = [size["patch"], size["patch"]]
            elif _is_int(patch):
                out["patch_size"] = size["patch"]
    # per-layer lists: as long as the old stack, now as long as the new one
    for key, value in d.items():
        if isinstance(value, (list, tuple)) and len(value) in old_layers and not _is_token_key(key):
            out[key] = type(value)(value[: size["layers"]])
    # sub-configs, recursively
    for key, value in d.items():
        if _is_subconfig(key, value):
            out[key] = _shrink(value, size, vocab, notes, f"{path}{key}.")
    fixup = FIXUPS.get(str(d.get("model_type", "")))
    if fixup is not None:
        fixup(out, size)
        notes.append(f"{path or 'config'}: fixup for {d.get('model_type')}")
    for key in d:
        if out.get(key) != d[key] and not _is_subconfig(key, d[key]):
            notes.append(f"{path}{key}: {_short(d[key])} -> {_short(out.get(key))}")
    for key in out.keys() - d.keys():
        notes.append(f"{path}{key}: set to {_short(out[key])}")
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _changes(old: dict, new: dict) -> dict:
    """Only what differs (sub-config dicts keep their ``model_type`` so the right class is built)."""
    changed: dict = {}
    for key, value in new.items():
        if key in _BOOKKEEPING:
            continue
        before = old.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(before, dict) and _is_subconfig(key, value):
            inner = _changes(before, value)
            if inner:
                if "model_type" in value:
                    inner["model_type"] = value["model_type"]
                changed[key] = inner
        elif value != before:
            changed[key.lstrip("_") if key.startswith("_") and not key.startswith("__") else key] = value
    return changed


_MISSING = object()


def _quiet() -> contextlib.AbstractContextManager:
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    try:
        logging = transformers.utils.logging
        previous = logging.get_verbosity()
        logging.set_verbosity_error()
        stack.callback(logging.set_verbosity, previous)
    except Exception:  # pragma: no cover - very old or very new transformers
        pass
    return stack


def _default_config(config_class: type) -> Any:
    try:
        with _quiet():
            return config_class()
    except Exception as error:
        raise TinyModelError(f"{config_class.__name__}() needs arguments: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= 300 else text[:297] + "..."


def _build_config(config_class: type, size: dict, notes: list[str]) -> Any:
    default = _default_config(config_class)
    before = default.to_dict()
    vocab = max([MIN_VOCAB, *(i + 1 for i in special_token_ids(before))])
    after = _shrink(before, size, vocab, notes, "")
    changes = _changes(before, after)
    with _quiet():
        config = config_class(**changes)
    # attributes that __init__ doesn't take and recomputes from others must still be tiny
    for key, value in changes.items():
        if isinstance(value, dict):
            continue
        current = getattr(config, key, _MISSING)
        if current is not _MISSING and current != value and _GROUP_OF.get(key) in {"layers", "hidden", "heads", "intermediate"}:
            try:
                setattr(config, key, value)
            except Exception:
                pass
    return config


def tiny_config(model_class: type, *, seed: int = 0, size: dict | None = None) -> Any:
    """A small config for ``model_class``, derived from its config class's defaults (see the module doc).

    ``size`` overrides the first entry of :data:`SIZES`. ``seed`` is accepted for symmetry with
    :func:`tiny_model`; the config itself is deterministic.
    """
    config_class = getattr(model_class, "config_class", None)
    if config_class is None:
        raise TinyModelError(f"{model_class.__name__} has no config_class")
    return _build_config(config_class, dict(size or SIZES[0]), [])


def tiny_model(model_class: type, *, seed: int = 0) -> tuple[Any, list[str]]:
    """``model_class`` built from a tiny config under ``torch.manual_seed(seed)``, in eval mode, and notes.

    Tries each of :data:`SIZES` in turn; raises :class:`TinyModelError` with a one-line reason when
    none builds.
    """
    config_class = getattr(model_class, "config_class", None)
    if config_class is None or not isinstance(config_class, type):
        raise TinyModelError(f"{model_class.__name__} has no config_class")
    errors: list[str] = []
    for index, size in enumerate(SIZES):
        notes: list[str] = []
        try:
            config = _build_config(config_class, dict(size), notes)
        except TinyModelError:
            raise
        except Exception as error:
            errors.append(f"config: {_one_line(error)}")
            continue
        try:
            _seed_everything(seed)
            with _quiet():
                model = model_class(config)
            model.eval()
        except Exception as error:
            errors.append(f"build: {_one_line(error)}")
            continue
        if index:
            notes.insert(0, f"size {index} of {len(SIZES)} ({size}) after: {errors[-1]}")
        return model, notes
    raise TinyModelError(f"{model_class.__name__}: no tiny size builds ({errors[0]})")


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except Exception:  # numpy is optional
        pass


# ------------------------------------------------------------------------------------------ inputs

def _text_config(config: Any) -> Any:
    getter = getattr(config, "get_text_config", None)
    if getter is not None:
        try:
            return getter(decoder=True)
        except Exception:
            pass
    for name in ("text_config", "decoder"):
        sub = getattr(config, name, None)
        if sub is not None and not isinstance(sub, dict):
            return sub
    return config


def _first_id(value: Any) -> int | None:
    ids = list(_token_ids(value))
    return ids[0] if ids else None


def _vocab_size(model: Any) -> int:
    try:
        embeddings = model.get_input_embeddings()
        if embeddings is not None and hasattr(embeddings, "num_embeddings"):
            return int(embeddings.num_embeddings)
    except Exception:
        pass
    for config in (_text_config(model.config), model.config):
        vocab = getattr(config, "vocab_size", None)
        if _is_int(vocab):
            return vocab
    raise TinyModelError(f"{type(model).__name__}: no vocabulary size")


def _setup_generation_config(model: Any) -> None:
    gen = getattr(model, "generation_config", None)
    if gen is None:
        return
    config, text = model.config, _text_config(model.config)

    def pick(name: str) -> int | None:
        for source in (gen, text, config):
            value = _first_id(getattr(source, name, None))
            if value is not None:
                return value
        return None

    eos = pick("eos_token_id")
    pad = pick("pad_token_id")
    if pad is None:
        pad = eos if eos is not None else 0
    gen.pad_token_id = pad
    if gen.eos_token_id is None and eos is not None:
        gen.eos_token_id = eos
    if getattr(config, "is_encoder_decoder", False) and gen.decoder_start_token_id is None:
        start = pick("decoder_start_token_id")
        if start is None:
            start = pick("bos_token_id")
        gen.decoder_start_token_id = start if start is not None else pad


def _random_ids(model: Any, shape: tuple[int, int], generator: torch.Generator) -> torch.Tensor:
    vocab = _vocab_size(model)
    banned = special_token_ids(model.config) | special_token_ids(model.generation_config.to_dict())
    allowed = torch.tensor([i for i in range(min(vocab, 4096)) if i not in banned])
    if allowed.numel() == 0:
        raise TinyModelError(f"{type(model).__name__}: every id of the vocabulary is special")
    picks = torch.randint(0, allowed.numel(), shape, generator=generator)
    return allowed[picks]


def _float_input(model: Any, name: str, batch_size: int, generator: torch.Generator) -> torch.Tensor:
    config = model.config
    if name == "input_features":
        if getattr(config, "model_type", "") in ("whisper",) or hasattr(config, "num_mel_bins") and hasattr(config, "max_source_positions") and not hasattr(config, "input_feat_per_channel"):
            shape = (batch_size, config.num_mel_bins, 2 * config.max_source_positions)
        elif hasattr(config, "input_feat_per_channel"):
            shape = (batch_size, 16, config.input_feat_per_channel * getattr(config, "input_channels", 1))
        elif hasattr(config, "feature_projection_input_dim"):
            shape = (batch_size, 32, config.feature_projection_input_dim)
        elif getattr(config, "model_type", "") == "pop2piano":
            shape = (batch_size, 8, config.d_model)
        else:
            raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
    elif name == "input_values":
        shape = (batch_size, 640)
    elif name == "pixel_values":
        vision = getattr(config, "vision_config", None) or config
        image = getattr(vision, "image_size", None)
        channels = getattr(vision, "num_channels", 3)
        if _is_int(image):
            shape = (batch_size, channels, image, image)
        elif isinstance(image, (list, tuple)) and len(image) == 2:
            shape = (batch_size, channels, *image)
        else:
            raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
    else:
        raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
    return torch.randn(shape, generator=generator)


def generation_inputs(model: Any, *, batch_size: int = 1, seq_len: int = 7, seed: int = 0, left_pad: int = 0) -> dict:
    """The main input for ``generate()`` (``input_ids`` + ``attention_mask`` for text models).

    Ids are random and avoid every special token. ``left_pad`` pad tokens (masked out) start the
    first row; the other rows are full. The model's ``generation_config`` gets a pad id (the
    config's pad, else eos, else 0), an eos when it has none, and a decoder start id for
    encoder-decoders, so that ``generate(**inputs, max_new_tokens=6, min_new_tokens=6)`` runs.
    """
    if left_pad >= seq_len:
        raise ValueError(f"left_pad={left_pad} leaves no tokens in a sequence of {seq_len}")
    _setup_generation_config(model)
    generator = torch.Generator().manual_seed(seed)
    name = getattr(model, "main_input_name", "input_ids") or "input_ids"
    if name in ("input_ids", "decoder_input_ids"):
        input_ids = _random_ids(model, (batch_size, seq_len), generator)
        attention_mask = torch.ones(batch_size, seq_len, dtype=torch.long)
        if left_pad:
            input_ids[0, :left_pad] = model.generation_config.pad_token_id
            attention_mask[0, :left_pad] = 0
        return {"input_ids": input_ids, "attention_mask": attention_mask}
    return {name: _float_input(model, name, batch_size, generator)}


def multimodal_inputs(model: Any, inputs: dict, *, seed: int = 0) -> dict | None:
    """Best effort: ``inputs`` plus ``pixel_values`` (and image tokens in ``input_ids``) for a
    multimodal model, or ``None`` when this model's image input isn't known."""
    return None

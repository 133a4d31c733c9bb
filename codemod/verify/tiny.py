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
its own validation (a sub-config is diffed against its own class's defaults, which need not be the
composite's). :data:`FIXUPS` holds the few per-model adjustments the table can't express, each
saying why.

Inputs: :func:`generation_inputs` makes random ids that avoid special tokens (or a float main input
shaped from the config: speech features, raw audio, embeddings), left-padded on request, settles
pad/eos/decoder-start in the model's generation config, and adds what a few models can't run
without (:data:`EXTRA_INPUTS`: layout boxes, a target language, retrieved documents, companion
audio...). :func:`multimodal_inputs` adds an image, finding how many image tokens it takes by
running the model once. Models that can't run alone raise :class:`TinyModelError` with the reason.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import math
import random
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
import transformers

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (models, configs, tensors, generators) are Any.
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    from typing import TypeGuard

    #: a config as a dict (``PretrainedConfig.to_dict()``, or a sub-config's): JSON-able values by key
    ConfigDict = dict[str, Any]
    #: one row of :data:`SIZES`: a size for each kind of attribute in :data:`GROUPS`
    Size = dict[str, int]
    #: a per-model adjustment of a shrunk config dict, in place (see :data:`FIXUPS`)
    Fixup = Callable[[ConfigDict, Size], None]
    #: keyword arguments for ``generate()`` (tensors, and a few other values some models need)
    Inputs = dict[str, Any]

__all__ = [
    "TinyModelError",
    "tiny_config",
    "tiny_model",
    "generation_inputs",
    "multimodal_inputs",
    "special_token_ids",
    "seed_everything",
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
#: a sliding attention window the long scenario's prompt and new tokens outgrow
SLIDING_WINDOW = 16

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
        "vision_embed_dim", "text_embed_dim", "projector_hidden_size",
        "backbone_hidden_size", "emb_dim",
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
        "vision_intermediate_size", "mlp_dim", "feed_forward_size",
    ),
    "head_dim": ("head_dim", "d_kv", "kv_channels", "attention_head_size", "head_size"),
    # rotary dims are a part of the head: half of the new head
    "rotary": ("rotary_dim", "rotary_emb_dim", "rope_dim"),
    "experts": ("num_experts", "num_local_experts", "moe_num_experts", "n_routed_experts"),
    "top_k": ("num_experts_per_tok", "moe_top_k", "num_selected_experts", "num_experts_per_token", "moe_k"),
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

def _fix_gpt_neo(d: ConfigDict, size: Size) -> None:
    # attention_types ([[pattern, repeats]]) must expand to exactly num_layers entries
    d["attention_types"] = [[["global", "local"], size["layers"] // 2]]
    d.pop("attention_layers", None)
    d["window_size"] = min(d.get("window_size", 256), 8)  # a local window shorter than the prompt


def _fix_led(d: ConfigDict, size: Size) -> None:
    # the encoder pads to a multiple of the (even) attention window: keep it small
    d["attention_window"] = [4] * size["layers"]


def _fix_mllama_text(d: ConfigDict, size: Size) -> None:
    # cross_attention_layers are layer indices: keep one, inside the shrunk stack
    d["cross_attention_layers"] = [size["layers"] - 1]
    _fix_mllama_text_rope(d, size)


def _fix_mllama_vision(d: ConfigDict, size: Size) -> None:
    # the global stack and the intermediate-layer taps are indices into the local stack
    d["num_global_layers"] = 1
    d["intermediate_layers_indices"] = [0]
    d["vision_output_dim"] = size["hidden"] * 2  # hidden * (1 + len(intermediate_layers_indices))
    d["image_size"], d["patch_size"] = size["image"], size["patch"]
    d["max_num_tiles"] = 2
    d["supported_aspect_ratios"] = [[1, 1], [1, 2], [2, 1]]


def _fix_jetmoe(d: ConfigDict, size: Size) -> None:
    # heads are num_key_value_heads * num_experts_per_tok; kv_channels is the head size
    d["num_key_value_heads"] = size["heads"] // size["top_k"]
    d["kv_channels"] = size["hidden"] // size["heads"]


def _fix_dbrx(d: ConfigDict, size: Size) -> None:
    # the attention and ffn sizes live in plain dicts, not sub-configs with a model_type
    attn = dict(d.get("attn_config") or {})
    attn["kv_n_heads"] = 1 if attn.get("kv_n_heads", 1) == 1 else 2
    ffn = dict(d.get("ffn_config") or {})
    ffn.update(ffn_hidden_size=size["intermediate"], moe_num_experts=size["experts"], moe_top_k=size["top_k"])
    d["attn_config"], d["ffn_config"] = attn, ffn


def _fix_seamless(d: ConfigDict, size: Size) -> None:
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


def _fix_speecht5(d: ConfigDict, size: Size) -> None:
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


def _fix_speech_to_text(d: ConfigDict, size: Size) -> None:
    # the conv subsampler's channels are free; the features per frame are the input's shape
    d["conv_channels"] = 32


def _fix_chameleon(d: ConfigDict, size: Size) -> None:
    # the VQ image tokenizer: a small resolution, few levels; its GroupNorms have 32 groups, so
    # every channel count stays a multiple of 32
    vq = dict(d.get("vq_config") or {})
    vq.update(embed_dim=32, num_embeddings=64, latent_channels=32, resolution=32, base_channels=32,
              channel_multiplier=[1, 2], num_res_blocks=1)
    d["vq_config"] = vq
    _fix_chameleon_vocab(d, size)


def _fix_fuyu(d: ConfigDict, size: Size) -> None:
    # Fuyu keeps text sizes both at top level and in text_config; they must agree
    text = dict(d.get("text_config") or {})
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "max_position_embeddings", "vocab_size"):
        if key in d and key in text:
            text[key] = d[key]
    d["text_config"] = text


def _fix_nllb_moe(d: ConfigDict, size: Size) -> None:
    # every other layer is sparse by default (step 4): make both layers sparse so experts run
    d["encoder_sparse_step"] = d["decoder_sparse_step"] = 1
    d["expert_capacity"] = 16


def _fix_switch(d: ConfigDict, size: Size) -> None:
    # sparse every other layer, with room for every token in each expert
    d["encoder_sparse_step"] = d["decoder_sparse_step"] = 1
    d["expert_capacity"] = 16


def _fix_anyres_pinpoints(d: ConfigDict, size: Size) -> None:
    # anyres pinpoints must be multiples of the (tiny) image size: with the defaults (336 x 672, ...)
    # a tiny image is cut into hundreds of patches that the two given tiles cannot fill
    s = size["image"]
    d["image_grid_pinpoints"] = [[s, s], [s, 2 * s], [2 * s, s], [2 * s, 2 * s]]


def _fix_mllama_text_rope(d: ConfigDict, size: Size) -> None:
    # the rotary embedding reads rope_scaling["rope_type"], and the default rope_scaling is None
    if d.get("rope_scaling") is None:
        d["rope_scaling"] = {"rope_type": "default"}


def _fix_chameleon_vocab(d: ConfigDict, size: Size) -> None:
    # the model maps VQ codes to BPE tokens through a tokenizer's vocabulary_map (None by default):
    # name each code as the real tokenizer does (IMGIMG + the code's digits as letters A-J + Z),
    # with the codes' tokens and <image> past the ids used for text
    codes = int((d.get("vq_config") or {}).get("num_embeddings", 64))
    first = max(MIN_VOCAB, int(d.get("vocab_size", MIN_VOCAB)))
    mapping = {"IMGIMG" + "".join(chr(ord("A") + int(c)) for c in str(code)) + "Z": first + code for code in range(codes)}
    mapping["<image>"] = first + codes
    d["vocabulary_map"] = mapping
    d["vocab_size"] = first + codes + 1


def _fix_xmod(d: ConfigDict, size: Size) -> None:
    # forward refuses to run until a default language (one of its adapters) is chosen
    if d.get("default_language") is None and d.get("languages"):
        d["default_language"] = list(d["languages"])[0]


def _fix_rag(d: ConfigDict, size: Size) -> None:
    # retrieved documents are passed as context_input_ids: two per question keeps them small
    d["n_docs"] = 2
    d["max_combined_length"] = 32


def _fix_bamba(d: ConfigDict, size: Size) -> None:
    # attn_layer_indices defaults to None: every layer is Mamba and generate() finds no attention
    # cache to measure; real checkpoints mix them, so make the last layer attention
    if not d.get("attn_layer_indices"):
        d["attn_layer_indices"] = [size["layers"] - 1]


def _fix_zamba(d: ConfigDict, size: Size) -> None:
    # the hybrid layers share one transformer block, tied across them: that needs two of them
    d["layers_block_type"] = ["linear_attention"] * max(size["layers"] - 2, 1) + ["hybrid", "hybrid"]
    d["num_hidden_layers"] = len(d["layers_block_type"])


def _fix_molmo2(d: ConfigDict, size: Size) -> None:
    # the adapter reads vision layers by index (24 and 18 by default): read the last two
    adapter = dict(d.get("adapter_config") or {})
    adapter["vision_feature_layer"] = [-1, -2]
    d["adapter_config"] = adapter


def _fix_reformer(d: ConfigDict, size: Size) -> None:
    # the LM head needs is_decoder; axial position embeddings factor max_position_embeddings
    # (shape) and the hidden size (dims); attention chunks (64) stay longer than prompt + new tokens,
    # as in the released checkpoints' use
    d["is_decoder"] = True
    d["axial_pos_shape"] = [8, 8]
    d["max_position_embeddings"] = 64
    d["axial_pos_embds_dim"] = [size["hidden"] // 4, size["hidden"] - size["hidden"] // 4]


def _fix_mamba2(d: ConfigDict, size: Size) -> None:
    # the SSM heads must cover hidden_size * expand exactly, in groups dividing them
    head_dim = d.get("head_dim") or 16
    d["num_heads"] = size["hidden"] * int(d.get("expand", 2)) // head_dim
    d["n_groups"] = 1
    d["time_step_rank"] = max(size["hidden"] // 16, 1)


def _mrope_fixup(default_sections: list[int], old_head: int) -> Fixup:
    # the modeling code falls back to sections sized for the released head when the config has
    # none: put them in the config, scaled to the tiny head (they add up to half of it)
    def fix(d: ConfigDict, size: Size) -> None:
        rope = dict(d.get("rope_parameters") or {"rope_type": "default", "rope_theta": 10000.0})
        if "mrope_section" not in rope:
            head_dim = d.get("head_dim")
            head = head_dim if _is_int(head_dim) else size["hidden"] // size["heads"]
            total = sum(default_sections) * (head // 2) // (old_head // 2)
            rope["mrope_section"] = scale_sections(default_sections, max(total, len(default_sections)))
        d["rope_parameters"] = rope

    return fix


def _fix_csm(d: ConfigDict, size: Size) -> None:
    # vocab_size counts audio codebook entries (2051), the text ids (bos 128000...) are
    # text_vocab_size's: the codebooks keep their size (the depth decoder embeds 32 of them)
    d["vocab_size"] = 2051
    depth = dict(d.get("depth_decoder_config") or {})
    if depth:
        depth["vocab_size"] = 2051
        depth["backbone_hidden_size"] = d.get("hidden_size", size["hidden"])
        d["depth_decoder_config"] = depth


def _fix_csm_depth(d: ConfigDict, size: Size) -> None:
    # the depth decoder alone: its vocabulary is a codebook's (see _fix_csm)
    d["vocab_size"] = 2051


def _fix_mimi(d: ConfigDict, size: Size) -> None:
    # the codec's upsampling conv is depthwise: one group per hidden channel
    d["upsample_groups"] = d.get("hidden_size", size["hidden"])


def _fix_musicgen_decoder(d: ConfigDict, size: Size) -> None:
    # the vocabulary is one codebook; pad/bos is one past it on purpose (the embeddings have an
    # extra row), so it must not grow to hold them
    if _is_int(d.get("pad_token_id")):
        d["vocab_size"] = d["pad_token_id"]


def _fix_encodec(d: ConfigDict, size: Size) -> None:
    # the convolutions double num_filters at each of the four upsampling ratios (32 -> 512
    # channels, 7M weights a side): start from 4
    d["num_filters"] = 4


def _fix_musicgen(d: ConfigDict, size: Size) -> None:
    # the decoder's codes are decoded by the audio encoder's codebook: they must be as large
    # (the defaults disagree, 2048 vs 1024); see _fix_musicgen_decoder for the decoder's size
    decoder, audio = dict(d.get("decoder") or {}), dict(d.get("audio_encoder") or {})
    _fix_musicgen_decoder(decoder, size)
    if decoder.get("vocab_size") and audio:
        audio["codebook_size"] = decoder["vocab_size"]
    d["decoder"], d["audio_encoder"] = decoder, audio


def _fix_gemma4_text(d: ConfigDict, size: Size) -> None:
    # full-attention layers get their own head size (a __post_init__ kwarg, 512 by default), and
    # every layer a second, per-layer embedding table as large as the vocabulary
    head_dim = d.get("head_dim")
    head = head_dim if _is_int(head_dim) else size["hidden"] // size["heads"]
    d["global_head_dim"] = 2 * head
    d["vocab_size_per_layer_input"] = d.get("vocab_size", MIN_VOCAB)
    d["hidden_size_per_layer_input"] = 16


def _fix_vibevoice_tokenizer(d: ConfigDict, size: Size) -> None:
    # the audio tokenizers (acoustic and semantic share this class) double their filters at each
    # downsampling stage (32 -> 2048): start from 4, one block per stage
    d["num_filters"] = 4
    if isinstance(d.get("depths"), list):
        d["depths"] = [1] * len(d["depths"])


FIXUPS: dict[str, Fixup] = {
    "gemma4_text": _fix_gemma4_text,
    "vibevoice_acoustic_tokenizer_encoder": _fix_vibevoice_tokenizer,
    "musicgen": _fix_musicgen,
    "musicgen_melody": _fix_musicgen,
    "musicgen_decoder": _fix_musicgen_decoder,
    "musicgen_melody_decoder": _fix_musicgen_decoder,
    "mimi": _fix_mimi,
    "encodec": _fix_encodec,
    "csm": _fix_csm,
    "csm_depth_decoder_model": _fix_csm_depth,
    "hunyuan_vl_text": _mrope_fixup([16, 16, 16, 16], 128),  # xdrope: four axes
    "ernie4_5_vl_moe_text": _mrope_fixup([22, 22, 20], 128),
    "glm_image_text": _mrope_fixup([8, 12, 12], 64),
    "bamba": _fix_bamba,
    "zamba": _fix_zamba,
    "molmo2": _fix_molmo2,
    "reformer": _fix_reformer,
    "mamba2": _fix_mamba2,
    "gpt_neo": _fix_gpt_neo,
    "led": _fix_led,
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
    "llava_onevision": _fix_anyres_pinpoints,
    "llava_next": _fix_anyres_pinpoints,
    "llava_next_video": _fix_anyres_pinpoints,
    "xmod": _fix_xmod,
    "rag": _fix_rag,
}


def _rag_parts() -> ConfigDict:
    # RagConfig() refuses to exist without its two halves: a DPR question encoder and a BART generator
    from transformers import BartConfig, DPRConfig

    return {"question_encoder": DPRConfig().to_dict(), "generator": BartConfig().to_dict()}


def _musicgen_parts(decoder_class: str) -> Callable[[], ConfigDict]:
    # before 4.46, MusicgenConfig() refuses to exist without a T5 text encoder, an EnCodec audio
    # encoder and its decoder (the released checkpoints' choice)
    def parts() -> ConfigDict:
        from transformers import EncodecConfig, T5Config

        return {"text_encoder": T5Config().to_dict(), "audio_encoder": EncodecConfig().to_dict(),
                "decoder": getattr(transformers, decoder_class)().to_dict()}
    return parts


def _wrapper_parts(encoder_class: str, decoder_class: str) -> Callable[[], ConfigDict]:
    # the encoder-decoder wrappers refuse to exist without their two halves: an encoder, and a decoder
    # with cross-attention, as EncoderDecoderConfig.from_encoder_decoder_configs makes it
    def parts() -> ConfigDict:
        decoder = getattr(transformers, decoder_class)(is_decoder=True, add_cross_attention=True)
        return {"encoder": getattr(transformers, encoder_class)().to_dict(), "decoder": decoder.to_dict()}
    return parts


#: config classes whose defaults need sub-configs passed in (model_type -> the kwargs)
COMPOSITE_DEFAULTS: dict[str, Callable[[], ConfigDict]] = {
    "encoder-decoder": _wrapper_parts("BertConfig", "BertConfig"),
    "vision-encoder-decoder": _wrapper_parts("ViTConfig", "GPT2Config"),
    "speech-encoder-decoder": _wrapper_parts("Wav2Vec2Config", "BertConfig"),
    "rag": _rag_parts,
    "musicgen": _musicgen_parts("MusicgenDecoderConfig"),
    "musicgen_melody": _musicgen_parts("MusicgenMelodyDecoderConfig"),
}


# ------------------------------------------------------------------------------------------ config

def _is_int(value: object) -> TypeGuard[int]:
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

    def walk(d: ConfigDict) -> None:
        for key, value in d.items():
            if _is_subconfig(key, value) or (isinstance(value, dict) and key not in _NOT_SUBCONFIGS):
                walk(value)
            elif _is_token_key(key) and not key.startswith("t2u_"):
                found.update(i for i in _token_ids(value) if i >= 0)

    walk(tree)
    return found


def _shrink(d: ConfigDict, size: Size, vocab: int, notes: list[str], path: str) -> ConfigDict:
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
        if (value is None and group in ("kv_heads", "head_dim") and (heads_key := _first_key(out, "heads")) is not None
                and _is_int(out.get(heads_key))):
            # None means "derive it" in most configs, but some models read it raw (Nemotron 4.45's kv
            # heads, HunYuan-VL's head_dim): what it would be derived as, explicitly
            out[key] = heads if group == "kv_heads" else max(hidden // max(heads, 1), 4)
        elif group == "kv_heads" and _is_int(value):
            if value == old_heads:
                out[key] = heads  # plain multi-head attention stays so
            elif value == 1:
                out[key] = 1  # multi-query stays so
            else:
                out[key] = 2 if heads % 2 == 0 else 1
        elif group == "head_dim" and _is_int(value):
            out[key] = max(hidden // max(heads, 1), 4)
        elif group == "rotary" and _is_int(value) and value > 0:
            out[key] = max(2, (hidden // max(heads, 1)) // 2)
    # rotary sections (multimodal rope) add up to the rotary half of the head: scale them with it
    for key in ("rope_parameters", "rope_scaling"):
        rope = out.get(key)
        old_half = _half_head(d, old_heads)
        if isinstance(rope, dict) and old_half:
            new_half = max(hidden // max(heads, 1), 4) // 2
            if _is_int(out.get("head_dim")):
                new_half = out["head_dim"] // 2
            out[key] = _shrink_rope(rope, old_half, new_half)
    # attention windows shorter than a long scenario's sequence, so that what changes past the window
    # (masks, cache slicing) runs too
    for key in ("sliding_window",):
        value = d.get(key)
        if _is_int(value) and value > SLIDING_WINDOW:
            out[key] = SLIDING_WINDOW
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
    # per-layer lists: as long as the old stack, now as long as the new one (every kind of layer kept)
    for key, value in d.items():
        if isinstance(value, (list, tuple)) and len(value) in old_layers and not _is_token_key(key):
            out[key] = type(value)(_per_layer(list(value), size["layers"]))
    # layer indices (hybrid_layer_ids, cross_attention_layers...): into the new stack
    reference = max(old_layers) if old_layers else _vision_layers(d)
    if reference:
        for key, value in d.items():
            if _is_layer_index_key(key) and key not in GROUPS["layers"] and out.get(key) == value:
                remapped = _remap_layer_indices(value, reference, size["layers"])
                if remapped is not None:
                    out[key] = remapped
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


def _first_key(d: ConfigDict, group: str) -> str | None:
    return next((k for k, v in d.items() if _GROUP_OF.get(k) == group and _is_int(v)), None)


def _half_head(d: ConfigDict, heads: int | None) -> int | None:
    """Half the head size of an (unshrunk) config dict: the rotary frequencies' count."""
    head = d.get("head_dim")
    if not _is_int(head):
        hidden = d.get(_first_key(d, "hidden") or "", None)
        head = hidden // heads if _is_int(hidden) and heads else None
    return head // 2 if head else None


def scale_sections(sections: list[int], total: int) -> list[int]:
    """``sections`` scaled to add up to ``total`` (each at least 1), e.g. [16, 24, 24] -> [2, 3, 3] for 8."""
    old = sum(sections)
    scaled = [max(1, v * total // old) for v in sections]
    scaled[-1] += total - sum(scaled)
    if scaled[-1] < 1:
        scaled = [1] * (len(sections) - 1) + [total - len(sections) + 1]
    return scaled


def _shrink_rope(rope: ConfigDict, old_half: int, new_half: int) -> ConfigDict:
    """Rope parameters (or per-layer-type dicts of them) with sections scaled to the new head."""
    out = dict(rope)
    for key, value in rope.items():
        if isinstance(value, dict):
            out[key] = _shrink_rope(value, old_half, new_half)
        elif key in ("mrope_section", "mrope_sections", "rope_section") and isinstance(value, list) and all(_is_int(v) for v in value):
            total = max(len(value), sum(value) * new_half // old_half)
            out[key] = scale_sections(value, total)
        elif key == "freq_allocation" and _is_int(value):
            out[key] = max(1, value * new_half // old_half)
    return out


def _per_layer(values: list[Any], layers: int) -> list[Any]:
    """The first ``layers`` entries of a per-layer list, with each kind of entry still present."""
    head = values[:layers]
    try:
        kinds = list(dict.fromkeys(values))
    except TypeError:  # unhashable entries (dicts): plain truncation
        return head
    missing = [kind for kind in kinds if kind not in head]
    if not missing or len(kinds) > layers:
        return head
    return head[: layers - len(missing)] + missing


def _vision_layers(d: ConfigDict) -> int | None:
    vision = d.get("vision_config")
    if isinstance(vision, dict):
        for key in GROUPS["layers"]:
            layers = vision.get(key)
            if _is_int(layers):
                return layers
    return None


def _is_layer_index_key(key: str) -> bool:
    """Keys that name layers by index, not count (``num_*`` and ``*_layers`` counts are sizes)."""
    k = key.lower()
    if k.startswith(("num_", "n_")) or "period" in k or "offset" in k or "step" in k:
        return False
    return "layer" in k and (k.endswith(("_ids", "_id", "_idx", "_index", "_indices", "_layers", "_layer")))


def _remap_layer_indices(value: Any, old: int, new: int) -> Any:
    """Layer index (or list of them) in a stack of ``old`` layers, mapped into ``new`` layers."""

    def one(i: int) -> int:
        if i < 0:  # counted from the end: stays so, inside the new stack
            return max(i, -new)
        return min(i * new // max(old, 1), new - 1)

    if _is_int(value):
        return one(value) if -old <= value < old else None
    if isinstance(value, (list, tuple)) and value and all(_is_int(i) for i in value):
        if not all(-old <= i < old for i in value):
            return None
        return type(value)(dict.fromkeys(one(i) for i in value))
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _class_defaults(model_type: Any) -> ConfigDict | None:
    """The defaults of the config class registered for ``model_type`` (None when unknown)."""
    mapping = getattr(transformers, "CONFIG_MAPPING", None)
    if not isinstance(model_type, str) or mapping is None:
        return None
    try:
        with _quiet():
            defaults: ConfigDict = mapping[model_type]().to_dict()
            return defaults
    except Exception:  # noqa: BLE001 - not registered, or needs arguments
        return None


def _changes(old: ConfigDict, new: ConfigDict) -> ConfigDict:
    """Only what differs (sub-config dicts keep their ``model_type`` so the right class is built).

    A sub-config is rebuilt from a dict, on top of its *class's* defaults, which need not be the
    composite's (PaliGemma's text config has one kv head, GemmaConfig's default is 16): so it is
    diffed against those class defaults where the class is known.
    """
    changed: ConfigDict = {}
    for key, value in new.items():
        if key in _BOOKKEEPING:
            continue
        before = old.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(before, dict) and _is_subconfig(key, value):
            base = _class_defaults(value.get("model_type"))
            inner = _changes(base if base is not None else before, value)
            if inner:
                if "model_type" in value:
                    inner["model_type"] = value["model_type"]
                changed[key] = inner
        elif value != before:
            changed[key.lstrip("_") if key.startswith("_") and not key.startswith("__") else key] = value
    return changed


_MISSING = object()


def _quiet() -> contextlib.ExitStack[bool | None]:
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


def _default_config(config_class: Any) -> Any:  # a PretrainedConfig subclass
    parts = COMPOSITE_DEFAULTS.get(str(getattr(config_class, "model_type", "")))
    try:
        with _quiet():
            return config_class(**parts()) if parts else config_class()
    except Exception as error:
        raise TinyModelError(f"{config_class.__name__}() needs arguments: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    text = f"{type(error).__name__}: {text}"
    return text if len(text) <= 300 else text[:297] + "..."


#: config flags that select CUDA-only kernels (Jamba's fast Mamba path raises on CPU); off, both
#: sides take the reference implementation on any device
KERNEL_FLAGS = {"use_mamba_kernels": False}


def portable(config: Any) -> Any:
    """``config`` with CUDA-only kernel flags turned off (see :data:`KERNEL_FLAGS`)."""
    for key, value in KERNEL_FLAGS.items():
        if hasattr(config, key):
            setattr(config, key, value)
    return config


def _build_config(config_class: Any, size: Size, notes: list[str], base: ConfigDict | None = None) -> Any:
    """A tiny config: ``base`` (a repository's ``config.json``) or the class's defaults, shrunk."""
    if base is not None:
        with _quiet():
            default = config_class.from_dict(dict(base))
        notes.append("config from the repository's config.json, shrunk")
    else:
        default = _default_config(config_class)
    before = default.to_dict()
    vocab = max([MIN_VOCAB, *(i + 1 for i in special_token_ids(before))])
    after = _shrink(before, size, vocab, notes, "")
    _fit_image_seq_length(after, notes)
    changes = _changes(before, after)
    parts = COMPOSITE_DEFAULTS.get(str(getattr(config_class, "model_type", "")))
    if parts:
        # the halves that didn't change must still be passed
        names = set(parts())
        changes = {**{k: v for k, v in before.items() if k in names}, **changes}
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
                notes.append(f"{key}: forced to {value} after __init__ made it {current}")
            except Exception:  # noqa: BLE001 - a read-only property: the model gets what __init__ made
                pass
    return portable(config)


def _fit_image_seq_length(d: ConfigDict, notes: list[str]) -> None:
    """``image_seq_length`` as many as the shrunk vision tower makes features, as a real config has it.

    It is the number of image tokens the processor expands an image to; 4.45's llava family takes
    its legacy merge path when a prompt has fewer (the default 576 for a tiny tower's 16), a path
    generate() cannot use with several new tokens per step, so every assisted case with an image
    would fail on both sides and prove nothing."""
    vision = d.get("vision_config")
    if not _is_int(d.get("image_seq_length")) or not isinstance(vision, dict):
        return
    side, patch = vision.get("image_size"), vision.get("patch_size")
    if not (_is_int(side) and _is_int(patch) and patch > 0):
        return
    features = (side // patch) ** 2 + (1 if d.get("vision_feature_select_strategy") == "full" else 0)
    if d["image_seq_length"] != features:
        notes.append(f"image_seq_length: {d['image_seq_length']} -> {features} (the tiny vision tower's features)")
        d["image_seq_length"] = features


def tiny_config(model_class: type, *, seed: int = 0, size: Size | None = None) -> Any:
    """A small config for ``model_class``, derived from its config class's defaults (see the module doc).

    ``size`` overrides the first entry of :data:`SIZES`. ``seed`` is accepted for symmetry with
    :func:`tiny_model`; the config itself is deterministic.
    """
    config_class = getattr(model_class, "config_class", None)
    if config_class is None:
        raise TinyModelError(f"{model_class.__name__} has no config_class")
    return _build_config(config_class, dict(size or SIZES[0]), [])


def tiny_model(
    model_class: type,
    *,
    seed: int = 0,
    settings: dict[str, Any] | None = None,
    primary: Callable[[type, Any], dict[str, Any]] | None = None,
    base: ConfigDict | None = None,
) -> tuple[Any, list[str]]:
    """``model_class`` built from a tiny config under ``torch.manual_seed(seed)``, in eval mode, and notes.

    ``settings`` are config attributes set before the model is built (how the class is used, e.g.
    ``is_decoder=True``); when None, ``primary(model_class, config)`` says which, if given. ``base``
    replaces the config class's defaults (a remote-code repository's ``config.json``).
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
            config = _build_config(config_class, dict(size), notes, base)
        except TinyModelError:
            raise
        except Exception as error:
            errors.append(f"config: {_one_line(error)}")
            continue
        chosen = settings if settings is not None else (primary(model_class, config) if primary else {})
        for key, value in chosen.items():
            setattr(config, key, value)
            notes.append(f"{key}: {value!r} (how {model_class.__name__} is used)")
        try:
            seed_everything(seed)
            with _quiet():
                model = model_class(config)
            model.eval()
        except ImportError as error:  # a package this environment lacks: no size will do
            raise TinyModelError(f"{model_class.__name__} needs a missing package: {_one_line(error)}") from None
        except Exception as error:
            errors.append(f"build: {_one_line(error)}")
            continue
        if index:
            notes.insert(0, f"size {index} of {len(SIZES)} ({size}) after: {errors[-1]}")
        return model, notes
    raise TinyModelError(f"{model_class.__name__}: no tiny size builds ({errors[0]})")


def seed_everything(seed: int) -> None:
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
    if getattr(gen, "num_return_sequences", 1) is None:
        gen.num_return_sequences = 1  # musicgen's own generate() reads it raw (5.x leaves it None)
    # the generation config is now this model's own, not one derived from its config: saved and
    # loaded as it is (a derived one drops extra attributes, such as seamless' language maps, on load)
    gen._from_model_config = False
    # encoder-decoders start from it; so do codebook decoders (musicgen's delay pattern pads with it)
    # (a composite such as musicgen-melody, not an encoder-decoder, holds them in its decoder config)
    codebooks = (getattr(source, "num_codebooks", None) for source in (config, getattr(config, "decoder", None)))
    starts = getattr(config, "is_encoder_decoder", False) or any(_is_int(n) for n in codebooks)
    if starts and gen.decoder_start_token_id is None:
        start = pick("decoder_start_token_id")
        if start is None:
            start = pick("bos_token_id")
        gen.decoder_start_token_id = start if start is not None else pad


def _random_ids(model: Any, shape: tuple[int, int], generator: torch.Generator, *, vocab: int | None = None) -> torch.Tensor:
    """Random ids below :data:`MIN_VOCAB` (and the vocabulary size) that are no special token."""
    vocab = vocab or _vocab_size(model)
    banned = special_token_ids(model.config) | special_token_ids(model.generation_config.to_dict())
    allowed = torch.tensor([i for i in range(min(vocab, MIN_VOCAB)) if i not in banned])
    if allowed.numel() == 0:
        raise TinyModelError(f"{type(model).__name__}: every id of the vocabulary is special")
    picks = torch.randint(0, allowed.numel(), shape, generator=generator)
    return allowed[picks]


def _float_input(model: Any, name: str, batch_size: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
    """A float main input of the shape the config implies (speech features, raw audio, pixels, embeddings)."""
    config = model.config
    model_type = str(getattr(config, "model_type", ""))
    shape: tuple[int, ...]
    if name == "input_features":
        if hasattr(config, "input_feat_per_channel"):  # speech_to_text: (batch, frames, features x channels)
            shape = (batch_size, 4 * seq_len, config.input_feat_per_channel * getattr(config, "input_channels", 1))
        elif hasattr(config, "feature_projection_input_dim"):  # seamless: (batch, frames, 160)
            shape = (batch_size, 4 * seq_len, config.feature_projection_input_dim)
        elif hasattr(config, "num_mel_bins") and _is_int(getattr(config, "max_source_positions", None)):
            # whisper-like: (batch, mel bins, 2 x encoder positions), a fixed-length window
            shape = (batch_size, config.num_mel_bins, 2 * config.max_source_positions)
        elif _audio_encoder(config) is not None:
            # a conformer encoder config (parakeet...): (batch, frames, mel bins), subsampled by its factor
            audio = _audio_encoder(config)
            shape = (batch_size, getattr(audio, "subsampling_factor", 4) * seq_len, audio.num_mel_bins)
        elif model_type == "pop2piano":  # already-embedded features: (batch, frames, d_model)
            shape = (batch_size, seq_len, config.d_model)
        else:
            raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
    elif name in ("input_values", "inputs"):  # raw audio: long enough for the conv feature encoder's strides
        stride = math.prod(getattr(config, "conv_stride", None) or [320])
        shape = (batch_size, stride * 4 * seq_len)
    elif name in ("input_embeds", "inputs_embeds"):
        hidden = getattr(_text_config(config), "hidden_size", None)
        if not _is_int(hidden):
            raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
        shape = (batch_size, seq_len, hidden)
    elif name == "pixel_values":
        vision = getattr(config, "vision_config", None) or getattr(config, "encoder", None) or config
        image = getattr(vision, "image_size", None)
        channels = getattr(vision, "num_channels", 3)
        if _is_int(image):
            shape = (batch_size, channels, image, image)
        elif isinstance(image, (list, tuple)) and len(image) == 2:
            shape = (batch_size, channels, *image)
        else:
            raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
    elif name == "flattened_patches":
        # pix2struct: (batch, patches, 2 + patch pixels), each patch led by its 1-based row and
        # column, as its processor lays them out (an all-zero patch is padding)
        vision = getattr(config, "vision_config", None) or config
        pixels = torch.randn((batch_size, seq_len, vision.patch_embed_hidden_size), generator=generator)
        position = torch.arange(seq_len)
        rows, columns = (position // 4 + 1).float(), (position % 4 + 1).float()
        places = torch.stack([rows, columns], dim=-1).expand(batch_size, seq_len, 2)
        return torch.cat([places, pixels], dim=-1)
    else:
        raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
    return torch.randn(shape, generator=generator)


def _audio_encoder(config: Any) -> Any:
    for name in ("encoder_config", "audio_config"):
        sub = getattr(config, name, None)
        if sub is not None and _is_int(getattr(sub, "num_mel_bins", None)):
            return sub
    return None


def _required_generate_input(model: Any) -> str | None:
    """The first required argument of a model's own ``generate()``, where it has one (pop2piano)."""
    try:
        parameters = list(inspect.signature(model.generate).parameters.values())
    except (TypeError, ValueError):
        return None
    for parameter in parameters:
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and parameter.default is parameter.empty:
            return parameter.name
    return None


def _forward_takes(model: Any, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _generate_takes(model: Any, name: str) -> bool:
    try:
        return name in inspect.signature(model.generate).parameters
    except (TypeError, ValueError):
        return False


#: forward arguments that only an upstream model can fill (the Omni talkers speak what a thinker
#: model wrote, from its hidden states)
UPSTREAM_INPUTS = ("thinker_reply_part", "trailing_text_hidden")


def _check_generative(model: Any) -> None:
    """A model without an LM head can't generate, whatever its class claims; nor can one that is
    driven by another model's hidden states."""
    for name in UPSTREAM_INPUTS:
        if _forward_takes(model, name):
            raise TinyModelError(
                f"{type(model).__name__} is driven by an upstream model's hidden states ({name}): not runnable alone"
            )
    if getattr(model.config, "is_encoder_decoder", False) or _forward_takes(model, "labels"):
        return
    if type(model).__name__.endswith("Model") and model.get_output_embeddings() is None:
        raise TinyModelError(f"{type(model).__name__} has no language-model head: generate() can't run on it")


# Extra inputs some models need besides the main one: (model, inputs, context) -> None, editing inputs.

def _extra_bbox(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # layout models take one box (x0, y0, x1, y1) per token: LayoutLM-style integers in [0, 1000],
    # or UDOP's floats in [0, 1]
    if "input_ids" not in inputs or not _forward_takes(model, "bbox"):
        return
    batch, length = inputs["input_ids"].shape
    corners = torch.randint(0, 500, (batch, length, 2), generator=ctx["generator"])
    sizes = torch.randint(1, 500, (batch, length, 2), generator=ctx["generator"])
    boxes = torch.cat([corners, corners + sizes], dim=-1)
    inputs["bbox"] = boxes / 1000.0 if getattr(model.config, "model_type", "") == "udop" else boxes


def _extra_tgt_lang(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # seamless models need a target language (text, units, vocoder) for speech output; there is no
    # tokenizer, so the generation config gets one made-up language mapped to valid ids
    if not _generate_takes(model, "tgt_lang"):
        return
    gen, config = model.generation_config, model.config
    text_vocab = _vocab_size(model)
    t2u_vocab = getattr(config, "t2u_vocab_size", None) or text_vocab
    gen.text_decoder_lang_to_code_id = {"eng": text_vocab - 1}
    gen.t2u_lang_code_to_id = {"eng": t2u_vocab - 1}
    gen.vocoder_lang_code_to_id = {"eng": 0}
    inputs["tgt_lang"] = "eng"
    char_vocab = getattr(config, "char_vocab_size", None)
    if _is_int(char_vocab):
        # v2's unit decoder upsamples by characters: every text id is a one-character subword
        gen.id_to_text = {str(i): chr(ord("a") + i % 26) for i in range(text_vocab)}
        gen.char_to_id = {chr(ord("a") + i): 2 + i % max(char_vocab - 2, 1) for i in range(26)}


def _extra_rag(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # no retriever: the retrieved documents come as context ids and scores, n_docs per question
    if getattr(model.config, "model_type", "") != "rag" or "input_ids" not in inputs:
        return
    batch = inputs["input_ids"].shape[0]
    n_docs = model.config.n_docs
    generator_config = model.config.generator
    context = _random_ids(model, (batch * n_docs, ctx["seq_len"] + 3), ctx["generator"], vocab=generator_config.vocab_size)
    inputs["context_input_ids"] = context
    inputs["context_attention_mask"] = torch.ones_like(context)
    inputs["doc_scores"] = torch.randn((batch, n_docs), generator=ctx["generator"])


def _extra_pop2piano(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # generate() prepends a composer embedding picked through generation_config.composer_to_feature_token
    if getattr(model.config, "model_type", "") != "pop2piano":
        return
    count = model.config.composer_vocab_size
    model.generation_config.composer_to_feature_token = {f"composer{i + 1}": i for i in range(count)}


#: classes whose main input is ids but whose encoder refuses them: the input is embeddings
#: (seamless' text-to-unit model is fed the text decoder's hidden states)
EMBEDS_ONLY = {"SeamlessM4TTextToUnitForConditionalGeneration", "SeamlessM4Tv2TextToUnitForConditionalGeneration"}

def _extra_backbone_state(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # CSM's depth decoder is driven by the backbone's last hidden state (one vector per sequence)
    if "input_ids" not in inputs or not _forward_takes(model, "backbone_last_hidden_state"):
        return
    hidden = getattr(model.config, "backbone_hidden_size", None) or model.config.hidden_size
    batch = inputs["input_ids"].shape[0]
    inputs["backbone_last_hidden_state"] = torch.randn((batch, hidden), generator=ctx["generator"])


def _extra_audio(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # speech-text models whose text is ids but that also need the audio it goes with, long enough for
    # the prompt and the new tokens: kyutai (raw audio, one codec frame per token), voxtral realtime
    # (mel features, audio_length_per_tok frames per token), moshi (user and moshi codebook codes)
    if "input_ids" not in inputs:
        return
    config, generator = model.config, ctx["generator"]
    batch, length = inputs["input_ids"].shape
    tokens = length + 8
    codec = getattr(config, "codec_config", None)
    if _forward_takes(model, "input_values") and codec is not None and _is_int(getattr(codec, "frame_size", None)):
        inputs["input_values"] = torch.randn((batch, 1, codec.frame_size * tokens), generator=generator)
    elif _generate_takes(model, "user_audio_codes"):
        encoder = getattr(config, "audio_encoder_config", None)
        top = min(getattr(config, "audio_vocab_size", 2048), getattr(encoder, "codebook_size", 2048))
        codes = (batch, config.num_codebooks, length)
        inputs["user_audio_codes"] = torch.randint(0, top, codes, generator=generator)
        inputs["moshi_audio_codes"] = torch.randint(0, top, codes, generator=generator)
    elif _forward_takes(model, "input_features") and _is_int(getattr(config, "audio_length_per_tok", None)):
        audio = _audio_encoder(config)
        mel = audio.num_mel_bins if audio is not None else 128
        frames = config.audio_length_per_tok * tokens
        inputs["input_features"] = torch.randn((batch, mel, frames), generator=generator)


def _extra_codebooks(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # a codebook decoder used alone (musicgen's) reads one row per codebook: (batch x codebooks, length)
    if "input_ids" in inputs and str(getattr(model.config, "model_type", "")).endswith("_decoder"):
        books = getattr(model.config, "num_codebooks", None)
        if _is_int(books) and books > 1:
            inputs["input_ids"] = inputs["input_ids"].repeat_interleave(books, dim=0)


EXTRA_INPUTS: tuple[Callable[[Any, Inputs, dict[str, Any]], None], ...] = (
    _extra_codebooks,
    _extra_bbox, _extra_tgt_lang, _extra_rag, _extra_pop2piano, _extra_backbone_state, _extra_audio,
)


def generation_inputs(model: Any, *, batch_size: int = 1, seq_len: int = 7, seed: int = 0, left_pad: int = 0) -> Inputs:
    """The main input for ``generate()`` (``input_ids`` + ``attention_mask`` for text models).

    Ids are random and avoid every special token. ``left_pad`` pad tokens (masked out) start the
    first row; the other rows are full. The model's ``generation_config`` gets a pad id (the
    config's pad, else eos, else 0), an eos when it has none, and a decoder start id for
    encoder-decoders, so that ``generate(**inputs, max_new_tokens=6, min_new_tokens=6)`` runs.
    A float main input (speech features, raw audio, pixels) is shaped from the config; models that
    need more (bounding boxes, a target language, retrieved documents) get it too.
    """
    if left_pad >= seq_len:
        raise ValueError(f"left_pad={left_pad} leaves no tokens in a sequence of {seq_len}")
    _check_generative(model)
    _setup_generation_config(model)
    generator = torch.Generator().manual_seed(seed)
    name = getattr(model, "main_input_name", "input_ids") or "input_ids"
    if type(model).__name__ in EMBEDS_ONLY:
        name = "inputs_embeds"
    required = _required_generate_input(model)
    if required in ("input_features", "input_values", "pixel_values"):
        name = required  # the model's own generate() wants it, whatever main_input_name says
    attention_mask = torch.ones(batch_size, seq_len, dtype=torch.long)
    if left_pad:
        attention_mask[0, :left_pad] = 0
    if name in ("input_ids", "decoder_input_ids"):
        input_ids = _random_ids(model, (batch_size, seq_len), generator)
        if left_pad:
            input_ids[0, :left_pad] = model.generation_config.pad_token_id
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    else:
        values = _float_input(model, name, batch_size, seq_len, generator)
        key = "inputs_embeds" if name in ("input_embeds", "inputs_embeds") else name
        inputs = {key: values}
        if values.dim() == 3 and values.shape[1] == seq_len:  # one vector per position: maskable
            if left_pad:
                values[0, :left_pad] = 0.0
            inputs["attention_mask"] = attention_mask
    context = {"generator": generator, "seq_len": seq_len, "left_pad": left_pad}
    for extra in EXTRA_INPUTS:
        extra(model, inputs, context)
    if str(getattr(model.config, "model_type", "")) in NEEDS_IMAGE:
        with_image = multimodal_inputs(model, inputs, seed=seed)
        if with_image is None:
            raise TinyModelError(f"{type(model).__name__} needs an image input, and none could be made")
        inputs = with_image
    return inputs


# --------------------------------------------------------------------------------------- multimodal

def _image_token_id(config: Any) -> int | None:
    """The id that marks where image features go in ``input_ids``, where the config names one."""
    for source in (config, getattr(config, "text_config", None)):
        if source is None:
            continue
        for name in ("image_token_index", "image_token_id", "image_token"):
            value = getattr(source, name, None)
            if _is_int(value):
                return value
    vocabulary_map = getattr(config, "vocabulary_map", None)  # chameleon
    image = vocabulary_map.get("<image>") if isinstance(vocabulary_map, dict) else None
    if _is_int(image):
        return image
    return None


def _image_side(config: Any) -> tuple[int, int] | None:
    """(channels, side) of the images the vision tower (or VQ tokenizer) expects."""
    for name in ("vision_config", "vq_config"):
        vision = getattr(config, name, None)
        if vision is None:
            continue
        channels = getattr(vision, "num_channels", None) or getattr(vision, "in_channels", None) or 3
        side = getattr(vision, "image_size", None) or getattr(vision, "resolution", None)
        if isinstance(side, (list, tuple)):
            side = side[0]
        if _is_int(side):
            return channels, side
    return None


class _ScatterProbe:
    """Records the size of what ``masked_scatter`` puts into embeddings (or ids) during a forward:
    the number of image feature vectors a model makes for an image, whatever version it is."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __enter__(self) -> "_ScatterProbe":
        self._original = torch.Tensor.masked_scatter
        probe = self

        def masked_scatter(target: torch.Tensor, mask: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
            width = target.shape[-1] if target.dim() == 3 else 1
            probe.sizes.append(source.numel() // max(width, 1))
            return probe._original(target, mask, source)

        torch.Tensor.masked_scatter = masked_scatter
        return self

    def __exit__(self, *exc: object) -> None:
        torch.Tensor.masked_scatter = self._original


def _with_image_tokens(inputs: Inputs, token: int, count: int) -> Inputs:
    """``inputs`` with ``count`` image tokens after each row's left padding."""
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    rows, masks = [], []
    for row, row_mask in zip(ids, mask):
        pad = int((row_mask == 0).long().cumprod(0).sum())
        rows.append(torch.cat([row[:pad], torch.full((count,), token, dtype=row.dtype), row[pad:]]))
        masks.append(torch.cat([row_mask[:pad], torch.ones(count, dtype=row_mask.dtype), row_mask[pad:]]))
    return {**inputs, "input_ids": torch.stack(rows), "attention_mask": torch.stack(masks)}


def _try_generate(model: Any, inputs: Inputs) -> str | None:
    """None when a short greedy ``generate()`` on ``inputs`` runs (its first step is a forward pass
    over the whole prompt), else the error's one-line text."""
    try:
        with torch.no_grad(), _quiet():
            model.generate(**inputs, max_new_tokens=2, do_sample=False)
    except Exception as error:  # noqa: BLE001 - the caller tries another layout
        return _one_line(error)
    return None


def _feature_count_from(error: str | None, probe: _ScatterProbe, images: int) -> int | None:
    import re

    for size in reversed(probe.sizes):
        if size and size % images == 0:
            return size // images
    # the count as the mismatch errors word it: llava's "image features: N", PaliGemma's "N tokens
    # from image embeddings" (models that do not scatter with masked_scatter)
    for pattern in (r"features:?\s*(\d+)", r"(\d+) tokens from image embeddings"):
        match = re.search(pattern, error or "")
        if match and int(match.group(1)) % images == 0:
            return int(match.group(1)) // images
    return None


def _llava_like(model: Any, inputs: Inputs, generator: torch.Generator, key: str = "pixel_values") -> Inputs | None:
    """``key`` (pixel_values; Video-LLaVA's pixel_values_images), image_sizes for anyres models, and as
    many image tokens per row as the model makes features."""
    config = model.config
    shape = _image_side(config)
    if shape is None:
        return None
    channels, side = shape
    batch = inputs["input_ids"].shape[0]
    extra: Inputs = {}
    if getattr(config, "image_grid_pinpoints", None) and _forward_takes(model, "image_sizes"):
        # anyres (llava-next family): the base image plus one tile at the smallest pinpoint
        extra[key] = torch.randn((batch, 2, channels, side, side), generator=generator)
        extra["image_sizes"] = torch.tensor([[side, side]] * batch)
    else:
        extra[key] = torch.randn((batch, channels, side, side), generator=generator)
    token = _image_token_id(config)
    if token is None:  # images prepended or cross-attended (GIT): no placeholders
        candidate = {**inputs, **extra}
        return candidate if _try_generate(model, candidate) is None else None
    # as many tokens as the processor would expand an image to, where the config says (a prompt with
    # fewer takes 4.45's legacy merge path); else found by probing
    seq_length = getattr(config, "image_seq_length", None)
    count = seq_length if _is_int(seq_length) and seq_length > 0 else 1
    for _ in range(4):
        candidate = {**_with_image_tokens(inputs, token, count), **extra}
        with _ScatterProbe() as probe:
            error = _try_generate(model, candidate)
        found = _feature_count_from(error, probe, batch)
        if error is None and (found is None or found == count):
            return candidate
        if found is None or found == count:
            return None
        count = found
    return None


def _fuyu(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Fuyu embeds raw patches in place of placeholder tokens, located by image_patches_indices."""
    config = model.config
    patch, channels = config.patch_size, config.num_channels
    count = 4
    batch = inputs["input_ids"].shape[0]
    placeholder = int(_random_ids(model, (1, 1), generator)[0, 0])
    candidate = _with_image_tokens(inputs, placeholder, count)
    indices = torch.full(candidate["input_ids"].shape, -1, dtype=torch.long)
    for row, row_mask in enumerate(inputs["attention_mask"]):
        pad = int((row_mask == 0).long().cumprod(0).sum())
        indices[row, pad : pad + count] = torch.arange(count)
    candidate["image_patches"] = torch.randn((batch, count, patch * patch * channels), generator=generator)
    candidate["image_patches_indices"] = indices
    return candidate if _try_generate(model, candidate) is None else None


def _idefics(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """IDEFICS cross-attends to images: (batch, images, C, H, W) and a per-token image mask."""
    shape = _image_side(model.config)
    if shape is None:
        return None
    channels, side = shape
    batch, length = inputs["input_ids"].shape
    candidate = dict(inputs)
    candidate["pixel_values"] = torch.randn((batch, 1, channels, side, side), generator=generator)
    candidate["image_attention_mask"] = inputs["attention_mask"].clone().unsqueeze(-1)
    return candidate if _try_generate(model, candidate) is None else None


#: model_type -> builder of multimodal inputs, for the layouts the generic one can't guess
MULTIMODAL: dict[str, Callable[[Any, Inputs, torch.Generator], Inputs | None]] = {
    "fuyu": _fuyu,
    "idefics": _idefics,
}

#: model types that can't run without an image (their text path still needs one)
NEEDS_IMAGE = {"idefics"}


def multimodal_inputs(model: Any, inputs: Inputs, *, seed: int = 0) -> Inputs | None:
    """Best effort: ``inputs`` plus an image (``pixel_values``, ``image_sizes``..., and image tokens
    in ``input_ids``) for a multimodal model, or ``None`` when this model's image input isn't known.

    The number of image tokens is found by running the model: a forward pass records how many
    feature vectors it scatters into the embeddings (or names them in its mismatch error).
    """
    if "input_ids" not in inputs or "attention_mask" not in inputs:
        return None
    builder = MULTIMODAL.get(str(getattr(model.config, "model_type", "")))
    if builder is None:
        key = next((k for k in ("pixel_values", "pixel_values_images") if _forward_takes(model, k)), None)
        if key is None:
            return None
        builder = functools.partial(_llava_like, key=key)
    generator = torch.Generator().manual_seed(seed + 1)
    try:
        return builder(model, inputs, generator)
    except TinyModelError:
        return None

"""Per-model fixups, for what the shrinking tables can't express: each registered by model type with what
breaks without it (which goes to the build notes), and given the already shrunk config dict of that level
and the size, to edit in place. Also the sub-configs some composite config classes need to have defaults."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import transformers

from .common import is_int
from .shrink import Fixup, scale_sections
from .tokens import MIN_VOCAB

if TYPE_CHECKING:
    from .common import ConfigDict, Size

    Apply = Callable[[ConfigDict, Size], None]

#: model type -> its fixup (registered with :func:`fixup`)
FIXUPS: dict[str, Fixup] = {}


def fixup(*model_types: str, why: str) -> Callable[[Apply], Apply]:
    """Registers the decorated function as the fixup of ``model_types``; ``why``: what breaks without it."""

    def register(apply: Apply) -> Apply:
        FIXUPS.update(dict.fromkeys(model_types, Fixup(apply, why)))
        return apply

    return register


def fixup_values(*model_types: str, why: str, **settings: Any) -> None:
    """Registers a fixup that only sets ``settings`` (copies of them: a config may keep and edit its lists)."""
    fixup(*model_types, why=why)(lambda d, size: d.update(copy.deepcopy(settings)))


fixup_values(
    "speecht5",
    why="the conv feature encoder and positional conv are sized for long speech (here the "
    "raw audio is downsampled 5*2*2=20x)",
    conv_dim=[32, 32, 32],
    conv_stride=[5, 2, 2],
    conv_kernel=[10, 3, 3],
    num_feat_extract_layers=3,
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=2,
    speech_decoder_prenet_units=32,
    speech_decoder_postnet_units=32,
    speaker_embedding_dim=16,
    max_speech_positions=512,
    encoder_max_relative_position=16,
    apply_spec_augment=False,
)
fixup_values(
    "speech_to_text",
    why="the conv subsampler's 1024 channels are no size the tables know (the features "
    "per frame are the input's shape: they stay)",
    conv_channels=32,
)
fixup_values(
    "nllb-moe",
    "switch_transformers",
    why="only every other (or fourth) layer is sparse by default: both "
    "are, so experts run, with room for every token in each expert",
    encoder_sparse_step=1,
    decoder_sparse_step=1,
    expert_capacity=16,
)
fixup_values(
    "rag",
    why="retrieved documents are passed as context_input_ids: two per question keeps them small",
    n_docs=2,
    max_combined_length=32,
)
fixup_values(
    "csm_depth_decoder_model",
    why="the depth decoder alone: its vocabulary is a codebook's (2051 entries)",
    vocab_size=2051,
)
fixup_values(
    "encodec",
    why="the convolutions double num_filters at each of the four upsampling ratios (32 -> 512 "
    "channels, 7M weights a side): they start from 4",
    num_filters=4,
)


@fixup(
    "gpt_neo",
    why="attention_types must expand to exactly num_layers entries, and a local window as long as "
    "the prompt never slides",
)
def _fix_gpt_neo(d: ConfigDict, size: Size) -> None:
    d["attention_types"] = [[["global", "local"], size["layers"] // 2]]  # [[pattern, repeats]]
    d.pop("attention_layers", None)
    d["window_size"] = min(d.get("window_size", 256), 8)


@fixup("led", why="the encoder pads every input to a multiple of the (even) attention window, 512 by default")
def _fix_led(d: ConfigDict, size: Size) -> None:
    d["attention_window"] = [4] * size["layers"]


@fixup(
    "mllama_text_model",
    why="cross_attention_layers are layer indices, inside the shrunk stack; the rotary "
    "embedding reads rope_scaling['rope_type'], and the default rope_scaling is None",
)
def _fix_mllama_text(d: ConfigDict, size: Size) -> None:
    d["cross_attention_layers"] = [size["layers"] - 1]
    if d.get("rope_scaling") is None:
        d["rope_scaling"] = {"rope_type": "default"}


@fixup("mllama_vision_model", why="the global stack and the intermediate-layer taps are indices into the local stack")
def _fix_mllama_vision(d: ConfigDict, size: Size) -> None:
    d["num_global_layers"] = 1
    d["intermediate_layers_indices"] = [0]
    d["vision_output_dim"] = size["hidden"] * 2  # hidden * (1 + len(intermediate_layers_indices))
    d["image_size"], d["patch_size"] = size["image"], size["patch"]
    d["max_num_tiles"] = 2
    d["supported_aspect_ratios"] = [[1, 1], [1, 2], [2, 1]]


@fixup("jetmoe", why="heads are num_key_value_heads * num_experts_per_tok; kv_channels is the head size")
def _fix_jetmoe(d: ConfigDict, size: Size) -> None:
    d["num_key_value_heads"] = size["heads"] // size["top_k"]
    d["kv_channels"] = size["hidden"] // size["heads"]


@fixup("dbrx", why="the attention and ffn sizes live in plain dicts, not sub-configs with a model_type")
def _fix_dbrx(d: ConfigDict, size: Size) -> None:
    attn = dict(d.get("attn_config") or {})
    attn["kv_n_heads"] = 1 if attn.get("kv_n_heads", 1) == 1 else 2
    ffn = dict(d.get("ffn_config") or {})
    ffn.update(ffn_hidden_size=size["intermediate"], moe_num_experts=size["experts"], moe_top_k=size["top_k"])
    d["attn_config"], d["ffn_config"] = attn, ffn


@fixup(
    "seamless_m4t",
    "seamless_m4t_v2",
    why="the vocoder's upsampling halves its channels at every stage (fed by "
    "its unit/lang/speaker embeddings) and must end with >= 1; the conformer's depthwise conv and relative "
    "positions are sized for long speech",
)
def _fix_seamless(d: ConfigDict, size: Size) -> None:
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


@fixup(
    "chameleon",
    why="the VQ image tokenizer is sized for real images (its GroupNorms have 32 groups, so every "
    "channel count stays a multiple of 32); VQ codes map to BPE tokens through vocabulary_map, None by default",
)
def _fix_chameleon(d: ConfigDict, size: Size) -> None:
    vq = dict(d.get("vq_config") or {})
    vq.update(
        embed_dim=32,
        num_embeddings=64,
        latent_channels=32,
        resolution=32,
        base_channels=32,
        channel_multiplier=[1, 2],
        num_res_blocks=1,
    )
    d["vq_config"] = vq
    # each code named as the real tokenizer does (IMGIMG + the code's digits as letters A-J + Z), the
    # codes' tokens and <image> past the ids used for text
    codes = int(vq["num_embeddings"])
    first = max(MIN_VOCAB, int(d.get("vocab_size", MIN_VOCAB)))
    mapping = {
        "IMGIMG" + "".join(chr(ord("A") + int(c)) for c in str(code)) + "Z": first + code for code in range(codes)
    }
    mapping["<image>"] = first + codes
    d["vocabulary_map"] = mapping
    d["vocab_size"] = first + codes + 1


@fixup("fuyu", why="Fuyu keeps text sizes both at top level and in text_config; they must agree")
def _fix_fuyu(d: ConfigDict, size: Size) -> None:
    text = dict(d.get("text_config") or {})
    for key in (
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "max_position_embeddings",
        "vocab_size",
    ):
        if key in d and key in text:
            text[key] = d[key]
    d["text_config"] = text


@fixup(
    "llava_onevision",
    "llava_next",
    "llava_next_video",
    why="anyres pinpoints must be multiples of the tiny "
    "image size: with the defaults (336 x 672, ...) a tiny image is cut into hundreds of patches that the two "
    "given tiles cannot fill",
)
def _fix_anyres_pinpoints(d: ConfigDict, size: Size) -> None:
    s = size["image"]
    d["image_grid_pinpoints"] = [[s, s], [s, 2 * s], [2 * s, s], [2 * s, 2 * s]]


@fixup("xmod", why="forward refuses to run until a default language (one of its adapters) is chosen")
def _fix_xmod(d: ConfigDict, size: Size) -> None:
    if d.get("default_language") is None and d.get("languages"):
        d["default_language"] = list(d["languages"])[0]


@fixup(
    "bamba",
    why="attn_layer_indices defaults to None: every layer is Mamba and generate() finds no attention "
    "cache to measure (real checkpoints mix them: the last layer is attention); and the Mamba mixer is sized "
    "as below (_tiny_mamba_mixer)",
)
def _fix_bamba(d: ConfigDict, size: Size) -> None:
    if not d.get("attn_layer_indices"):
        d["attn_layer_indices"] = [size["layers"] - 1]
    _tiny_mamba_mixer(d, size)


@fixup(
    "granitemoehybrid",
    why="before 5.0 layer_types defaults to None, which the model reads by index (the "
    "config's layers_block_type maps to it): the layers are Mamba, the last one attention, as in real checkpoints; "
    "and the Mamba mixer is sized as below (_tiny_mamba_mixer)",
)
def _fix_granitemoehybrid(d: ConfigDict, size: Size) -> None:
    if "layer_types" in d and d["layer_types"] is None:
        layers = int(d.get("num_hidden_layers") or size["layers"])
        d["layer_types"] = ["mamba"] * (layers - 1) + ["attention"]
    _tiny_mamba_mixer(d, size)


@fixup("falcon_h1", why="the Mamba mixer is sized as below (_tiny_mamba_mixer)")
def _fix_falcon_h1(d: ConfigDict, size: Size) -> None:
    _tiny_mamba_mixer(d, size)


def _tiny_mamba_mixer(d: ConfigDict, size: Size) -> None:
    """A hybrid model's Mamba-2 mixer sized for the tiny model. The saved config of a default one (5.15's Bamba,
    FalconH1) holds what its 4096-wide defaults derived (Bamba's ``mamba_d_head`` 64, FalconH1's ``mamba_d_ssm``
    1024) next to 128 heads, 256 states and chunks of 256, which no shrinking table knows: the scan then wants 8 to
    32 GiB and every scenario fails alike on both sides, which verifies nothing. The heads are the tiny model's, the
    head size derived again (``"auto"``: expand x hidden / heads), states and chunks small."""
    if "mamba_n_heads" not in d:
        return
    d["mamba_n_heads"] = size["heads"]
    d["mamba_d_head"] = "auto"
    if "mamba_d_ssm" in d:
        d["mamba_d_ssm"] = None  # expand x hidden
    d["mamba_n_groups"] = 1
    d["mamba_d_state"] = min(int(d.get("mamba_d_state") or 16), 16)
    d["mamba_chunk_size"] = min(int(d.get("mamba_chunk_size") or 16), 16)


@fixup("zamba", why="the hybrid layers share one transformer block, tied across them: that needs two of them")
def _fix_zamba(d: ConfigDict, size: Size) -> None:
    # the other layers keep the release's own word for them: 4.46 - 4.57 build a layer only for "mamba" (and
    # "hybrid"), 5.x calls it "linear_attention" (and maps the old word to it)
    words = [word for word in d.get("layers_block_type") or [] if word != "hybrid"]
    other = words[0] if words else "mamba"
    d["layers_block_type"] = [other] * max(size["layers"] - 2, 1) + ["hybrid", "hybrid"]
    d["num_hidden_layers"] = len(d["layers_block_type"])


@fixup("molmo2", why="the adapter reads vision layers by index (24 and 18 by default): it reads the last two")
def _fix_molmo2(d: ConfigDict, size: Size) -> None:
    adapter = dict(d.get("adapter_config") or {})
    adapter["vision_feature_layer"] = [-1, -2]
    d["adapter_config"] = adapter


@fixup(
    "reformer",
    why="the LM head needs is_decoder; axial position embeddings factor max_position_embeddings "
    "(shape) and the hidden size (dims)",
)
def _fix_reformer(d: ConfigDict, size: Size) -> None:
    d["is_decoder"] = True
    d["axial_pos_shape"] = [8, 8]
    # attention chunks (64) stay longer than prompt + new tokens, as in the released checkpoints' use
    d["max_position_embeddings"] = 64
    d["axial_pos_embds_dim"] = [size["hidden"] // 4, size["hidden"] - size["hidden"] // 4]


@fixup("mamba2", why="the SSM heads must cover hidden_size * expand exactly, in groups dividing them")
def _fix_mamba2(d: ConfigDict, size: Size) -> None:
    head_dim = d.get("head_dim") or 16
    d["num_heads"] = size["hidden"] * int(d.get("expand", 2)) // head_dim
    d["n_groups"] = 1
    d["time_step_rank"] = max(size["hidden"] // 16, 1)


def _mrope_fixup(default_sections: list[int], old_head: int) -> Apply:
    # the sections are put in the config, scaled to the tiny head (they add up to half of it): in 5.x's
    # rope_parameters, before 5.0 in rope_scaling (None by default there, which 4.57's Qwen3-VL reads with .get)
    def fix(d: ConfigDict, size: Size) -> None:
        key = "rope_scaling" if "rope_scaling" in d and "rope_parameters" not in d else "rope_parameters"
        rope = dict(d.get(key) or {"rope_type": "default", "rope_theta": d.get("rope_theta") or 10000.0})
        if "mrope_section" not in rope:
            head_dim = d.get("head_dim")
            head = head_dim if is_int(head_dim) else size["hidden"] // size["heads"]
            total = sum(default_sections) * (head // 2) // (old_head // 2)
            rope["mrope_section"] = scale_sections(default_sections, max(total, len(default_sections)))
        d[key] = rope

    return fix


_MROPE_WHY = (
    "with no rotary sections in the config, the modeling code falls back to sections sized for the released head"
)
fixup("hunyuan_vl_text", why=_MROPE_WHY)(_mrope_fixup([16, 16, 16, 16], 128))  # xdrope: four axes
fixup("ernie4_5_vl_moe_text", why=_MROPE_WHY)(_mrope_fixup([22, 22, 20], 128))
fixup("glm_image_text", "glm4v_text", why=_MROPE_WHY)(_mrope_fixup([8, 12, 12], 64))
fixup("qwen2_vl_text", "qwen2_5_vl_text", why=_MROPE_WHY)(_mrope_fixup([16, 24, 24], 128))
fixup("qwen3_vl_text", "qwen3_vl_moe_text", "qwen3_omni_moe_text", why=_MROPE_WHY)(_mrope_fixup([24, 20, 20], 128))


#: the ids Qwen2-VL's get_rope_index and forward read from the config (the Hub's config.json has them;
#: before 5.0 the config class has no defaults for them)
_QWEN2_VL_TOKENS = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")


@fixup(
    "qwen2_vl",
    why="before 5.0 the config class has no image/video/vision-start/vision-end token ids (the Hub's "
    "config.json has them; get_rope_index reads them on every first step), and no rope_scaling, whose "
    "mrope_section the attention reads (sections adding up to half the tiny head); its vision config, of the "
    "same model type, and 5.x's composite, whose ids are defaults, are left as they are",
)
def _fix_qwen2_vl(d: ConfigDict, size: Size) -> None:
    if "vocab_size" not in d:
        return  # the vision config (the same model type before 5.0), or 5.x's composite: its text config has them
    vocab = int(d["vocab_size"])
    missing = [key for key in _QWEN2_VL_TOKENS if not is_int(d.get(key))]
    for offset, key in enumerate(missing):  # past the text ids, as the real tokenizer adds them
        d[key] = vocab + offset
    d["vocab_size"] = vocab + len(missing)
    if d.get("rope_scaling") is None and "rope_parameters" not in d:
        heads = d.get("num_attention_heads") or size["heads"]
        head = int(d.get("hidden_size") or size["hidden"]) // int(heads)
        d["rope_scaling"] = {"type": "mrope", "mrope_section": scale_sections([16, 24, 24], max(head // 2, 3))}


@fixup(
    "qwen2_5_vl_vision",
    "glm4v_vision",
    why="the vision merger projects to out_hidden_size, the text model's "
    "hidden size (no size the tables shrink): the image features must be as wide as the tiny text embeddings",
)
def _fix_vision_out_hidden(d: ConfigDict, size: Size) -> None:
    if is_int(d.get("out_hidden_size")):
        d["out_hidden_size"] = size["hidden"]


@fixup(
    "csm",
    why="vocab_size counts audio codebook entries (2051), the text ids (bos 128000...) are "
    "text_vocab_size's: the codebooks keep their size (the depth decoder embeds 32 of them)",
)
def _fix_csm(d: ConfigDict, size: Size) -> None:
    d["vocab_size"] = 2051
    depth = dict(d.get("depth_decoder_config") or {})
    if depth:
        depth["vocab_size"] = 2051
        depth["backbone_hidden_size"] = d.get("hidden_size", size["hidden"])
        d["depth_decoder_config"] = depth


@fixup(
    "clvp_encoder",
    why="the rotary embedding covers max(projection_dim // (2 x heads), 32) dimensions of each head: "
    "heads of 32 dimensions at least, or the rotation does not fit them",
)
def _fix_clvp_encoder(d: ConfigDict, size: Size) -> None:
    hidden = d.get("hidden_size", size["hidden"])
    if is_int(hidden):
        d["num_attention_heads"] = max(1, min(d.get("num_attention_heads") or 1, hidden // 32))


@fixup("mimi", why="the codec's upsampling conv is depthwise: one group per hidden channel")
def _fix_mimi(d: ConfigDict, size: Size) -> None:
    d["upsample_groups"] = d.get("hidden_size", size["hidden"])


@fixup(
    "musicgen_decoder",
    "musicgen_melody_decoder",
    why="the vocabulary is one codebook; pad/bos is one past it "
    "on purpose (the embeddings have an extra row), so it must not grow to hold them",
)
def _fix_musicgen_decoder(d: ConfigDict, size: Size) -> None:
    if is_int(d.get("pad_token_id")):
        d["vocab_size"] = d["pad_token_id"]


@fixup(
    "musicgen",
    "musicgen_melody",
    why="the decoder's codes are decoded by the audio encoder's codebook: they "
    "must be as large (the defaults disagree, 2048 vs 1024)",
)
def _fix_musicgen(d: ConfigDict, size: Size) -> None:
    decoder, audio = dict(d.get("decoder") or {}), dict(d.get("audio_encoder") or {})
    _fix_musicgen_decoder(decoder, size)
    if decoder.get("vocab_size") and audio:
        audio["codebook_size"] = decoder["vocab_size"]
    d["decoder"], d["audio_encoder"] = decoder, audio


@fixup(
    "gemma4_text",
    why="full-attention layers get their own head size (a __post_init__ kwarg, 512 by default), "
    "and every layer a second, per-layer embedding table as large as the vocabulary",
)
def _fix_gemma4_text(d: ConfigDict, size: Size) -> None:
    head_dim = d.get("head_dim")
    head = head_dim if is_int(head_dim) else size["hidden"] // size["heads"]
    d["global_head_dim"] = 2 * head
    d["vocab_size_per_layer_input"] = d.get("vocab_size", MIN_VOCAB)
    d["hidden_size_per_layer_input"] = 16


@fixup(
    "vibevoice_acoustic_tokenizer_encoder",
    why="the audio tokenizers (acoustic and semantic share this class) "
    "double their filters at each downsampling stage (32 -> 2048): they start from 4, one block per stage",
)
def _fix_vibevoice_tokenizer(d: ConfigDict, size: Size) -> None:
    d["num_filters"] = 4
    if isinstance(d.get("depths"), list):
        d["depths"] = [1] * len(d["depths"])


def _rag_parts() -> ConfigDict:
    # RagConfig() refuses to exist without its two halves: a DPR question encoder and a BART generator
    from transformers import BartConfig, DPRConfig

    return {"question_encoder": DPRConfig().to_dict(), "generator": BartConfig().to_dict()}


def _musicgen_parts(decoder_class: str) -> Callable[[], ConfigDict]:
    # before 4.46, MusicgenConfig() refuses to exist without a T5 text encoder, an EnCodec audio
    # encoder and its decoder (the released checkpoints' choice)
    def parts() -> ConfigDict:
        from transformers import EncodecConfig, T5Config

        return {
            "text_encoder": T5Config().to_dict(),
            "audio_encoder": EncodecConfig().to_dict(),
            "decoder": getattr(transformers, decoder_class)().to_dict(),
        }

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

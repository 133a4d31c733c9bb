"""Generic shrinking of a config dict and its sub-configs, by tables: attribute names by kind of size
(:data:`GROUPS`), the sizes to try (:data:`SIZES`); per-layer lists, layer indices and rotary sections
follow the smaller stack and head. No model type is keyed here: a fixup (``tiny.fixups``) is passed in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .common import is_int
from .tokens import is_subconfig, is_token_key

if TYPE_CHECKING:
    from .common import ConfigDict, Size

#: the sizes to try, in order: the first that builds wins (each is tiny; the later ones fit the
#: few models whose arithmetic wants bigger or differently divisible dimensions)
SIZES: tuple[dict[str, int], ...] = (
    {"layers": 2, "hidden": 64, "heads": 4, "intermediate": 64, "experts": 4, "top_k": 2, "image": 32, "patch": 8},
    {"layers": 2, "hidden": 32, "heads": 2, "intermediate": 37, "experts": 4, "top_k": 2, "image": 32, "patch": 8},
    {"layers": 2, "hidden": 128, "heads": 8, "intermediate": 128, "experts": 4, "top_k": 2, "image": 64, "patch": 16},
    {"layers": 4, "hidden": 96, "heads": 6, "intermediate": 96, "experts": 8, "top_k": 2, "image": 48, "patch": 16},
)

#: the largest ``max_position_embeddings`` (and kin) a tiny model keeps
MAX_POSITIONS = 512
#: a sliding attention window the long scenario's prompt and new tokens outgrow
SLIDING_WINDOW = 16

#: attribute names of each kind of size (exact names; a sub-config is shrunk with the same table)
GROUPS: dict[str, tuple[str, ...]] = {
    "layers": (
        "num_hidden_layers",
        "num_layers",
        "n_layer",
        "n_layers",
        "num_encoder_layers",
        "num_decoder_layers",
        "encoder_layers",
        "decoder_layers",
        "speech_encoder_layers",
        "t2u_encoder_layers",
        "t2u_decoder_layers",
        "num_text_layers",
        "num_vision_layers",
        "text_layers",
        "vision_layers",
        "depth",
    ),
    "hidden": (
        "hidden_size",
        "d_model",
        "n_embd",
        "n_embed",
        "embed_dim",
        "model_dim",
        "word_embed_proj_dim",
        "embedding_size",
        "input_embedding_size",
        "output_embedding_size",
        "encoder_hidden_size",
        "projection_dim",
        "shared_representation_size",
        "ema_projection_size",
        "hidden_dim",
        "dim",
        "vision_embed_dim",
        "text_embed_dim",
        "projector_hidden_size",
        "backbone_hidden_size",
        "emb_dim",
    ),
    "heads": (
        "num_attention_heads",
        "n_head",
        "n_heads",
        "num_heads",
        "encoder_attention_heads",
        "decoder_attention_heads",
        "speech_encoder_attention_heads",
        "t2u_encoder_attention_heads",
        "t2u_decoder_attention_heads",
        "num_encoder_attention_heads",
        "num_decoder_attention_heads",
    ),
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "kv_n_heads", "n_head_kv", "multi_query_group_num"),
    "intermediate": (
        "intermediate_size",
        "ffn_dim",
        "encoder_ffn_dim",
        "decoder_ffn_dim",
        "d_ff",
        "n_inner",
        "dff",
        "ffn_hidden_size",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "nffn_hidden_size",
        "speech_encoder_intermediate_size",
        "t2u_encoder_ffn_dim",
        "t2u_decoder_ffn_dim",
        "intermediate_dim",
        "vision_intermediate_size",
        "mlp_dim",
        "feed_forward_size",
    ),
    "head_dim": ("head_dim", "d_kv", "kv_channels", "attention_head_size", "head_size"),
    # rotary dims are a part of the head: half of the new head
    "rotary": ("rotary_dim", "rotary_emb_dim", "rope_dim"),
    "experts": ("num_experts", "num_local_experts", "moe_num_experts", "n_routed_experts"),
    "top_k": ("num_experts_per_tok", "moe_top_k", "num_selected_experts", "num_experts_per_token", "moe_k"),
    "positions": (
        "max_position_embeddings",
        "n_positions",
        "n_ctx",
        "max_seq_len",
        "max_sequence_length",
        "max_source_positions",
        "max_target_positions",
        "max_encoder_position_embeddings",
        "max_decoder_position_embeddings",
        "t2u_max_position_embeddings",
        "max_text_positions",
    ),
    "vocab": ("vocab_size", "src_vocab_size", "tgt_vocab_size", "decoder_vocab_size", "text_vocab_size"),
}
GROUP_OF = {name: group for group, names in GROUPS.items() for name in names}
#: the kinds of size that keep at most the size's own value; kv heads, head sizes and rotary dims are
#: derived from the new heads and hidden size, the vocabulary is the one that holds every special id
CAPPED = ("layers", "hidden", "heads", "intermediate", "experts", "top_k")


class Fixup(NamedTuple):
    """A per-model adjustment of a shrunk config dict, in place, and what breaks without it."""

    apply: Callable[[ConfigDict, Size], None]
    why: str


def shrink(
    d: ConfigDict, size: Size, vocab: int, notes: list[str], path: str, fixups: Mapping[str, Fixup]
) -> ConfigDict:
    """A copy of config dict ``d`` with every size in :data:`GROUPS` made tiny (recursively), and each
    level's fixup (``fixups`` by model type) applied; what changed, and why a fixup ran, go to ``notes``."""
    out = dict(d)
    old_layers = {v for k, v in d.items() if GROUP_OF.get(k) == "layers" and is_int(v) and v > size["layers"]}
    _cap_sizes(d, out, size, vocab)
    _derive_from_heads(d, out, size)
    # attention windows shorter than a long scenario's sequence, so that what changes past the window
    # (masks, cache slicing) runs too
    for key in ("sliding_window",):
        value = d.get(key)
        if is_int(value) and value > SLIDING_WINDOW:
            out[key] = SLIDING_WINDOW
    _shrink_images(out, size)
    _follow_layers(d, out, old_layers, size["layers"])
    # sub-configs, recursively
    for key, value in d.items():
        if is_subconfig(key, value):
            out[key] = shrink(value, size, vocab, notes, f"{path}{key}.", fixups)
    fixup = fixups.get(str(d.get("model_type", "")))
    if fixup is not None:
        fixup.apply(out, size)
        notes.append(f"{path or 'config'}: fixup for {d.get('model_type')}: {fixup.why}")
    for key in d:
        if out.get(key) != d[key] and not is_subconfig(key, d[key]):
            notes.append(f"{path}{key}: {_short(d[key])} -> {_short(out.get(key))}")
    for key in out.keys() - d.keys():
        notes.append(f"{path}{key}: set to {_short(out[key])}")
    return out


def _cap_sizes(d: ConfigDict, out: ConfigDict, size: Size, vocab: int) -> None:
    """Each size of a capped kind (and the positions) at most the tiny one; the vocabulary the one given."""
    limits = {**{group: size[group] for group in CAPPED}, "positions": MAX_POSITIONS}
    for key, value in d.items():
        group = GROUP_OF.get(key.lstrip("_"))
        if is_int(value) and group == "vocab":
            out[key] = vocab
        elif is_int(value) and group in limits:
            out[key] = min(value, limits[group])


def _derive_from_heads(d: ConfigDict, out: ConfigDict, size: Size) -> None:
    """The kinds that depend on the shrunk heads and hidden size of the same level: kv heads, head sizes,
    rotary dims, and the rotary sections of a multimodal rope."""
    shrunk_heads, shrunk_hidden, old_heads = _first(out, "heads"), _first(out, "hidden"), _first(d, "heads")
    heads = size["heads"] if shrunk_heads is None else shrunk_heads
    hidden = size["hidden"] if shrunk_hidden is None else shrunk_hidden
    for key, value in d.items():
        group = GROUP_OF.get(key)
        if value is None and group in ("kv_heads", "head_dim") and shrunk_heads is not None:
            # None means "derive it" in most configs, but some models read it raw (Nemotron 4.45's kv
            # heads, HunYuan-VL's head_dim): what it would be derived as, explicitly
            out[key] = heads if group == "kv_heads" else max(hidden // max(heads, 1), 4)
        elif group == "kv_heads" and is_int(value):
            if value == old_heads:
                out[key] = heads  # plain multi-head attention stays so
            elif value == 1:
                out[key] = 1  # multi-query stays so
            else:
                out[key] = 2 if heads % 2 == 0 else 1
        elif group == "head_dim" and is_int(value):
            out[key] = max(hidden // max(heads, 1), 4)
        elif group == "rotary" and is_int(value) and value > 0:
            out[key] = max(2, (hidden // max(heads, 1)) // 2)
    # rotary sections (multimodal rope) add up to the rotary half of the head: scale them with it
    for key in ("rope_parameters", "rope_scaling"):
        rope = out.get(key)
        old_half = _half_head(d, old_heads)
        if isinstance(rope, dict) and old_half:
            new_half = max(hidden // max(heads, 1), 4) // 2
            if is_int(out.get("head_dim")):
                new_half = out["head_dim"] // 2
            out[key] = _shrink_rope(rope, old_half, new_half)


def _shrink_images(out: ConfigDict, size: Size) -> None:
    """Images small, with patches dividing them."""
    image, patch = out.get("image_size"), out.get("patch_size")
    if is_int(image) and image > size["image"]:
        out["image_size"] = size["image"]
        if is_int(patch) and (patch > size["patch"] or size["image"] % patch):
            out["patch_size"] = size["patch"]
    elif isinstance(image, (list, tuple)) and len(image) == 2 and all(is_int(x) for x in image):
        if max(image) > size["image"]:
            out["image_size"] = [size["image"], size["image"]]
            if isinstance(patch, (list, tuple)):
                out["patch_size"] = [size["patch"], size["patch"]]
            elif is_int(patch):
                out["patch_size"] = size["patch"]


def _follow_layers(d: ConfigDict, out: ConfigDict, old_layers: set[int], layers: int) -> None:
    """Per-layer lists (as long as the old stack) made as long as the new one, every kind of layer kept; layer
    indices (``hybrid_layer_ids``, ``cross_attention_layers``...) moved into the new stack."""
    for key, value in d.items():
        if isinstance(value, (list, tuple)) and len(value) in old_layers and not is_token_key(key):
            out[key] = type(value)(_per_layer(list(value), layers))
    reference = max(old_layers) if old_layers else _vision_layers(d)
    if reference:
        for key, value in d.items():
            if _is_layer_index_key(key) and key not in GROUPS["layers"] and out.get(key) == value:
                remapped = _remap_layer_indices(value, reference, layers)
                if remapped is not None:
                    out[key] = remapped


def _first(d: ConfigDict, group: str) -> int | None:
    """The first integer size of kind ``group`` in ``d``."""
    return next((v for k, v in d.items() if GROUP_OF.get(k) == group and is_int(v)), None)


def _half_head(d: ConfigDict, heads: int | None) -> int | None:
    """Half the head size of an (unshrunk) config dict: the rotary frequencies' count."""
    head = d.get("head_dim")
    if not is_int(head):
        hidden = _first(d, "hidden")
        head = hidden // heads if is_int(hidden) and heads else None
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
        elif (
            key in ("mrope_section", "mrope_sections", "rope_section")
            and isinstance(value, list)
            and all(is_int(v) for v in value)
        ):
            total = max(len(value), sum(value) * new_half // old_half)
            out[key] = scale_sections(value, total)
        elif key == "freq_allocation" and is_int(value):
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
            if is_int(layers):
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

    if is_int(value):
        return one(value) if -old <= value < old else None
    if isinstance(value, (list, tuple)) and value and all(is_int(i) for i in value):
        if not all(-old <= i < old for i in value):
            return None
        return type(value)(dict.fromkeys(one(i) for i in value))
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def fit_image_seq_length(d: ConfigDict, notes: list[str]) -> None:
    """``image_seq_length`` as many as the shrunk vision tower makes features, as a real config has it.

    It is the number of image tokens the processor expands an image to; 4.45's llava family takes
    its legacy merge path when a prompt has fewer (the default 576 for a tiny tower's 16), a path
    generate() cannot use with several new tokens per step, so every assisted case with an image
    would fail on both sides and prove nothing."""
    vision = d.get("vision_config")
    if not is_int(d.get("image_seq_length")) or not isinstance(vision, dict):
        return
    side, patch = vision.get("image_size"), vision.get("patch_size")
    if not (is_int(side) and is_int(patch) and patch > 0):
        return
    features = (side // patch) ** 2 + (1 if d.get("vision_feature_select_strategy") == "full" else 0)
    if d["image_seq_length"] != features:
        notes.append(f"image_seq_length: {d['image_seq_length']} -> {features} (the tiny vision tower's features)")
        d["image_seq_length"] = features

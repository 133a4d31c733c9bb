"""What is not token ids, as a processor prepares it: a float main input (speech features, raw audio,
pixels, patches, embeddings), the audio a speech-text model needs beside its ids, and images (or video
frames) with as many image tokens in the prompt as the model makes features, found by running it."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .common import TinyModelError, is_int, one_line, quiet, takes, text_config
from .tokens import random_ids

if TYPE_CHECKING:
    from .common import Inputs


def float_input(model: Any, name: str, batch_size: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
    """A float main input of the shape the config implies (speech features, raw audio, pixels, embeddings)."""
    config = model.config
    model_type = str(getattr(config, "model_type", ""))
    shape: tuple[int, ...]
    if name == "input_features":
        if hasattr(config, "input_feat_per_channel"):  # speech_to_text: (batch, frames, features x channels)
            shape = (batch_size, 4 * seq_len, config.input_feat_per_channel * getattr(config, "input_channels", 1))
        elif hasattr(config, "feature_projection_input_dim"):  # seamless: (batch, frames, 160)
            shape = (batch_size, 4 * seq_len, config.feature_projection_input_dim)
        elif hasattr(config, "num_mel_bins") and is_int(getattr(config, "max_source_positions", None)):
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
        hidden = getattr(text_config(config), "hidden_size", None)
        if not is_int(hidden):
            raise TinyModelError(f"main input {name} not supported for {type(model).__name__}")
        shape = (batch_size, seq_len, hidden)
    elif name == "pixel_values":
        vision = getattr(config, "vision_config", None) or getattr(config, "encoder", None) or config
        image = getattr(vision, "image_size", None)
        channels = getattr(vision, "num_channels", 3)
        if is_int(image):
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
        if sub is not None and is_int(getattr(sub, "num_mel_bins", None)):
            return sub
    return None


def extra_audio(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # speech-text models whose text is ids but that also need the audio it goes with, long enough for
    # the prompt and the new tokens: kyutai (raw audio, one codec frame per token), voxtral realtime
    # (mel features, audio_length_per_tok frames per token), moshi (user and moshi codebook codes)
    if "input_ids" not in inputs:
        return
    config, generator = model.config, ctx["generator"]
    batch, length = inputs["input_ids"].shape
    tokens = length + 8
    codec = getattr(config, "codec_config", None)
    if takes(model.forward, "input_values") and codec is not None and is_int(getattr(codec, "frame_size", None)):
        inputs["input_values"] = torch.randn((batch, 1, codec.frame_size * tokens), generator=generator)
    elif takes(model.generate, "user_audio_codes"):
        encoder = getattr(config, "audio_encoder_config", None)
        top = min(getattr(config, "audio_vocab_size", 2048), getattr(encoder, "codebook_size", 2048))
        codes = (batch, config.num_codebooks, length)
        inputs["user_audio_codes"] = torch.randint(0, top, codes, generator=generator)
        inputs["moshi_audio_codes"] = torch.randint(0, top, codes, generator=generator)
    elif takes(model.generate, "input_features") and is_int(
        getattr(getattr(config, "decoder_config", None), "feature_size", None)
    ):
        # CLVP's composite conditions its speech decoder on the speaker's voice: mel features (batch, bins, frames)
        inputs["input_features"] = torch.randn(
            (batch, config.decoder_config.feature_size, tokens), generator=generator
        )
    elif takes(model.forward, "input_features") and is_int(getattr(config, "audio_length_per_tok", None)):
        audio = _audio_encoder(config)
        mel = audio.num_mel_bins if audio is not None else 128
        frames = config.audio_length_per_tok * tokens
        inputs["input_features"] = torch.randn((batch, mel, frames), generator=generator)


def _image_token_id(config: Any) -> int | None:
    """The id that marks where image features go in ``input_ids``, where the config names one."""
    for source in (config, getattr(config, "text_config", None)):
        if source is None:
            continue
        for name in ("image_token_index", "image_token_id", "image_token"):
            value = getattr(source, name, None)
            if is_int(value):
                return value
    vocabulary_map = getattr(config, "vocabulary_map", None)  # chameleon
    image = vocabulary_map.get("<image>") if isinstance(vocabulary_map, dict) else None
    if is_int(image):
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
        if is_int(side):
            return channels, side
    return None


class _ScatterProbe:
    """Records the size of what ``masked_scatter`` puts into embeddings (or ids) during a forward:
    the number of image feature vectors a model makes for an image, whatever version it is."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def __enter__(self) -> _ScatterProbe:
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


def _with_image_tokens(
    inputs: Inputs, token: int, count: int, *, start: int | None = None, end: int | None = None, after: int = 0
) -> Inputs:
    """``inputs`` with ``count`` image tokens after each row's left padding and the first ``after`` of
    its tokens, between ``start`` and ``end`` where given (the tokens a processor puts around an image)."""
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    placed = [token] * count
    if start is not None:
        placed.insert(0, start)
    if end is not None:
        placed.append(end)
    rows, masks = [], []
    for row, row_mask in zip(ids, mask, strict=False):
        pad = int((row_mask == 0).long().cumprod(0).sum())
        at = pad + min(after, len(row) - pad)
        rows.append(torch.cat([row[:at], torch.tensor(placed, dtype=row.dtype), row[at:]]))
        masks.append(torch.cat([row_mask[:at], torch.ones(len(placed), dtype=row_mask.dtype), row_mask[at:]]))
    return {**inputs, "input_ids": torch.stack(rows), "attention_mask": torch.stack(masks)}


def _try_generate(model: Any, inputs: Inputs) -> str | None:
    """None when a short greedy ``generate()`` on ``inputs`` runs (its first step is a forward pass
    over the whole prompt), else the error's one-line text."""
    try:
        with torch.no_grad(), quiet():
            model.generate(**inputs, max_new_tokens=2, do_sample=False)
    except Exception as error:  # noqa: BLE001 - the caller tries another layout
        return one_line(error)
    return None


def _feature_count_from(error: str | None, probe: _ScatterProbe, images: int) -> int | None:
    for size in reversed(probe.sizes):
        if size and size % images == 0:
            return size // images
    # the count as the mismatch errors word it: llava's "image features: N", PaliGemma's "N tokens
    # from image embeddings" (models that do not scatter with masked_scatter),
    # or an index assignment's "value tensor of shape [N, hidden]" (Idefics2 puts features by index)
    for pattern in (r"features:?\s*(\d+)", r"(\d+) tokens from image embeddings", r"value tensor of shape \[(\d+),"):
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
    if getattr(config, "image_grid_pinpoints", None) and takes(model.forward, "image_sizes"):
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
    count = seq_length if is_int(seq_length) and seq_length > 0 else 1
    return _fit_image_tokens(model, inputs, extra, token, count)


def _fit_image_tokens(model: Any, inputs: Inputs, extra: Inputs, token: int, count: int) -> Inputs | None:
    """``inputs`` with ``extra`` (the image) and ``count`` image tokens per row, or as many as a run
    finds the model makes features (``count`` is the first guess); None when no count runs."""
    batch = inputs["input_ids"].shape[0]
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
    placeholder = int(random_ids(model, (1, 1), generator)[0, 0])
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


def _idefics2(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Idefics2's layout: images per row, (batch, images, C, H, W) with a (batch, images, H, W) mask of
    the real pixels, and as many image tokens per image as the perceiver resampler has latents (its
    features replace them on the first step; later steps get them back as ``image_hidden_states``)."""
    config = model.config
    shape = _image_side(config)
    token = _image_token_id(config)
    if shape is None or token is None:
        return None
    channels, side = shape
    batch = inputs["input_ids"].shape[0]
    extra: Inputs = {"pixel_values": torch.randn((batch, 1, channels, side, side), generator=generator)}
    if takes(model.forward, "pixel_attention_mask"):
        extra["pixel_attention_mask"] = torch.ones((batch, 1, side, side), dtype=torch.bool)
    latents = getattr(getattr(config, "perceiver_config", None), "resampler_n_latents", None)
    return _fit_image_tokens(model, inputs, extra, token, latents if is_int(latents) and latents > 0 else 1)


def _qwen2_vl(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Qwen2-VL's layout: every image's patches flattened into one (patches, channels x temporal patch x
    patch x patch) tensor, each image's grid of patches in ``image_grid_thw`` (t, h, w), and per image
    t*h*w / spatial_merge_size**2 image tokens between vision-start and vision-end tokens, after some
    text as in a chat prompt (``get_rope_index`` gives them 3D positions from the grid)."""
    config = model.config
    vision = getattr(config, "vision_config", None)
    token = getattr(config, "image_token_id", None)
    # the tokens around an image: Qwen's vision start/end, GLM-4V's image start/end
    start = next(
        (
            v
            for v in (getattr(config, n, None) for n in ("vision_start_token_id", "image_start_token_id"))
            if is_int(v)
        ),
        None,
    )
    end = next(
        (v for v in (getattr(config, n, None) for n in ("vision_end_token_id", "image_end_token_id")) if is_int(v)),
        None,
    )
    if vision is None or not is_int(token):
        return None
    merge = int(getattr(vision, "spatial_merge_size", 2))
    temporal, patch = getattr(vision, "temporal_patch_size", 2), getattr(vision, "patch_size", 14)
    channels = getattr(vision, "in_channels", None) or getattr(vision, "num_channels", 3)
    if not (is_int(temporal) and is_int(patch) and is_int(channels)):
        return None
    batch = inputs["input_ids"].shape[0]
    # an image two merged patches high and three wide (not square: rows and columns must not swap)
    grid = (1, 2 * merge, 3 * merge)
    patches = math.prod(grid)
    count = patches // merge**2
    width = channels * temporal * patch * patch
    candidate = _with_image_tokens(inputs, token, count, start=start, end=end, after=2)
    candidate["pixel_values"] = torch.randn((batch * patches, width), generator=generator)
    candidate["image_grid_thw"] = torch.tensor([grid] * batch)
    if takes(model.forward, "mm_token_type_ids"):  # 5.x: each token's modality, as the processor returns it
        candidate["mm_token_type_ids"] = (candidate["input_ids"] == token).long()
    if _try_generate(model, candidate) is not None:
        return None
    # and a video of two frames in front of the image, where the model takes one (its own inputs and grid, its own
    # token): the video path is a second input of the same kind that only a run with a video reaches
    video = getattr(config, "video_token_id", None)
    if not is_int(video) or not takes(model.forward, "pixel_values_videos") or "mm_token_type_ids" in candidate:
        return candidate
    frames = (2, 2 * merge, 2 * merge)
    with_video = _with_image_tokens(candidate, video, math.prod(frames) // merge**2, start=start, end=end, after=1)
    with_video["pixel_values_videos"] = torch.randn((batch * math.prod(frames), width), generator=generator)
    with_video["video_grid_thw"] = torch.tensor([frames] * batch)
    return with_video if _try_generate(model, with_video) is None else candidate


def _qwen2_audio(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Qwen2-Audio's layout: mel features (batch, mel bins, frames: the Whisper-style encoder's fixed window, twice its
    positions) with a (batch, frames) mask of the real frames (4.45's processor pads each clip to the window), and one
    audio token per row, which 4.45 expands into the encoder's features itself (it keeps the merged mask in the model
    kwargs). A model that wants a token per feature instead is run for the count (``_fit_image_tokens``)."""
    config = model.config
    audio = getattr(config, "audio_config", None)
    token = getattr(config, "audio_token_index", None)
    if audio is None or not is_int(token) or not is_int(getattr(audio, "max_source_positions", None)):
        return None
    batch = inputs["input_ids"].shape[0]
    frames = 2 * audio.max_source_positions
    # the feature extractor pads every clip to the window: the first clip fills it, the others are shorter (their
    # merged prompts then differ in length, and the model pads them)
    real = torch.ones((batch, frames), dtype=torch.long)
    real[1:, frames * 3 // 4 :] = 0
    extra: Inputs = {
        "input_features": torch.randn((batch, audio.num_mel_bins, frames), generator=generator) * real[:, None, :],
        "feature_attention_mask": real,
    }
    return _fit_image_tokens(model, inputs, extra, token, 1)


def _mllama(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Mllama cross-attends to tiled images: pixels (batch, images, tiles, C, H, W), each image's aspect ratio as
    a 1-based id into ``supported_aspect_ratios`` with a mask of the tiles it fills, one ``<|image|>`` token in
    front of the text, and a cross-attention mask (batch, length, images, tiles) that is 1 on the image's tiles
    from that token on (generate() repeats its last row for each new token)."""
    config = model.config
    vision, token = getattr(config, "vision_config", None), getattr(config, "image_token_index", None)
    if vision is None or not is_int(token):
        return None
    tiles, side, channels = vision.max_num_tiles, vision.image_size, vision.num_channels
    ratios = [math.prod(r) for r in vision.supported_aspect_ratios]
    # the widest ratio the tiles allow, so that the image fills more than one tile where it can
    used = max((n for n in ratios if n <= tiles), default=1)
    batch = inputs["input_ids"].shape[0]
    candidate = _with_image_tokens(inputs, token, 1)
    ids = candidate["input_ids"]
    candidate["pixel_values"] = torch.randn((batch, 1, tiles, channels, side, side), generator=generator)
    candidate["aspect_ratio_ids"] = torch.full((batch, 1), ratios.index(used) + 1, dtype=torch.long)
    filled = torch.zeros((batch, 1, tiles), dtype=torch.long)
    filled[..., :used] = 1
    candidate["aspect_ratio_mask"] = filled
    from_image = ((ids == token).long().cumsum(-1) > 0).long()  # (batch, length): the image token and after
    candidate["cross_attention_mask"] = from_image[:, :, None, None] * filled[:, None, :, :]
    return candidate if _try_generate(model, candidate) is None else None


def _kosmos2_text(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Kosmos-2's (and Kosmos-2.5's) text model alone, as the composite drives it: the image's embeddings (batch,
    image tokens, embed_dim) put in place of the tokens ``image_embeds_position_mask`` marks (after the first
    token)."""
    width = getattr(model.config, "embed_dim", None)
    if not is_int(width):
        return None
    count = 4
    batch = inputs["input_ids"].shape[0]
    placeholder = int(random_ids(model, (1, 1), generator)[0, 0])
    candidate = _with_image_tokens(inputs, placeholder, count, after=1)
    # the marks where the placeholders went: the same placement over ids of zeros, with ones for the placeholders
    blank = {**inputs, "input_ids": torch.zeros_like(inputs["input_ids"])}
    marks = _with_image_tokens(blank, 1, count, after=1)["input_ids"]
    candidate["image_embeds"] = torch.randn((batch, count, width), generator=generator)
    candidate["image_embeds_position_mask"] = marks
    return candidate if _try_generate(model, candidate) is None else None


def _clvp_decoder(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """CLVP's speech decoder alone, as ``ClvpModelForConditionalGeneration.generate`` drives it: conditioning
    embeddings (batch, length, hidden) in place of a prompt, to which its generate() appends the start token."""
    hidden = getattr(model.config, "hidden_size", None)
    if not is_int(hidden):
        return None
    batch, length = inputs["input_ids"].shape
    candidate: Inputs = {"conditioning_embeds": torch.randn((batch, length, hidden), generator=generator)}
    return candidate if _try_generate(model, candidate) is None else None


def _roc_bert(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """RoCBert's glyph-shape and pronunciation ids, one of each per token (its tokenizer returns them)."""
    config = model.config
    candidate = dict(inputs)
    shape = inputs["input_ids"].shape
    for key, vocabulary in (
        ("input_shape_ids", config.shape_vocab_size),
        ("input_pronunciation_ids", config.pronunciation_vocab_size),
    ):
        candidate[key] = torch.randint(0, vocabulary, shape, generator=generator)
    return candidate if _try_generate(model, candidate) is None else None


def _guided(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs:
    """Musicgen's classifier-free guidance: a ``guidance_scale`` above 1, which its method meets by doubling the
    batch (a conditional and an unconditional half) and only a run that asks for it reaches. Not tried here: there is
    no layout to guess, and 4.45's decoder fails a two-token trial run on its delay pattern, guided or not (a
    scenario that fails on both sides is no evidence of the guidance either)."""
    return {**inputs, "guidance_scale": 3.0}


def _melody_conditioning(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Musicgen-Melody's decoder alone, as its composite drives it: the conditioning (the text encoder's and the
    chroma's states, projected to the decoder's width) in ``encoder_hidden_states``, one row per batch item (the ids
    have one per codebook), which its forward puts in front of the sequence on the first step and its cache holds
    after; with the guidance (``_guided``) its method meets by pairing the conditioning with zeros. Not tried, for
    ``_guided``'s reason."""
    config = model.config
    books, width = getattr(config, "num_codebooks", None), getattr(config, "hidden_size", None)
    if not is_int(books) or not is_int(width) or inputs["input_ids"].shape[0] % books:
        return None
    batch = inputs["input_ids"].shape[0] // books
    states = torch.randn((batch, 3, width), generator=generator)
    return {**_guided(model, inputs, generator), "encoder_hidden_states": states}


def _melody(model: Any, inputs: Inputs, generator: torch.Generator) -> Inputs | None:
    """Musicgen-Melody's composite conditioned on a melody, as its processor gives one: chroma features (batch,
    frames, ``num_chroma``), which its generate() turns into the conditioning once, with the guidance (``_guided``).
    Without a melody it conditions on a one-hot placeholder, and an override that hands the features to every step
    (the forward then rebuilds the conditioning and puts it in front again) takes another path only with one."""
    chroma = getattr(model.config, "num_chroma", None)
    if not is_int(chroma):
        return None
    batch = inputs["input_ids"].shape[0]
    melody = torch.rand((batch, 5, chroma), generator=generator)
    return {**_guided(model, inputs, generator), "input_features": melody}


#: model_type -> builder of multimodal inputs, for the layouts the generic one can't guess; the multimodal
#: scenarios are where a model's own inputs beside its text go, so the builders for what is not an image
#: (conditioning embeddings, RoCBert's shape and pronunciation ids, Musicgen's guidance) are here too
MULTIMODAL: dict[str, Callable[[Any, Inputs, torch.Generator], Inputs | None]] = {
    "fuyu": _fuyu,
    "idefics": _idefics,
    # flattened patches and their grid (checked on 4.45, 4.46 and 5.x; the others exist in 5.x only)
    "qwen2_vl": _qwen2_vl,
    "qwen2_5_vl": _qwen2_vl,
    "glm4v": _qwen2_vl,
    "glm46v": _qwen2_vl,
    # images per row with a pixel mask (Idefics3, from 4.46 on, finds its token count by running)
    "idefics2": _idefics2,
    "idefics3": _idefics2,
    # cross-attended tiles (4.45 on)
    "mllama": _mllama,
    # mel features and their mask (4.45: one audio token the model expands itself)
    "qwen2_audio": _qwen2_audio,
    # what is not an image: the inputs these models' composites (or tokenizers) give them
    "kosmos_2_text_model": _kosmos2_text,
    "kosmos_2_5_text_model": _kosmos2_text,  # 5.x: the same inputs, from its vision model's latent queries
    "clvp_decoder": _clvp_decoder,
    "roc_bert": _roc_bert,
    "musicgen": _guided,
    "musicgen_decoder": _guided,
    "musicgen_melody": _melody,
    "musicgen_melody_decoder": _melody_conditioning,
}

#: model types that can't run without an image (their text path still needs one)
NEEDS_IMAGE = {"idefics"}


def legacy_image_inputs(model: Any, inputs: Inputs, *, seed: int = 0) -> Inputs | None:
    """``inputs`` with an image and *one* image token per row, where the config's ``image_seq_length`` asks for
    more: the prompt 4.45's processors without ``patch_size`` made, which sends the llava family down its legacy
    merge path (the model expands the token itself, and on every later step needs the image again to patch the
    attention mask; its override passes it while ``legacy_processing``). ``None`` where the config has no
    ``image_seq_length`` to fall short of, or the model cannot run such a prompt (releases without that path)."""
    seq_length = getattr(model.config, "image_seq_length", None)
    token = _image_token_id(model.config)
    if not is_int(seq_length) or seq_length <= 1 or token is None:
        return None
    full = multimodal_inputs(model, inputs, seed=seed)
    if full is None:
        return None
    image = {k: v for k, v in full.items() if k not in ("input_ids", "attention_mask")}
    candidate = {**inputs, **image, **_with_image_tokens(inputs, token, 1)}
    return candidate if _try_generate(model, candidate) is None else None


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
        key = next((k for k in ("pixel_values", "pixel_values_images") if takes(model.forward, k)), None)
        if key is None:
            return None
        builder = functools.partial(_llava_like, key=key)
    generator = torch.Generator().manual_seed(seed + 1)
    try:
        return builder(model, inputs, generator)
    except TinyModelError:
        return None

"""The scenarios in which the caller gives generate() more than a text prompt: an image (or audio), encoder
outputs or states, token types, head masks, decoder inputs, position ids, a cache to start from or to continue.

Runs in the verification environment; imports only the stdlib, torch, transformers, ``tiny`` and the modules
beside it. Inputs a model itself refuses are no scenario (``Skip``), not a crash of either side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tiny
import torch
from decoding_scenarios import ASSISTANT, Skip, accepts, decoder_only, left_padded_batch, takes_cache_flag
from recording import output_flags

if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    from decoding_scenarios import Kwargs


def encoder_outputs(model: Any, assistant: Any, seed: int) -> Kwargs:
    if decoder_only(model):
        raise Skip("decoder-only model")
    inputs = tiny.generation_inputs(model, seed=seed)
    main = model.main_input_name
    with torch.no_grad():
        encoded = model.get_encoder()(**{main: inputs[main]}, attention_mask=inputs.get("attention_mask"))
    rest = {k: v for k, v in inputs.items() if k != main}
    return {**rest, "encoder_outputs": encoded, "do_sample": False}


def _with_image(model: Any, seed: int, **shape: int) -> Kwargs:
    """Greedy generate() kwargs with an image in each row (``shape``: generation_inputs' batch and padding)."""
    extra = tiny.multimodal_inputs(model, tiny.generation_inputs(model, seed=seed, **shape), seed=seed)
    if extra is None:
        raise Skip("no multimodal inputs known for this model")
    return {**extra, "do_sample": False}


def multimodal(model: Any, assistant: Any, seed: int) -> Kwargs:
    return _with_image(model, seed)


def multimodal_assisted(model: Any, assistant: Any, seed: int) -> Kwargs:
    """An image and assisted decoding: several new tokens per step, so an override that sends a
    first-step-only input (``pixel_values``) again fails where one token per step hides it."""
    return {**multimodal(model, assistant, seed), "assistant_model": ASSISTANT}


def multimodal_padded(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A left-padded batch of two, each row with its image: positions and masks around the image tokens."""
    return _with_image(model, seed, batch_size=2, left_pad=3)


def multimodal_no_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """An image with no cache: every step sees the whole prompt, image tokens and all, so an override that sends
    the image (or its features) only on the first step, or counts steps by a cache, takes another path."""
    takes_cache_flag(model)
    return {**multimodal(model, assistant, seed), "use_cache": False}


def multimodal_legacy(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A left-padded batch of two with one image token per row where the config wants ``image_seq_length``: 4.45's
    llava family merges the image itself (the legacy path) and needs it again on every later step, so an override
    that sends it on the first step only, whatever the prompt, generates something else."""
    inputs = tiny.generation_inputs(model, seed=seed, batch_size=2, left_pad=3)
    extra = tiny.legacy_image_inputs(model, inputs, seed=seed)
    if extra is None:
        raise Skip("no legacy image prompt: the config has no image_seq_length, or the model cannot run one")
    return {**extra, "do_sample": False}


#: the token types a multimodal model's processor returns beside its ids (5.x's vision-language models: 0 for text, and
#: Ernie 4.5 VL's experts' own), which their overrides or the mixin drop after the first step
MULTIMODAL_TOKEN_TYPES = ("mm_token_type_ids", "moe_mm_token_type_ids")


def token_type_ids(model: Any, assistant: Any, seed: int) -> Kwargs:
    """An extra kwarg the caller passes (segment ids, both types where the model has two; a multimodal model's token
    types, all text), in a left-padded batch: overrides slice it, drop it, or forget it on later steps."""
    multimodal = [name for name in MULTIMODAL_TOKEN_TYPES if accepts(model, name)]
    segmented = accepts(model, "token_type_ids")
    if not segmented and not multimodal:
        raise Skip(f"forward takes no token_type_ids (nor {', '.join(MULTIMODAL_TOKEN_TYPES)})")
    inputs = tiny.generation_inputs(model, batch_size=2, seed=seed, left_pad=2)
    if "input_ids" not in inputs:
        raise Skip("the main input is not input_ids")
    ids = inputs["input_ids"]
    given: Kwargs = {name: torch.zeros_like(ids) for name in multimodal}  # text: no image for these tokens
    if segmented:
        types = int(getattr(tiny.text_config(model.config), "type_vocab_size", 1) or 1)
        segments = torch.zeros_like(ids)
        if types >= 2:
            segments[:, ids.shape[1] // 2 :] = 1
        given["token_type_ids"] = segments
    return {**inputs, **given, "do_sample": False}


def encoder_hidden_states(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A decoder with cross-attention, given encoder states by the caller (as a custom
    encoder-decoder pipeline does): the states must reach every step's forward, or none."""
    if not getattr(model.config, "add_cross_attention", False) or not accepts(model, "encoder_hidden_states"):
        raise Skip("no cross-attention")
    inputs = tiny.generation_inputs(model, seed=seed)
    if "input_ids" not in inputs:
        raise Skip("the main input is not input_ids")
    batch = inputs["input_ids"].shape[0]
    width = getattr(model.config, "cross_attention_hidden_size", None) or model.config.hidden_size
    generator = torch.Generator().manual_seed(seed + 2)
    extra = {"encoder_hidden_states": torch.randn((batch, 5, width), generator=generator)}
    if accepts(model, "encoder_attention_mask"):
        extra["encoder_attention_mask"] = torch.ones((batch, 5), dtype=torch.long)
    return {**inputs, **extra, "do_sample": False}


#: the head masks a forward may take: the encoder's (``head_mask``; a decoder-only model's only one) and the decoder's
HEAD_MASKS = ("head_mask", "decoder_head_mask", "cross_attn_head_mask")
#: config attributes that count a stack's layers and its heads, most specific first (Bart's, T5's, the common names)
_DECODER_SIZES = (
    ("decoder_layers", "num_decoder_layers", "num_hidden_layers", "num_layers"),
    ("decoder_attention_heads", "num_decoder_attention_heads", "num_heads", "num_attention_heads"),
)
_ENCODER_SIZES = (
    ("encoder_layers", "num_encoder_layers", "num_layers", "num_hidden_layers"),
    ("encoder_attention_heads", "num_encoder_attention_heads", "num_heads", "num_attention_heads"),
)


def _first_int(config: Any, names: tuple[str, ...]) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def head_mask_shape(config: Any, *, decoder: bool) -> tuple[int, int] | None:
    """(layers, heads) of the stack a head mask is for: the decoder's (a decoder-only model's one stack; a
    composite's text decoder) or the encoder's; None when the config does not say."""
    layers, heads = _DECODER_SIZES if decoder else _ENCODER_SIZES
    owner = tiny.text_config(config) if decoder else config
    found = _first_int(owner, layers), _first_int(owner, heads)
    return (found[0], found[1]) if found[0] is not None and found[1] is not None else None


def head_masks(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Head masks the caller passes, the first head of every layer switched off, where ``forward`` takes them:
    the closed dicts of <= 4.45 dropped them (``generate()`` accepted and ignored them), the mixin forwards
    them, so a deletion changes what such a call generates."""
    inputs = tiny.generation_inputs(model, seed=seed)
    masks = {}
    for name in HEAD_MASKS:
        if not accepts(model, name):
            continue
        shape = head_mask_shape(model.config, decoder=name != "head_mask" or decoder_only(model))
        if shape is not None:
            mask = torch.ones(shape)
            mask[:, 0] = 0.0
            masks[name] = mask
    if not masks:
        raise Skip("forward takes no head mask, or the config does not say its layers and heads")
    # a shape guessed wrong from the config is no scenario: a new side that crashed on it would be "repaired"
    _runs_with(model, inputs, masks)
    return {**inputs, **masks, "do_sample": False}


def _runs_with(model: Any, inputs: Kwargs, extra: Kwargs) -> None:
    """A forward pass with ``extra`` beside the prompt, on the side that builds the scenario: inputs the model
    itself refuses (another rope layout, embeddings of another width) are no scenario, not a crash of either side.
    A decoder gets its start ids (``decoder_start_ids``), unless ``extra`` gives its inputs (T5 does not make them)."""
    decoder = {} if {"decoder_input_ids", "decoder_inputs_embeds"} & set(extra) else decoder_start_ids(model, inputs)
    try:
        with torch.no_grad():
            model(**inputs, **decoder, **extra)
    except Exception as error:
        raise Skip(f"the model refuses them: {type(error).__name__}: {str(error)[:120]}") from error


def decoder_start_ids(model: Any, inputs: Kwargs) -> Kwargs:
    """``decoder_input_ids`` of the decoder start id for one forward pass beside ``inputs``, where ``forward`` takes
    them (by what it takes: Musicgen-Melody's composite is no encoder-decoder by its config, yet has a decoder), a
    row per codebook for a codebook decoder (Musicgen's); else nothing."""
    start = model.generation_config.decoder_start_token_id
    if not accepts(model, "decoder_input_ids") or not isinstance(start, int):
        return {}
    batch = next(v for v in inputs.values() if torch.is_tensor(v)).shape[0]
    codebooks = getattr(getattr(model.config, "decoder", None), "num_codebooks", None)
    rows = batch * codebooks if isinstance(codebooks, int) else batch
    return {"decoder_input_ids": torch.full((rows, 1), start, dtype=torch.long)}


def _decoder_start(model: Any) -> tuple[int, Any]:
    """An encoder-decoder's decoder start id and its decoder's token embeddings (what the caller's decoder inputs
    are made of), or Skip."""
    start = model.generation_config.decoder_start_token_id
    embeddings = getattr(model.get_decoder(), "embed_tokens", None) if hasattr(model, "get_decoder") else None
    if not isinstance(start, int) or not isinstance(getattr(embeddings, "num_embeddings", None), int):
        raise Skip("no decoder start id or decoder token embeddings")
    return start, embeddings


def decoder_inputs_embeds(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The caller's decoder embeddings for an encoder-decoder (the start token's, embedded): the closed dicts of
    <= 4.45 dropped them (generate() starts from its own decoder ids), the mixin forwards them beside those ids,
    which ``forward`` refuses, so a deletion that looked identical crashes such a call."""
    if decoder_only(model) or not accepts(model, "decoder_inputs_embeds"):
        raise Skip("not an encoder-decoder whose forward takes decoder_inputs_embeds")
    inputs = tiny.generation_inputs(model, seed=seed)  # a batch of one
    start, embeddings = _decoder_start(model)
    with torch.no_grad():
        embeds = embeddings(torch.full((1, 1), start, dtype=torch.long))
    _runs_with(model, inputs, {"decoder_inputs_embeds": embeds})
    return {**inputs, "decoder_inputs_embeds": embeds, "do_sample": False}


def decoder_prompt(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The caller's decoder prompt for an encoder-decoder (the start id and two tokens a row) with its mask, one
    prompt token masked out: generate() continues from the prompt and extends the mask each step; the closed
    dicts of <= 4.45 dropped the mask (the decoder attended to every token), the mixin forwards it."""
    if decoder_only(model) or not accepts(model, "decoder_input_ids"):
        raise Skip("not an encoder-decoder whose forward takes decoder_input_ids")
    inputs = tiny.generation_inputs(model, batch_size=2, seed=seed)
    start, embeddings = _decoder_start(model)
    generator = torch.Generator().manual_seed(seed + 3)
    tokens = tiny.random_ids(model, (2, 2), generator, vocab=embeddings.num_embeddings)
    prompt = torch.cat([torch.full((2, 1), start, dtype=torch.long), tokens], 1)
    extra: Kwargs = {"decoder_input_ids": prompt}
    if accepts(model, "decoder_attention_mask"):
        mask = torch.ones_like(prompt)
        mask[0, 1] = 0
        extra["decoder_attention_mask"] = mask
    _runs_with(model, inputs, extra)
    return {**inputs, **extra, "do_sample": False}


def position_ids(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The caller's position ids for the prompt of a left-padded batch, counted from the first real token as
    generate() would count them: overrides that build their own from the mask, use the caller's, or (closed
    dicts) drop them, all take other paths once the caller gives them; the mixin slices them to the new tokens."""
    if not decoder_only(model) or not accepts(model, "position_ids"):
        raise Skip("not a decoder-only model whose forward takes position_ids")
    # the left-padded batch's prompt: an extension here is held to that scenario's first new token
    inputs = left_padded_batch(model, assistant, seed)
    inputs.pop("do_sample")
    if "input_ids" not in inputs or "attention_mask" not in inputs:
        raise Skip("the main input is not input_ids with a mask")
    mask = inputs["attention_mask"]
    positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
    _runs_with(model, inputs, {"position_ids": positions})
    return {**inputs, "position_ids": positions, "do_sample": False}


#: how many of the prompt's tokens the caller's cache holds in ``prefilled-cache`` (the rest are new on the first step)
PREFILLED = 4


def prefilled_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A cache the caller already filled with the prompt's first tokens, as a conversation goes on (the docs'
    "re-use the cache"): the first step has a cache and several uncached tokens, where code that tells the first
    step by an absent cache, or cuts the ids to the last token whenever there is a cache, parts from the mixin,
    which cuts them by ``cache_position``. The cache is the model's own forward's over those tokens, a legacy tuple
    where the model makes a plain ``DynamicCache`` (it travels to any device with the other tensors, and generate()
    converts it back)."""
    if not decoder_only(model) or not accepts(model, "past_key_values"):
        raise Skip("not a decoder-only model whose forward takes past_key_values")
    inputs = tiny.generation_inputs(model, seed=seed)
    if set(inputs) != {"input_ids", "attention_mask"}:
        raise Skip("the prompt is more than input_ids with a mask")
    prefix = {key: value[:, :PREFILLED] for key, value in inputs.items()}
    try:
        with torch.no_grad():
            cache = model(**prefix, use_cache=True).past_key_values
    except Exception as error:
        raise Skip(
            f"the model's forward makes no cache of the prompt: {type(error).__name__}: {str(error)[:120]}"
        ) from error
    if cache is None:
        raise Skip("the model's forward returns no cache")
    if type(cache).__name__ == "DynamicCache" and hasattr(cache, "to_legacy_cache"):
        cache = cache.to_legacy_cache()
    return {**inputs, "past_key_values": cache, "do_sample": False}


#: new tokens of the first generate() call of the continued scenarios; the second makes the scenario's count
FIRST_CALL_TOKENS = 3
#: saved-input key of the continued scenarios: the first call's new-token count (the run makes two calls)
CONTINUE = "__continue__"


def continue_from_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Generation continued from a returned cache, as a chat goes on: ``generate(return_dict_in_generate=True)``,
    then ``generate()`` again with the returned ``past_key_values`` and the longer ids (a mask over them). The
    second call starts with a cache that holds all but the last token, and where a model's cache holds more than its
    ids (Musicgen's delay pattern, Qwen2-Audio's expanded audio) with more: code that cut the ids to the last token
    then, and code that slices by ``cache_position``, part."""
    _caches(model)
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False, CONTINUE: FIRST_CALL_TOKENS}


def multimodal_continue(model: Any, assistant: Any, seed: int) -> Kwargs:
    """:func:`continue_from_cache` with the model's image (or audio) in the prompt: the second call gives the ids
    and the cache, whose image features the cache holds (an audio token expands into many cached positions)."""
    _caches(model)
    return {**multimodal(model, assistant, seed), CONTINUE: FIRST_CALL_TOKENS}


def _caches(model: Any) -> None:
    if not accepts(model, "past_key_values") or not accepts(model, "use_cache"):
        raise Skip("forward takes no past_key_values and use_cache: no cache to continue from")
    if "return_dict_in_generate" not in output_flags(model):
        raise Skip("a two-stage speech model: its generate() returns no cache to continue from")

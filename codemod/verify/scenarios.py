"""Generation scenarios, run on one side (old or new code) inside the verification environment.

Runs in the checkout's environment (torch + that release's dependencies, transformers from
PYTHONPATH); imports only the stdlib, torch, transformers and ``tiny``. Every scenario generates
with the same seed on both sides and records what comparison needs: the generated tokens, the
scores, and every dict ``prepare_inputs_for_generation`` returned (so a difference can be named by
step and key). A scenario that does not apply to a model is skipped with the reason; one that
raises records the error (the comparison decides whether both sides failed alike).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tiny
import torch

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (models, tensors, generate() outputs) are Any.
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    #: keyword arguments for ``generate()`` (tensors, flags, the assistant), as a scenario builds them
    Kwargs = dict[str, Any]
    #: what :func:`summarize` makes of a value: JSON (scalars, lists, dicts)
    Summary = Any
    #: one dict ``prepare_inputs_for_generation`` returned (or the keys its caller passed), summarised
    Call = dict[str, Summary]
    #: a scenario: (model, assistant, seed) -> the generate() kwargs, or Skip
    Builder = Callable[[Any, Any, int], Kwargs]

MAX_NEW_TOKENS = 6
#: new tokens of the long scenario: enough to cross a length-dependent branch of a tiny config
#: (a sliding window, a rope scaling switch) that the short ones stay below
LONG_NEW_TOKENS = 24
#: tensors up to this many elements are recorded in full (ids, masks, positions, embeddings of a
#: tiny model); larger ones (a cache's states, pixels) by exact hash (integers) or by statistics
#: compared with a tolerance (floats): recording every cache in full made each class's result
#: document megabytes, and its writing and reading most of the verification time
FULL_VALUES = 512


#: stands for the assistant model in saved inputs (each side loads its own copy of the same weights)
ASSISTANT = "<assistant>"
#: saved-input keys that are not generate() kwargs: config attributes set for the scenario's run
#: (on the model's config and generation config, put back afterwards), and the new-token count
CONFIG = "__config__"
NEW_TOKENS = "__new_tokens__"


class Skip(Exception):
    """The scenario does not apply to this model."""


class BuildFailed(Exception):
    """Building the scenario's inputs failed (on the old side; the new side repeats its message)."""


# --------------------------------------------------------------------------------------------- recording


def summarize(value: Any, depth: int = 0) -> Summary:
    """A JSON-able account of a prepared input: tensors in full (small) or by hash, caches by type and length."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if torch.is_tensor(value):
        tensor = value.detach().cpu()
        summary = {"tensor": list(tensor.shape), "dtype": str(tensor.dtype)}
        if tensor.numel() <= FULL_VALUES:
            summary["values"] = tensor.flatten().tolist()
        elif tensor.is_floating_point() or tensor.is_complex():
            flat = tensor.detach().double().flatten()
            summary["stats"] = [
                flat.sum().item(),
                flat.abs().sum().item(),
                flat.min().item(),
                flat.max().item(),
                *flat[:8].tolist(),
            ]
        else:
            summary["sha256"] = hashlib.sha256(tensor.contiguous().numpy().tobytes()).hexdigest()
        return summary
    if depth > 4:
        return {"object": type(value).__name__}
    if hasattr(value, "get_seq_length") and hasattr(value, "update"):  # a transformers Cache
        try:
            length = int(value.get_seq_length())
        except Exception:  # noqa: BLE001 - some caches cannot tell before their first update
            length = None
        return {"cache": type(value).__name__, "length": length}
    if isinstance(value, dict):
        return {"dict": {str(k): summarize(v, depth + 1) for k, v in value.items()}}
    if isinstance(value, (tuple, list)):
        return {"seq": [summarize(v, depth + 1) for v in value]}
    return {"object": type(value).__name__}


def record_calls(model: Any, received: list[Call] | None = None, named: set[str] | None = None) -> list[Call]:
    """Record every dict ``model.prepare_inputs_for_generation`` returns from now on, into
    ``received`` what the caller passed for the keys it returns (so that a comparison can tell a
    value passed on unchanged from one the method built), and into ``named`` the name of every
    argument it was given a value for (what a run exercised of the method's inputs).

    ``functools.wraps`` keeps the signature visible to ``inspect.signature``: generate() validates
    model kwargs against it, and a ``(*args, **kwargs)`` wrapper would silently accept anything.
    """
    calls: list[Call] = []
    original = model.prepare_inputs_for_generation
    try:
        signature: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(original)
    def recorder(*args: Any, **kwargs: Any) -> Any:
        arguments = _by_name(signature, args, kwargs)
        given = {k: summarize(arguments[k]) for k in arguments if arguments[k] is not None}
        if named is not None:
            named.update(given)
        prepared = original(*args, **kwargs)
        calls.append({str(k): summarize(v) for k, v in prepared.items()})
        if received is not None:
            received.append({k: v for k, v in given.items() if k in prepared})
        return prepared

    model.prepare_inputs_for_generation = recorder
    return calls


def _by_name(signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """What the caller passed, by name: the keywords, and the positional arguments (generate() gives
    the ids so) under the names of the parameters they fill, so that ids passed on unchanged show."""
    named = dict(kwargs)
    if not args or signature is None:
        return named
    try:
        bound = signature.bind_partial(*args)
    except TypeError:
        return named
    for name, value in bound.arguments.items():
        if (
            signature.parameters[name].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            or signature.parameters[name].kind is inspect.Parameter.POSITIONAL_ONLY
        ):
            named.setdefault(name, value)
    return named


# --------------------------------------------------------------------------------------------- scenarios


def _accepts(model: Any, name: str) -> bool:
    """Whether ``forward`` takes ``name``: by name, or (a composite's ``decoder_*`` input) through ``**kwargs``
    that it hands to its decoder by the prefix (Musicgen's ``decoder_head_mask``)."""
    parameters = inspect.signature(model.forward).parameters
    if name in parameters:
        return True
    if not name.startswith("decoder_") or not any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return False
    try:
        source = inspect.getsource(type(model).forward)
    except (OSError, TypeError):
        return False
    return 'startswith("decoder_")' in source


def _decoder_only(model: Any) -> bool:
    return not getattr(model.config, "is_encoder_decoder", False)


def greedy(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False}


def greedy_no_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False, "use_cache": False}


def left_padded_batch(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, batch_size=2, seed=seed, left_pad=3), "do_sample": False}


def sampling(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": True, "top_k": 5, "temperature": 0.9}


def beam_search(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, batch_size=2, seed=seed, left_pad=2), "num_beams": 2, "do_sample": False}


def assisted(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Assisted decoding: several candidate tokens per step, with an extra model kwarg passed along.

    This is where overrides have historically dropped model kwargs (token_type_ids) or kept only
    the last token.
    """
    inputs = tiny.generation_inputs(model, seed=seed)
    extra = {}
    if _accepts(model, "token_type_ids") and "input_ids" in inputs:
        extra["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
    return {**inputs, **extra, "assistant_model": ASSISTANT, "do_sample": False}


def inputs_embeds(model: Any, assistant: Any, seed: int) -> Kwargs:
    return _from_embeddings(model, tiny.generation_inputs(model, seed=seed))


def inputs_embeds_padded(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The left-padded batch of two from its embeddings: where the old code refused embeddings, the new code
    must generate what the padded ids generate (positions counted from the mask, not from the ids)."""
    return _from_embeddings(model, tiny.generation_inputs(model, batch_size=2, seed=seed, left_pad=3))


def _from_embeddings(model: Any, inputs: Kwargs) -> Kwargs:
    if not _decoder_only(model) or not _accepts(model, "inputs_embeds"):
        raise Skip("encoder-decoder model, or forward takes no inputs_embeds")
    if "input_ids" not in inputs:
        raise Skip("the main input is not input_ids")
    ids = inputs.pop("input_ids")
    with torch.no_grad():
        inputs["inputs_embeds"] = model.get_input_embeddings()(ids)
    return {**inputs, "do_sample": False}


def static_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A static cache. Releases before 5.0 say whether a model supports one (``_supports_static_cache``); 5.x has no
    such flag, and generate() makes one for any model that can hold it: there a run on a copy of the model (on
    the side that builds the scenario, the old code) decides. Without it every 5.x class skipped the scenario, and
    5.23's Musicgen decoder, whose reduction takes a 4D static-cache mask over its batch x codebooks rows, passed."""
    inputs = {**tiny.generation_inputs(model, seed=seed), "do_sample": False, "cache_implementation": "static"}
    supports = getattr(model, "_supports_static_cache", None)
    if supports is None:
        # 5.x's generation configs leave these None, and a generate() of a model's own (Musicgen's) sizes the static
        # cache by them as they are: given, they are what generate()'s defaults mean
        inputs.update(num_beams=1, num_return_sequences=1)
        _generates_with(model, inputs)
    elif not supports:
        raise Skip("the model does not support a static cache")
    return inputs


def _generates_with(model: Any, inputs: Kwargs) -> None:
    """The scenario's new tokens from ``inputs`` on a copy of ``model`` (generate() may keep a cache on the model), or
    Skip (as many as the scenario: a static cache is sized by them, and Musicgen's fails with fewer than its delay)."""
    try:
        with torch.no_grad():
            copy.deepcopy(model).generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, min_new_tokens=MAX_NEW_TOKENS)
    except Exception as error:
        raise Skip(f"the model does not generate so: {type(error).__name__}: {str(error)[:120]}") from error


def encoder_outputs(model: Any, assistant: Any, seed: int) -> Kwargs:
    if _decoder_only(model):
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
    _takes_cache_flag(model)
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


def contrastive(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "penalty_alpha": 0.6, "top_k": 4}


def _takes_cache_flag(model: Any) -> None:
    if not _accepts(model, "use_cache"):
        raise Skip("forward takes no use_cache")


def config_no_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A config that says ``use_cache=False`` (generate() follows it): an override that did not pass
    ``use_cache`` let the forward read the config, the mixin passes generate()'s flag."""
    _takes_cache_flag(model)
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False, CONFIG: {"use_cache": False}}


def config_no_cache_generate_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The reverse: the config says no cache, the caller asks ``generate(use_cache=True)``."""
    _takes_cache_flag(model)
    return {
        **tiny.generation_inputs(model, seed=seed),
        "do_sample": False,
        "use_cache": True,
        CONFIG: {"use_cache": False},
    }


def no_attention_mask(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The ids alone: generate() builds the mask, an override may default one of its own."""
    inputs = tiny.generation_inputs(model, seed=seed)
    if "input_ids" not in inputs or "attention_mask" not in inputs:
        raise Skip("the main input is not input_ids with a mask")
    inputs.pop("attention_mask")
    return {**inputs, "do_sample": False}


#: the token types a multimodal model's processor returns beside its ids (5.x's vision-language models: 0 for text, and
#: Ernie 4.5 VL's experts' own), which their overrides or the mixin drop after the first step
MULTIMODAL_TOKEN_TYPES = ("mm_token_type_ids", "moe_mm_token_type_ids")


def token_type_ids(model: Any, assistant: Any, seed: int) -> Kwargs:
    """An extra kwarg the caller passes (segment ids, both types where the model has two; a multimodal model's token
    types, all text), in a left-padded batch: overrides slice it, drop it, or forget it on later steps."""
    multimodal = [name for name in MULTIMODAL_TOKEN_TYPES if _accepts(model, name)]
    segmented = _accepts(model, "token_type_ids")
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
    if not getattr(model.config, "add_cross_attention", False) or not _accepts(model, "encoder_hidden_states"):
        raise Skip("no cross-attention")
    inputs = tiny.generation_inputs(model, seed=seed)
    if "input_ids" not in inputs:
        raise Skip("the main input is not input_ids")
    batch = inputs["input_ids"].shape[0]
    width = getattr(model.config, "cross_attention_hidden_size", None) or model.config.hidden_size
    generator = torch.Generator().manual_seed(seed + 2)
    extra = {"encoder_hidden_states": torch.randn((batch, 5, width), generator=generator)}
    if _accepts(model, "encoder_attention_mask"):
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
        if not _accepts(model, name):
            continue
        shape = head_mask_shape(model.config, decoder=name != "head_mask" or _decoder_only(model))
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
    if not _accepts(model, "decoder_input_ids") or not isinstance(start, int):
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
    if _decoder_only(model) or not _accepts(model, "decoder_inputs_embeds"):
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
    if _decoder_only(model) or not _accepts(model, "decoder_input_ids"):
        raise Skip("not an encoder-decoder whose forward takes decoder_input_ids")
    inputs = tiny.generation_inputs(model, batch_size=2, seed=seed)
    start, embeddings = _decoder_start(model)
    generator = torch.Generator().manual_seed(seed + 3)
    tokens = tiny.random_ids(model, (2, 2), generator, vocab=embeddings.num_embeddings)
    prompt = torch.cat([torch.full((2, 1), start, dtype=torch.long), tokens], 1)
    extra: Kwargs = {"decoder_input_ids": prompt}
    if _accepts(model, "decoder_attention_mask"):
        mask = torch.ones_like(prompt)
        mask[0, 1] = 0
        extra["decoder_attention_mask"] = mask
    _runs_with(model, inputs, extra)
    return {**inputs, **extra, "do_sample": False}


def position_ids(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The caller's position ids for the prompt of a left-padded batch, counted from the first real token as
    generate() would count them: overrides that build their own from the mask, use the caller's, or (closed
    dicts) drop them, all take other paths once the caller gives them; the mixin slices them to the new tokens."""
    if not _decoder_only(model) or not _accepts(model, "position_ids"):
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
    if not _decoder_only(model) or not _accepts(model, "past_key_values"):
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


def long_generation(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False, NEW_TOKENS: LONG_NEW_TOKENS}


def beam_returned(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Beam search that returns both beams of each row (``num_return_sequences=2``): the rows of the batch are
    expanded twice over, and what an override prepares must follow each beam's own ids and mask."""
    return {**beam_search(model, assistant, seed), "num_return_sequences": 2}


def prompt_lookup(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Prompt lookup decoding: candidate tokens copied from the prompt (no assistant model), several new tokens per
    step as in assisted decoding, and a prompt whose n-grams repeat so that candidates are found."""
    inputs = tiny.generation_inputs(model, seed=seed)
    ids = inputs.get("input_ids")
    if ids is None or not torch.is_tensor(ids) or ids.dim() != 2:
        raise Skip("the main input is not input_ids")
    half = ids.shape[1] // 2 + 1
    inputs["input_ids"] = torch.cat([ids[:, :half], ids[:, : ids.shape[1] - half]], 1)  # the prompt repeats itself
    return {**inputs, "prompt_lookup_num_tokens": 2, "do_sample": False}


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
    if not _accepts(model, "past_key_values") or not _accepts(model, "use_cache"):
        raise Skip("forward takes no past_key_values and use_cache: no cache to continue from")
    if "return_dict_in_generate" not in _output_flags(model):
        raise Skip("a two-stage speech model: its generate() returns no cache to continue from")


#: name -> builder of generate() kwargs; the order is the report's
SCENARIOS: dict[str, Builder] = {
    "greedy": greedy,
    "greedy-no-cache": greedy_no_cache,
    "left-padded-batch": left_padded_batch,
    "sampling": sampling,
    "beam-search": beam_search,
    "assisted": assisted,
    "inputs-embeds": inputs_embeds,
    "inputs-embeds-padded": inputs_embeds_padded,
    "static-cache": static_cache,
    "encoder-outputs": encoder_outputs,
    "multimodal": multimodal,
    "multimodal-assisted": multimodal_assisted,
    "multimodal-padded": multimodal_padded,
    "multimodal-no-cache": multimodal_no_cache,
    "multimodal-legacy": multimodal_legacy,
    "contrastive": contrastive,
    "config-no-cache": config_no_cache,
    "config-no-cache-generate-cache": config_no_cache_generate_cache,
    "no-attention-mask": no_attention_mask,
    "token-type-ids": token_type_ids,
    "encoder-hidden-states": encoder_hidden_states,
    "head-masks": head_masks,
    "decoder-inputs-embeds": decoder_inputs_embeds,
    "decoder-prompt": decoder_prompt,
    "position-ids": position_ids,
    "prefilled-cache": prefilled_cache,
    "long": long_generation,
    "beam-search-returned": beam_returned,
    "prompt-lookup": prompt_lookup,
    "continue-from-cache": continue_from_cache,
    "multimodal-continue": multimodal_continue,
}

#: the keys a model's cache goes by in prepared inputs: a scenario whose later steps pass one with a
#: value exercised a cache
CACHE_KEYS = ("past_key_values", "cache_params", "mems", "past", "past_key_value", "past_buckets_states", "state")


def _to(value: Any, device: str) -> Any:
    """Tensors, also inside dicts, tuples and model outputs, onto ``device``."""
    if torch.is_tensor(value):
        return value.to(device)
    if isinstance(value, dict):  # ModelOutput is a dict too; keep its class
        for key in list(value.keys()):
            value[key] = _to(value[key], device)
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value


def _failure(name: str, error: BaseException, calls: list[Call] | None = None) -> dict[str, Any]:
    return {"name": name, "status": "error", "error": f"{type(error).__name__}: {error}"[:2000], "calls": calls or []}


def prepare_inputs(name: str, model: Any, assistant: Any, *, seed: int, path: str, build: bool) -> Kwargs:
    """The scenario's generate() kwargs: built and saved by the old side, loaded by the new one.

    Building inputs may look at the model (its config, its forward); doing it once, on the old side,
    means both sides run exactly the same inputs whatever the new code does. Raises ``Skip``, or
    re-raises the building's failure on both sides alike."""
    if build:
        try:
            kwargs = SCENARIOS[name](model, assistant, seed)
        except (Skip, tiny.TinyModelError) as reason:
            torch.save({"__skip__": str(reason)}, path)
            raise Skip(str(reason)) from None
        except Exception as error:
            message = f"{type(error).__name__}: {error}"[:2000]
            torch.save({"__error__": message}, path)
            raise BuildFailed(message) from error
        torch.save(kwargs, path)
        return kwargs
    saved: Kwargs = torch.load(path, weights_only=False)  # what the build side saved: a dict
    if "__skip__" in saved:
        raise Skip(saved["__skip__"])
    if "__error__" in saved:
        raise BuildFailed(saved["__error__"])
    return saved


def holds_cache(call: Call) -> bool:
    """Whether a recorded call passed a cache that holds something: a legacy tuple, or a Cache whose
    length is not 0 (generate() hands an empty one to the first step)."""
    for key in CACHE_KEYS:
        value = call.get(key)
        if value is None:
            continue
        if isinstance(value, dict) and "cache" in value and value.get("length") == 0:
            continue
        return True
    return False


def describe(kwargs: Kwargs) -> dict[str, Any]:
    """What a scenario's generate() call was given, for the report: tensors by shape, flags by value."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if torch.is_tensor(value):
            out[key] = list(value.shape)
        elif key == "assistant_model":
            out[key] = "tiny assistant (same class, other weights)" if value is not None else None
        elif isinstance(value, (bool, int, float, str)) or value is None:
            out[key] = value
        elif isinstance(value, dict) and key == CONFIG:
            out["config"] = dict(value)
        elif hasattr(value, "keys"):  # encoder outputs
            out[key] = type(value).__name__
    return out


class _Settings:
    """Config (and generation config) attributes set for one run and put back afterwards: the same
    model serves every scenario."""

    def __init__(self, model: Any, settings: dict[str, Any]) -> None:
        self.targets = [model.config, model.generation_config]
        self.settings = settings
        self.saved: list[tuple[object, str, object]] = []

    def __enter__(self) -> None:
        for target in self.targets:
            for key, value in self.settings.items():
                self.saved.append((target, key, getattr(target, key, None)))
                setattr(target, key, value)

    def __exit__(self, *exc: object) -> None:
        for target, key, value in reversed(self.saved):
            setattr(target, key, value)


def run_scenario(
    name: str,
    model: Any,
    assistant: Any,
    *,
    seed: int,
    device: str,
    inputs_path: str,
    build: bool,
    recorded: Any = None,
) -> dict[str, Any]:
    """Run one scenario; the result is JSON-able.

    ``recorded`` is the module whose ``prepare_inputs_for_generation`` is under test, when it is not
    ``model`` itself (the decoder inside a composite): its calls are the ones compared and repaired,
    the composite's are recorded besides (``outer_calls``)."""
    try:
        kwargs = prepare_inputs(name, model, assistant, seed=seed, path=inputs_path, build=build)
    except Skip as reason:
        return {"name": name, "status": "skipped", "reason": str(reason)}
    except BuildFailed as failed:  # the same message on both sides: "same-error"
        return {"name": name, "status": "error", "error": str(failed), "calls": []}
    except Exception as error:  # noqa: BLE001 - e.g. the saved inputs cannot be read
        return _failure(name, error)
    kwargs = _to(dict(kwargs), device)
    settings = kwargs.pop(CONFIG, {})
    new_tokens = int(kwargs.pop(NEW_TOKENS, MAX_NEW_TOKENS))
    first_tokens = int(kwargs.pop(CONTINUE, 0))
    assistant_calls: list[Call] = []
    received: list[Call] = []
    named: set[str] = set()
    target = recorded if recorded is not None else model
    calls = record_calls(target, received, named)
    outer_calls = record_calls(model) if target is not model else []
    try:
        if kwargs.get("assistant_model") == ASSISTANT:
            kwargs["assistant_model"] = assistant
            assistant.generation_config.num_assistant_tokens = 3  # several candidate tokens per step
            assistant.generation_config.num_assistant_tokens_schedule = "constant"
            # the assistant is the same class: its prepared inputs change with the migration too
            assistant_calls = record_calls(assistant)
        given = {**describe(kwargs), **({"config": settings} if settings else {}), "max_new_tokens": new_tokens}
        torch.manual_seed(seed)
        with torch.no_grad(), _Settings(model, settings):
            if first_tokens:
                out = continued(model, kwargs, first_tokens, new_tokens)
            else:
                out = model.generate(
                    **kwargs, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **_output_flags(model)
                )
    except Exception as error:  # noqa: BLE001 - the comparison judges errors (one side or both)
        return {
            **_failure(name, error, calls),
            "assistant_calls": assistant_calls,
            "received": received,
            "outer_calls": outer_calls,
            "inputs": describe(kwargs),
            "cache_used": any(holds_cache(call) for call in calls),
            "given": sorted(named),
        }
    finally:
        for module in (model, target, assistant):
            if "prepare_inputs_for_generation" in vars(module):
                del module.prepare_inputs_for_generation  # back to the class's method
    sequences, scores = outputs(out)
    return {
        "name": name,
        "status": "ok",
        "cache_used": any(holds_cache(call) for call in calls),
        "sequences": sequences,
        "scores": scores,
        "calls": calls,
        "assistant_calls": assistant_calls,
        "received": received,
        "outer_calls": outer_calls,
        "inputs": given,
        "given": sorted(named),
    }


class Continued:
    """What a continued run generated: the second call's sequences, and both calls' scores in order."""

    def __init__(self, sequences: Any, scores: tuple[Any, ...]) -> None:
        self.sequences, self.scores = sequences, scores


def continued(model: Any, kwargs: Kwargs, first_tokens: int, new_tokens: int) -> Continued:
    """Two generate() calls: ``first_tokens`` new tokens with the cache returned, then the rest of ``new_tokens``
    from the returned ids and cache (the encoder's inputs given again to an encoder-decoder, its decoder continuing
    from the returned ids; a decoder-only model's other inputs left to the cache, its mask grown over the ids)."""
    flags = _output_flags(model)
    first = model.generate(**kwargs, max_new_tokens=first_tokens, min_new_tokens=first_tokens, **flags)
    cache: Any = getattr(first, "past_key_values", None)
    sequences: Any = getattr(first, "sequences", None)
    if cache is None or not torch.is_tensor(sequences) or sequences.is_floating_point():
        raise RuntimeError("the first call returned no cache, or no ids to continue from")
    ids = sequences.reshape(-1, sequences.shape[-1])  # a codebook decoder's (batch, codebooks, length) too
    rest = new_tokens - first_tokens
    if getattr(model.config, "is_encoder_decoder", False):
        second = {**kwargs, "decoder_input_ids": ids}
    else:
        second = {key: value for key, value in kwargs.items() if not torch.is_tensor(value) or key == "attention_mask"}
        second["input_ids"] = ids
        mask = second.get("attention_mask")
        if mask is not None:
            grown = ids.shape[1] - mask.shape[1]
            second["attention_mask"] = (
                torch.cat([mask, mask.new_ones((mask.shape[0], grown))], 1) if grown >= 0 else mask[:, : ids.shape[1]]
            )
    out = model.generate(**second, past_key_values=cache, max_new_tokens=rest, min_new_tokens=rest, **flags)
    return Continued(out.sequences, tuple(first.scores or ()) + tuple(out.scores or ()))


def _output_flags(model: Any) -> dict[str, bool]:
    """Ask generate() for scores in a dict. Speech models that generate text, then units from it
    (seamless: ``generate_speech``, ``return_intermediate_token_ids``) pass unprefixed kwargs to both
    stages and expect a tensor back from the second: there the flags go to the text stage only (the
    one whose prepared inputs are recorded), through its ``text_`` prefix."""
    flags = {"output_scores": True, "return_dict_in_generate": True}
    parameters = inspect.signature(model.generate).parameters
    if "generate_speech" in parameters or "return_intermediate_token_ids" in parameters:
        return {f"text_{key}": value for key, value in flags.items()}
    return flags


def outputs(out: Any) -> tuple[list[Any], list[list[list[float]]]]:
    """(token sequences, float outputs per step) of whatever generate() returned: a generation output
    with scores, or (speech models, composites such as CLVP's) tensors such as waveforms or logits, compared
    like scores."""
    if hasattr(out, "sequences"):
        steps = [[compact_row(row) for row in step.detach().float().cpu()] for step in (out.scores or ())]
        return out.sequences.detach().cpu().tolist(), steps
    if hasattr(out, "to_tuple"):  # a composite's own output (CLVP's: speech ids, similarity logits, embeddings)
        out = out.to_tuple()
    tensors = [t.detach().cpu() for t in (out if isinstance(out, (tuple, list)) else (out,)) if torch.is_tensor(t)]
    ids = [t for t in tensors if not t.is_floating_point()]
    floats = [t for t in tensors if t.is_floating_point()]
    sequences = (
        ids[0].reshape(-1).tolist()
        if ids and ids[0].dim() == 0
        else (ids[0].reshape(ids[0].shape[0], -1).tolist() if ids else [])
    )
    return sequences, [[compact_row(t.flatten().float())] for t in floats]


def compact_row(row: torch.Tensor) -> list[float]:
    """One row of scores (or a waveform) as compared: in full when small, else its sum, absolute sum,
    extremes, eight largest values and first eight values (a vocabulary of 50,000 ids per step, in
    full, made documents of a hundred megabytes; the tokens themselves are compared exactly)."""
    flat = row.flatten()
    if flat.numel() <= FULL_VALUES:
        values: list[float] = flat.tolist()
        return values
    wide = flat.double()
    finite = wide[torch.isfinite(wide)]
    extremes = [finite.min().item(), finite.max().item()] if finite.numel() else [0.0, 0.0]
    return [wide.sum().item(), wide.abs().sum().item(), *extremes, *wide.topk(8).values.tolist(), *wide[:8].tolist()]

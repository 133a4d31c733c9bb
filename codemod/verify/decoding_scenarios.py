"""The scenarios of generate()'s own ways of decoding a text prompt: greedy, sampling, beams, assisted and
contrastive decoding, prompt lookup, the cache flags, a static cache, embeddings for ids, a long run; and what
every scenario builder shares: the saved-input keys, ``Skip``, and what a model's ``forward`` takes.

Runs in the verification environment; imports only the stdlib, torch, transformers, ``tiny`` and ``recording``. A builder
takes (model, assistant, seed) and returns the generate() kwargs, or raises ``Skip`` with the reason.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import tiny
import torch
from recording import CACHE_KEYS

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (models, tensors) are Any.
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    #: keyword arguments for ``generate()`` (tensors, flags, the assistant), as a scenario builds them
    Kwargs = dict[str, Any]
    #: a scenario: (model, assistant, seed) -> the generate() kwargs, or Skip
    Builder = Callable[[Any, Any, int], Kwargs]

MAX_NEW_TOKENS = 6
#: new tokens of the long scenario: enough to cross a length-dependent branch of a tiny config
#: (a sliding window, a rope scaling switch) that the short ones stay below
LONG_NEW_TOKENS = 24

#: stands for the assistant model in saved inputs (each side loads its own copy of the same weights)
ASSISTANT = "<assistant>"
#: saved-input keys that are not generate() kwargs: config attributes set for the scenario's run
#: (on the model's config and generation config, put back afterwards), and the new-token count
CONFIG = "__config__"
NEW_TOKENS = "__new_tokens__"


class Skip(Exception):
    """The scenario does not apply to this model."""


def accepts(model: Any, name: str) -> bool:
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


def decoder_only(model: Any) -> bool:
    return not getattr(model.config, "is_encoder_decoder", False)


def takes_cache_flag(model: Any) -> None:
    if not accepts(model, "use_cache"):
        raise Skip("forward takes no use_cache")


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
    if accepts(model, "token_type_ids") and "input_ids" in inputs:
        extra["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
    return {**inputs, **extra, "assistant_model": ASSISTANT, "do_sample": False}


def inputs_embeds(model: Any, assistant: Any, seed: int) -> Kwargs:
    return _from_embeddings(model, tiny.generation_inputs(model, seed=seed))


def inputs_embeds_padded(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The left-padded batch of two from its embeddings: where the old code refused embeddings, the new code
    must generate what the padded ids generate (positions counted from the mask, not from the ids)."""
    return _from_embeddings(model, tiny.generation_inputs(model, batch_size=2, seed=seed, left_pad=3))


def _from_embeddings(model: Any, inputs: Kwargs) -> Kwargs:
    if not decoder_only(model) or not accepts(model, "inputs_embeds"):
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
    Skip (as many as the scenario: a static cache is sized by them, and Musicgen's fails with fewer than its delay).
    Skip too where no static cache reached a forward: 5.x's generate() ignores ``cache_implementation`` for a model
    with a cache of its own (XLNet's, Reformer's, RWKV's), and the scenario would be greedy decoding called static."""
    trial = copy.deepcopy(model)
    reached: list[bool] = []

    def look(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        reached.extend(_is_static(kwargs[key]) for key in CACHE_KEYS if kwargs.get(key) is not None)

    generating = [module for module in trial.modules() if hasattr(module, "prepare_inputs_for_generation")]
    hooks = [module.register_forward_pre_hook(look, with_kwargs=True) for module in generating]
    try:
        with torch.no_grad():
            trial.generate(**inputs, max_new_tokens=MAX_NEW_TOKENS, min_new_tokens=MAX_NEW_TOKENS)
    except Exception as error:
        raise Skip(f"the model does not generate so: {type(error).__name__}: {str(error)[:120]}") from error
    finally:
        for hook in hooks:
            hook.remove()
    if not any(reached):
        raise Skip("generate() gives the model a cache of its own, not a static one")


#: the static caches of releases whose caches do not say ``is_compileable`` (4.45)
_STATIC_CACHES = ("StaticCache", "HybridCache")


def _is_static(cache: Any) -> bool:
    """Whether ``cache`` (an encoder-decoder's: its self-attention cache) is a static one."""
    said = getattr(cache, "is_compileable", None)
    if isinstance(said, bool):
        return said
    inner = getattr(cache, "self_attention_cache", cache)
    return any(kind.__name__ in _STATIC_CACHES for kind in type(inner).__mro__)


def contrastive(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "penalty_alpha": 0.6, "top_k": 4}


def config_no_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """A config that says ``use_cache=False`` (generate() follows it): an override that did not pass
    ``use_cache`` let the forward read the config, the mixin passes generate()'s flag."""
    takes_cache_flag(model)
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False, CONFIG: {"use_cache": False}}


def config_no_cache_generate_cache(model: Any, assistant: Any, seed: int) -> Kwargs:
    """The reverse: the config says no cache, the caller asks ``generate(use_cache=True)``."""
    takes_cache_flag(model)
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


def long_generation(model: Any, assistant: Any, seed: int) -> Kwargs:
    return {**tiny.generation_inputs(model, seed=seed), "do_sample": False, NEW_TOKENS: LONG_NEW_TOKENS}


def beam_returned(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Beam search that returns both beams of each row (``num_return_sequences=2``): the rows of the batch are
    expanded twice over, and what an override prepares must follow each beam's own ids and mask."""
    return {**beam_search(model, assistant, seed), "num_return_sequences": 2}


def prompt_lookup(model: Any, assistant: Any, seed: int) -> Kwargs:
    """Prompt lookup decoding: candidate tokens copied from the prompt (no assistant model), checked several at a time
    as in assisted decoding, and a prompt whose n-grams repeat so that candidates are found. A random tiny model
    finds them on its first step (the prompt's) and rejects them; later steps get candidates only where its own
    tokens repeat (tests/test_continue_scenarios.py)."""
    inputs = tiny.generation_inputs(model, seed=seed)
    ids = inputs.get("input_ids")
    if ids is None or not torch.is_tensor(ids) or ids.dim() != 2:
        raise Skip("the main input is not input_ids")
    half = ids.shape[1] // 2 + 1
    inputs["input_ids"] = torch.cat([ids[:, :half], ids[:, : ids.shape[1] - half]], 1)  # the prompt repeats itself
    return {**inputs, "prompt_lookup_num_tokens": 2, "do_sample": False}

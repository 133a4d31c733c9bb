"""Generation scenarios, run on one side (old or new code) inside the verification environment.

Runs in the checkout's environment (torch + that release's dependencies, transformers from
PYTHONPATH); imports only the stdlib, torch, transformers, ``tiny`` and the modules beside it. Every
scenario generates with the same seed on both sides and records what comparison needs: the generated
tokens, the scores, and every dict ``prepare_inputs_for_generation`` returned (so a difference can be
named by step and key). A scenario that does not apply to a model is skipped with the reason; one that
raises records the error (the comparison decides whether both sides failed alike).

This module names the scenarios and runs one; their builders are ``decoding_scenarios`` (generate()'s
ways of decoding a prompt) and ``input_scenarios`` (what a caller gives beside it), and what a run
records is ``recording``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tiny
import torch
from decoding_scenarios import (
    ASSISTANT,
    CONFIG,
    MAX_NEW_TOKENS,
    NEW_TOKENS,
    Skip,
    assisted,
    beam_returned,
    beam_search,
    config_no_cache,
    config_no_cache_generate_cache,
    contrastive,
    greedy,
    greedy_no_cache,
    inputs_embeds,
    inputs_embeds_padded,
    left_padded_batch,
    long_generation,
    no_attention_mask,
    prompt_lookup,
    sampling,
    static_cache,
)
from input_scenarios import (
    CONTINUE,
    continue_from_cache,
    decoder_inputs_embeds,
    decoder_prompt,
    encoder_hidden_states,
    encoder_outputs,
    head_masks,
    multimodal,
    multimodal_assisted,
    multimodal_continue,
    multimodal_legacy,
    multimodal_no_cache,
    multimodal_padded,
    position_ids,
    prefilled_cache,
    token_type_ids,
)
from recording import holds_cache, output_flags, outputs, record_calls

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (models, tensors, generate() outputs) are Any.
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    from decoding_scenarios import Builder, Kwargs
    from recording import Call


class BuildFailed(Exception):
    """Building the scenario's inputs failed (on the old side; the new side repeats its message)."""


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


#: the reason a scenario gives when the installed release cannot run it at all (``compare.RELEASE_LACKS``)
RELEASE_LACKS = "the release cannot run it: "
#: what 5.x's generate() raises for a decoding it moved to a Hub repository (contrastive search, ...): "Contrastive
#: Search requires `trust_remote_code=True` in your `generate` call, since it loads https://hf.co/...". An offline run
#: cannot load it: the release's limit, not the code's
_MOVED_TO_HUB = "in your `generate` call, since it loads https://hf.co/"
#: what 5.x's generate() raises for a cache given as tuples of layer pasts, as the old release built the prefilled
#: one: "Passing a tuple of `past_key_values` is not supported anymore. Please use a `Cache` instance."
_NO_TUPLES = "Passing a tuple of `past_key_values` is not supported anymore"
_RELEASE_LIMITS = (_MOVED_TO_HUB, _NO_TUPLES)


def _failure(name: str, error: BaseException, calls: list[Call] | None = None) -> dict[str, Any]:
    if any(limit in str(error) for limit in _RELEASE_LIMITS):
        return {"name": name, "status": "skipped", "reason": RELEASE_LACKS + str(error).split(". ")[0][:200]}
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
                out = model.generate(**kwargs, **lengths(model, kwargs, new_tokens), **output_flags(model))
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


def lengths(model: Any, kwargs: Kwargs, count: int) -> dict[str, int]:
    """``count`` new tokens, no fewer (an end-of-sequence token must not stop one side early): ``min_new_tokens``
    from 4.26 on; before it, ``min_length`` counted what the sequence starts from too (the prompt's ids, or an
    encoder-decoder's start token)."""
    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) >= Version("4.26.0"):
        return {"max_new_tokens": count, "min_new_tokens": count}
    ids: Any = kwargs.get("decoder_input_ids", kwargs.get("input_ids"))
    encoder_decoder = getattr(model.config, "is_encoder_decoder", False)
    start = 1 if encoder_decoder and "decoder_input_ids" not in kwargs else 0
    prompt = ids.shape[-1] if torch.is_tensor(ids) and not (encoder_decoder and start) else start
    return {"max_new_tokens": count, "min_length": prompt + count}


class Continued:
    """What a continued run generated: the second call's sequences, and both calls' scores in order."""

    def __init__(self, sequences: Any, scores: tuple[Any, ...]) -> None:
        self.sequences, self.scores = sequences, scores


def continued(model: Any, kwargs: Kwargs, first_tokens: int, new_tokens: int) -> Continued:
    """Two generate() calls: ``first_tokens`` new tokens with the cache returned, then the rest of ``new_tokens``
    from the returned ids and cache (the encoder's inputs given again to an encoder-decoder, its decoder continuing
    from the returned ids; a decoder-only model's other inputs left to the cache, its mask grown over the ids)."""
    flags = output_flags(model)
    first = model.generate(**kwargs, **lengths(model, kwargs, first_tokens), **flags)
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
    out = model.generate(**second, past_key_values=cache, **lengths(model, second, rest), **flags)
    return Continued(out.sequences, tuple(first.scores or ()) + tuple(out.scores or ()))

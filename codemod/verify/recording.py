"""What a scenario records of a run, on one side inside the verification environment: every dict
``prepare_inputs_for_generation`` returned and what its caller passed (summarised: small tensors in full,
large ones by hash or statistics, caches by type and length), and the tokens and scores generate() returned.

Imports only the stdlib and torch (``tests/test_recording.py`` loads it with a stand-in for torch).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from typing import TYPE_CHECKING, Any

import torch

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (models, tensors, generate() outputs) are Any.
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    #: what :func:`summarize` makes of a value: JSON (scalars, lists, dicts)
    Summary = Any
    #: one dict ``prepare_inputs_for_generation`` returned (or the keys its caller passed), summarised
    Call = dict[str, Summary]

#: tensors up to this many elements are recorded in full (ids, masks, positions, embeddings of a
#: tiny model); larger ones (a cache's states, pixels) by exact hash (integers) or by statistics
#: compared with a tolerance (floats): recording every cache in full made each class's result
#: document megabytes, and its writing and reading most of the verification time
FULL_VALUES = 512

#: the keys a model's cache goes by in prepared inputs: a scenario whose later steps pass one with a
#: value exercised a cache
CACHE_KEYS = ("past_key_values", "cache_params", "mems", "past", "past_key_value", "past_buckets_states", "state")


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

    # 4.2x's can_generate() reads the bound method's __func__ (the recorder shadows it on the instance)
    recorder.__dict__["__func__"] = getattr(original, "__func__", original)
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


def output_flags(model: Any) -> dict[str, bool]:
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

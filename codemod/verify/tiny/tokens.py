"""Special token ids, wherever in a config (and its sub-configs) one is named, and random ids that avoid them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

from .common import TinyModelError, is_int, text_config

if TYPE_CHECKING:
    from .common import ConfigDict

#: the smallest vocabulary: room for random ids that avoid every special token
MIN_VOCAB = 99

#: keys whose value (or values) is a special token id, by suffix
_TOKEN_SUFFIXES = ("token_id", "token_ids", "token_index", "_token")
#: sub-config keys that are not configs of a model part (never recursed into)
NOT_SUBCONFIGS = {
    "rope_scaling",
    "rope_parameters",
    "quantization_config",
    "id2label",
    "label2id",
    "task_specific_params",
    "vocabulary_map",
    "ffn_act_fn",
}


def is_token_key(key: object) -> bool:
    # a key may be a number (4.57's Aria maps image sizes to query counts: {1225: 128, 4900: 256})
    return isinstance(key, str) and key.endswith(_TOKEN_SUFFIXES)


def token_ids(value: Any) -> Iterator[int]:
    if is_int(value):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from token_ids(item)


def is_subconfig(key: object, value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(key, str)
        and key not in NOT_SUBCONFIGS
        and (
            "model_type" in value or key.endswith(("_config", "config")) or key in ("encoder", "decoder", "generator")
        )
    )


def special_token_ids(config: Any) -> set[int]:
    """Every special token id named anywhere in ``config`` (a config object or its dict), sub-configs included."""
    tree = config.to_dict() if hasattr(config, "to_dict") else config
    found: set[int] = set()

    def walk(d: ConfigDict) -> None:
        for key, value in d.items():
            if is_subconfig(key, value) or (isinstance(value, dict) and key not in NOT_SUBCONFIGS):
                walk(value)
            elif is_token_key(key) and not key.startswith("t2u_"):
                found.update(i for i in token_ids(value) if i >= 0)

    walk(tree)
    return found


def vocab_size(model: Any) -> int:
    try:
        embeddings = model.get_input_embeddings()
        if embeddings is not None and hasattr(embeddings, "num_embeddings"):
            return int(embeddings.num_embeddings)
    except Exception:
        pass
    for config in (text_config(model.config), model.config):
        vocab = getattr(config, "vocab_size", None)
        if is_int(vocab):
            return vocab
    raise TinyModelError(f"{type(model).__name__}: no vocabulary size")


def random_ids(
    model: Any, shape: tuple[int, int], generator: torch.Generator, *, vocab: int | None = None
) -> torch.Tensor:
    """Random ids below :data:`MIN_VOCAB` (and the vocabulary size) that are no special token."""
    vocab = vocab or vocab_size(model)
    banned = special_token_ids(model.config) | special_token_ids(model.generation_config.to_dict())
    allowed = torch.tensor([i for i in range(min(vocab, MIN_VOCAB)) if i not in banned])
    if allowed.numel() == 0:
        raise TinyModelError(f"{type(model).__name__}: every id of the vocabulary is special")
    picks = torch.randint(0, allowed.numel(), shape, generator=generator)
    return allowed[picks]

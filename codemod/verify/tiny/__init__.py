"""Tiny random models for any generative transformers class, built from its config class's defaults.

This package runs inside the *verification* environment (torch plus the checkout's dependencies,
with the transformers under test on ``PYTHONPATH``): it imports only the standard library, torch
and transformers, never ``codemod``, and is imported as a top-level package (``codemod/verify`` on
``sys.path``; ``import tiny``). There are no weights and no Hub configs:

- ``shrink``: every size of a config dict made tiny, by tables (:data:`GROUPS`, :data:`SIZES`);
- ``fixups``: what the tables can't express, registered per model type with its reason (:data:`FIXUPS`);
- ``build``: the config rebuilt through its class from what changed, and the model (:func:`tiny_model`);
- ``tokens``: special token ids, and random ids that avoid them;
- ``inputs``: inputs for ``generate()`` (:func:`generation_inputs`);
- ``multimodal``: float main inputs, companion audio, and images (:func:`multimodal_inputs`; the llava family's
  legacy one-token prompts, :func:`legacy_image_inputs`).
What can't be built or run alone raises :class:`TinyModelError` with the reason.
"""

from .build import portable, seed_everything, tiny_config, tiny_model, with_generation_config
from .common import TinyModelError, text_config
from .fixups import FIXUPS
from .inputs import generation_inputs
from .multimodal import legacy_image_inputs, multimodal_inputs
from .shrink import GROUPS, SIZES, scale_sections
from .tokens import random_ids, special_token_ids

__all__ = [
    "TinyModelError",
    "tiny_config",
    "tiny_model",
    "generation_inputs",
    "multimodal_inputs",
    "legacy_image_inputs",
    "special_token_ids",
    "random_ids",
    "seed_everything",
    "with_generation_config",
    "portable",
    "scale_sections",
    "text_config",
    "GROUPS",
    "SIZES",
    "FIXUPS",
]

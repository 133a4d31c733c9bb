"""How one verification run is made: the device, the parallelism, the interpreter, the scenarios, the
time limits, the model's own tests and the releases model code outside transformers runs on.

One frozen object, made once by the command that asks for a run and passed down whole
(``session.verify_change`` → ``runner.verify_targets``), so that a new option is added in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

#: every scenario a verification runs, in the order a class's results report them
DEFAULT_SCENARIOS = (
    "greedy",
    "greedy-no-cache",
    "left-padded-batch",
    "sampling",
    "beam-search",
    "assisted",
    "inputs-embeds",
    "inputs-embeds-padded",
    "static-cache",
    "encoder-outputs",
    "multimodal",
    "multimodal-assisted",
    "multimodal-padded",
    "multimodal-no-cache",
    "multimodal-legacy",
    "contrastive",
    "config-no-cache",
    "config-no-cache-generate-cache",
    "no-attention-mask",
    "token-type-ids",
    "encoder-hidden-states",
    "head-masks",
    "decoder-inputs-embeds",
    "decoder-prompt",
    "position-ids",
    "prefilled-cache",
    "long",
    "beam-search-returned",
    "prompt-lookup",
    "continue-from-cache",
    "multimodal-continue",
)


@dataclasses.dataclass(frozen=True)
class VerifyOptions:
    """``device``: ``cpu`` or ``cuda``; ``jobs``: pairs of workers run in parallel (and own-test runs);
    ``python``: the interpreter whose environment is used (default: the checkout's own); ``timeout``: seconds
    a worker may take over one class; ``own_tests``: also run the model's own generate tests when the checkout
    has them, each run given ``own_tests_timeout`` seconds. For model code outside transformers: the new code
    runs on ``target`` (default ``session.DEFAULT_TREE_TARGET``), the old code on ``from_release`` (default:
    the same), in environments with ``requirements`` besides each release's own pins."""

    device: str = "cpu"
    jobs: int = 1
    python: Path | None = None
    scenarios: Sequence[str] = DEFAULT_SCENARIOS
    timeout: float = 600.0
    own_tests: bool = True
    own_tests_timeout: float = 900.0
    target: str | None = None
    from_release: str | None = None
    requirements: Sequence[str] = ()

"""What the verification workers write, and what ``compare`` makes of it.

The result documents are JSON written by ``worker.py`` (which cannot import this package), typed here
for the parent side; ``Difference``, ``ScenarioOutcome`` and ``ClassVerdict`` are the verdict and its
evidence that the runner returns and the reports show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypedDict

from codemod.contracts import Repair, ScenarioStatus, Verdict, WorkerStatus

#: a value as ``recording.summarize`` recorded it, decoded from JSON: a tensor (``{"tensor": shape,
#: "dtype": ..., "values" | "stats" | "sha256": ...}``), a cache (``{"cache": type, "length": n}``),
#: ``{"dict": {...}}``, ``{"seq": [...]}``, ``{"object": type}`` or a scalar
Summary = Any
#: one dict ``prepare_inputs_for_generation`` returned (or the keys its caller passed), summarised
PreparedCall = dict[str, Summary]


class ScenarioDocument(TypedDict, total=False):
    """One scenario as a worker ran it (``scenarios.run_scenario``; named by ``worker.handle``)."""

    name: str
    status: str  # a WorkerStatus value
    reason: str  # why it was skipped
    error: str
    seconds: float
    variant: str
    calls: list[PreparedCall]
    assistant_calls: list[PreparedCall]
    outer_calls: list[PreparedCall]
    received: list[PreparedCall]
    sequences: list[list[int]]
    scores: list[list[list[float]]] | None
    #: what generate() was given (tensors by shape, flags by value, the config's settings)
    inputs: dict[str, Any]
    cache_used: bool | None
    #: the arguments of the method under test given a value on some step (what the run exercised)
    given: list[str]


#: What a worker wrote for one class on one side (``worker.handle``), or what the runner says in its
#: place (a timeout, a dead worker); ``status`` is a WorkerStatus value.
ResultDocument = TypedDict(
    "ResultDocument",
    {
        "class": str,
        "module": str,
        "mode": str,
        "status": str,
        "error": str,
        "notes": list[str],
        "variants": list[dict[str, Any]],
        "caches": bool,
        "forward_optional": list[str],
        "forward_absorbs": list[str] | None,
        #: scenario -> why the class's own code needs it for an identical verdict (``usage.required_scenarios``)
        "required": dict[str, str],
        "scenarios": list[ScenarioDocument],
        "seconds": float,
    },
    total=False,
)


@dataclasses.dataclass(frozen=True)
class Difference:
    scenario: str
    what: str  # "prepared-inputs", "sequences", "scores", "error"
    step: int | None = None  # index of the prepare_inputs_for_generation call (0 = first forward)
    key: str | None = None
    old: str = ""
    new: str = ""

    def __str__(self) -> str:
        where = f" at step {self.step}" if self.step is not None else ""
        key = f" key {self.key!r}" if self.key else ""
        return f"{self.scenario}: {self.what}{where}{key}: {self.old} -> {self.new}"


@dataclasses.dataclass(frozen=True)
class ScenarioOutcome:
    name: str
    status: ScenarioStatus
    detail: str = ""
    difference: Difference | None = None
    #: how a reduction would prepare what the old code did, when the difference allows one
    repair: Repair | None = None
    #: what generate() was given (tensors by shape, flags by value), as the old side ran it
    inputs: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False)
    #: whether a later step of the old code's run read from a cache (None: not known)
    cache_used: bool | None = None
    variant: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", ScenarioStatus(self.status))


#: a scenario status that fails its class -> the verdict it gives it, in the order they decide (a crash first)
FAILING = {
    ScenarioStatus.CRASHED: Verdict.CRASHED,
    ScenarioStatus.DIFFERS: Verdict.DIFFERS,
    ScenarioStatus.INPUTS_DIFFER: Verdict.INPUTS_DIFFER,
}


def deciding_outcome(outcomes: Sequence[ScenarioOutcome]) -> ScenarioOutcome | None:
    """The first scenario of the failing status that decides a class's verdict (``FAILING``'s order); None when
    none fails."""
    for status in FAILING:
        found = next((o for o in outcomes if o.status is status), None)
        if found is not None:
            return found
    return None


@dataclasses.dataclass(frozen=True)
class ClassVerdict:
    override_id: str
    verdict: Verdict
    scenarios: tuple[ScenarioOutcome, ...] = ()
    detail: str = ""
    seconds: float = 0.0
    #: how the tiny model was made: from the checkout's model tester, or by shrinking the config class
    model: str = ""
    #: the configurations the class ran in (the primary "as-used" one first): name, settings, why
    variants: tuple[dict[str, Any], ...] = ()
    #: a class run because it inherits a changed override: that override's id (its change is what
    #: a failure here reverts)
    inherits_from: str = ""
    #: the method's arguments that a scenario compared as the same gave a value (what the evidence reached)
    given: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdict", Verdict(self.verdict))

    @property
    def changed_override(self) -> str:
        """The override whose change this verdict judges."""
        return self.inherits_from or self.override_id

    @property
    def compared(self) -> tuple[str, ...]:
        """The scenarios that ran on both sides and were compared."""
        return tuple(s.name for s in self.scenarios if s.status.compared)

    @property
    def first_difference(self) -> Difference | None:
        """The difference of the scenario that decided a failing verdict (never an extension's)."""
        deciding = deciding_outcome(self.scenarios)
        return deciding.difference if deciding is not None else None

    @property
    def extended(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scenarios if s.status is ScenarioStatus.EXTENDED)

    def repair(self) -> Repair | None:
        """A reduction that would make every differing scenario prepare what the old code prepared;
        None when some difference is of another kind."""
        differing = [s for s in self.scenarios if s.status in FAILING]
        repairs = [s.repair for s in differing if s.repair is not None]
        if self.verdict not in FAILING.values() or not differing or len(repairs) < len(differing):
            return None
        combined = Repair()
        for repair in repairs:
            combined = combined | repair
        return combined


def status_of(document: ScenarioDocument | ResultDocument) -> WorkerStatus | None:
    """The status a worker wrote into a result document (None when it wrote none)."""
    status = document.get("status")
    return WorkerStatus(status) if status is not None else None

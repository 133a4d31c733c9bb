"""The outcome of a whole migration (scan → plan → apply → verify), per model: what `pr` publishes.

``Migration`` is the boundary between the engine and its publishers (the report, the CI bot): it
says which models changed, in which files, what each class's finding and verdict were, and a hash
of the plan so that a publisher can tell whether anything changed since last time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from codemod.analyse.classify import Action, Category
from codemod.contracts import Held, Verdict

#: the pseudo-model that carries the generic implementation hoisted into a stub ``GenerationMixin``
#: (transformers <= 4.45): every deletion relies on it, so it travels with them
MIXIN_MODEL = "generation"


@dataclasses.dataclass(frozen=True)
class ClassOutcome:
    file: str  # the override's file, relative to the checkout root
    class_name: str
    category: Category
    action: Action
    lines_removed: int
    verdict: Verdict
    scenarios: tuple[str, ...] = ()
    detail: str = ""  # the first difference, or why it is unverified

    def __post_init__(self) -> None:
        object.__setattr__(self, "category", Category(self.category))
        object.__setattr__(self, "action", Action(self.action))
        object.__setattr__(self, "verdict", Verdict(self.verdict))


@dataclasses.dataclass(frozen=True)
class ModelOutcome:
    model: str
    #: files this model's change touches (relative to the checkout root), in a stable order; a file
    #: another model's change also needs (a copy group, a modular family) is listed under both
    files: tuple[str, ...]
    classes: tuple[ClassOutcome, ...]
    #: the model whose change this one lands with: the source of its copy group or modular family
    #: (empty: none but itself); names the pull request they share
    lead: str = ""

    @property
    def lines_removed(self) -> int:
        return sum(c.lines_removed for c in self.classes)


@dataclasses.dataclass(frozen=True)
class Migration:
    #: kept, verified changes, one entry per model, sorted by model name
    models: tuple[ModelOutcome, ...]
    #: the overrides whose change was reverted, with why
    reverted: tuple[Held, ...] = ()

    @property
    def plan_hash(self) -> str:
        """A stable hash of what would be published: files, classes and actions, not timings."""
        payload = [
            (m.model, m.files, [(c.file, c.class_name, c.category, c.action, c.lines_removed) for c in m.classes])
            for m in self.models
        ]
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def model(self, name: str) -> ModelOutcome | None:
        return next((m for m in self.models if m.model == name), None)

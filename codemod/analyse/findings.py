"""What classifying an override produces: its category, the action the tool takes, and the evidence.

A ``Finding`` is what the later stages (the plan, the hooks, the reports, verification) read of the
analysis; ``classify`` makes them. The category says what the override does relative to its fallback
(generic, kwargs-forwarding, bespoke), the action what the tool does with it (delete, reduce, keep),
and its reasons and extras say why and what a reduction must keep producing.
"""

from __future__ import annotations

import dataclasses

from codemod.analyse.index import Override
from codemod.contracts import ExtraHow, ReasonKind, Vocabulary


class Category(Vocabulary):
    GENERIC = "generic"
    KWARGS_FORWARDING = "kwargs-forwarding"
    BESPOKE = "bespoke"


class Action(Vocabulary):
    DELETE = "delete"
    REDUCE = "reduce"
    KEEP = "keep"


@dataclasses.dataclass(frozen=True)
class Reason:
    """One piece of evidence. ``kind``: behaviour, extra, difference, bespoke, unrecognised, evidence, note,
    fallback (what a deletion or super() reaches, when that is not simply the mixin)."""

    kind: ReasonKind
    text: str
    line: int | None = None
    rule: str | None = None  # the recogniser's code, for behaviours
    #: what a ``# Overwritten --`` mark quotes of it: what the fallback lacks (a bespoke behaviour with
    #: a detail), or the statement a reduction keeps as it is (a "kept as is" note)
    subject: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ReasonKind(self.kind))

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.kind}: {self.text}{where}"


@dataclasses.dataclass(frozen=True)
class Extra:
    """A model-specific key that a reduced override must keep producing.

    ``how``: ``first-step`` (the input ``source`` on the first step only), ``later-step``,
    ``constant`` (``source`` is the code), ``drop`` (the key is removed), ``none`` (set to None),
    ``keep-statements`` (the top-level statements, by index in ``source``, that a reduction keeps
    in front of ``super()``), ``swap-delegate`` (the override takes its inputs from a sub-model, ``source``: a reduction asks
    ``super()`` instead and keeps everything else), ``default`` (a default the override gives when the caller passes nothing; ``source`` is its
    code), ``later-step-none`` (set to None after the first step), ``set-none`` (a key the model's forward
    requires, given as None; only from verification's repairs), ``passthrough`` (the parameter ``source``
    as the caller gave it, where the mixin would rebuild it; only from verification's repairs),
    ``sliced`` (cut to the new tokens like the ids), ``adjusted`` (given to the mixin changed).
    """

    key: str
    how: ExtraHow
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "how", ExtraHow(self.how))  # a name outside the vocabulary fails here


@dataclasses.dataclass(frozen=True)
class Finding:
    override: Override
    category: Category
    action: Action
    reasons: tuple[Reason, ...]
    extras: tuple[Extra, ...] = ()
    #: the differences that change what is prepared in the standard generate flow (also listed among the
    #: reasons): a deletion or reduction of such an override is proven only by verification
    flow: tuple[str, ...] = ()

    @property
    def differences(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.kind is ReasonKind.DIFFERENCE)

"""What the miner finds: parts, idioms, hooks, members, clusters, and the report that holds them."""

from __future__ import annotations

import dataclasses

from codemod.analyse.mixin import Era
from codemod.contracts import (
    OverrideId,
)
from codemod.transform.edits import HookCode
from codemod.transform.hooks.vocabulary import Change, HookKind, ValueKind, simple_words


@dataclasses.dataclass(frozen=True)
class Idiom:
    """What a part does to its key: the value (a ``ValueKind``) for each combination of ``atoms`` (the
    first atom the most significant bit of the row number), the atoms it does not depend on left out."""

    atoms: tuple[str, ...]
    table: tuple[ValueKind, ...]

    def describe(self) -> str:
        kinds = set(self.table)
        if len(kinds) == 1:
            return _PHRASE[self.table[0]] + " always"
        parts = []
        for kind in dict.fromkeys(self.table):
            rows = [i for i, value in enumerate(self.table) if value is kind]
            parts.append(f"{_PHRASE[kind]} {simple_words(self.atoms, rows)}")
        return "; ".join(parts)


_PHRASE = {
    ValueKind.NONE: "left out",
    ValueKind.PREPARED: "as the mixin prepares it",
    ValueKind.CALLER: "the caller's value, unsliced",
    ValueKind.CALLER_OR_DEFAULT: "the caller's value or a default",
    ValueKind.CONFIG: "a config attribute",
    ValueKind.LITERAL: "a literal",
    ValueKind.OTHER: "computed by other code",
}


@dataclasses.dataclass(frozen=True)
class Part:
    """One model-specific key of one override, normalised."""

    override: OverrideId
    model: str
    key: str
    idiom: Idiom | None  # None: its value passes through code no rule understands
    #: what the key is set to where the idiom abstracts it (the config attribute, the default's or literal's code)
    argument: str = ""
    #: why the part could not be tabulated (``idiom`` None)
    opaque: str = ""


@dataclasses.dataclass(frozen=True)
class Hook:
    """The mixin change a cluster proposes: the class attribute and the code that reads it."""

    kind: HookKind
    attribute: str
    #: the attribute's declaration on the mixin (with a comment line), 4-space indented at class level
    declaration: str
    #: statements at the start of the mixin's method (before it prepares anything), and before its return
    prologue: str
    epilogue: str
    summary: str

    def code(self) -> HookCode:
        return HookCode(self.attribute, self.declaration, self.prologue, self.epilogue)


@dataclasses.dataclass(frozen=True)
class Member:
    """An override whose class would set the hook's attribute."""

    override: OverrideId
    model: str
    class_name: str
    file: str
    keys: tuple[str, ...]
    #: the attribute as the class sets it (``_generation_dropped_inputs = ("position_ids",)``)
    assignment: str
    change: Change
    why: str = ""  # why it is blocked
    #: TRIM: the top-level statements removed (indices into the method body, the docstring counts)
    removed: tuple[int, ...] = ()
    lines: int = 0  # the override's lines today
    #: TRIM: the parameters that leave the signature with the removed statements (see :class:`MemberChange`)
    unnamed: tuple[str, ...] = ()
    #: DELETE of an override with its own condition (:class:`OwnCondition`): the statements that move into the
    #: class's ``_generation_needs_first_step_inputs`` (indices into the body), and that method without them
    moved: tuple[int, ...] = ()
    method: str = ""
    #: REDUCE of a whole body the hook runs that differs from the hook's code only in how it checks the config
    #: (RoFormer's ``assert`` where BERT raises ``ValueError``): those checks, kept in front of ``super()`` (indices
    #: into the body), so that a config that fails them fails as it did
    guards: tuple[int, ...] = ()

    @property
    def applicable(self) -> bool:
        return self.change is not Change.BLOCKED


@dataclasses.dataclass(frozen=True)
class NearMiss:
    """A part like the cluster's that does not join it."""

    override: OverrideId
    model: str
    key: str
    why: str


@dataclasses.dataclass(frozen=True)
class Cluster:
    name: str  # the hook's attribute (or, for a proposal, a name for it)
    kind: HookKind
    idiom: Idiom | None  # None for repeated statements
    description: str
    hook: Hook | None  # None: a proposal with no template (or statements no rule understands)
    members: tuple[Member, ...]
    near_misses: tuple[NearMiss, ...] = ()
    #: repeated statements: the representative code
    code: str = ""
    #: why the hook is not applied (no template, too few members it can change, no mixin to add it to)
    not_applied: str = ""

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted({m.model for m in self.members}))

    @property
    def applicable_models(self) -> tuple[str, ...]:
        return tuple(sorted({m.model for m in self.members if m.applicable}))

    @property
    def applied(self) -> bool:
        return self.hook is not None and not self.not_applied


@dataclasses.dataclass(frozen=True)
class HookReport:
    """Every cluster of three or more models, in the order: applied hooks first, largest first."""

    clusters: tuple[Cluster, ...]
    era: Era
    #: the mixin file a hook is added to (the checkout's ``generation/utils.py``), None for a tree
    mixin_file: str | None
    #: the hooks go into the generic implementation apply installs first (a ≤ 4.45 stub mixin)
    hoisted: bool
    #: the attributes of the hooks the mixin's method reads already (an earlier ``apply --hooks``)
    in_mixin: frozenset[str] = frozenset()

    def applied(self) -> tuple[Cluster, ...]:
        return tuple(c for c in self.clusters if c.applied)

    def moved_whole(self) -> frozenset[str]:
        """The overrides whose whole body an applied hook runs in the mixin."""
        return frozenset(
            m.override for c in self.applied() if c.kind is HookKind.STATEMENTS for m in c.members if m.applicable
        )

    def whole_body(self, override_id: str) -> Cluster | None:
        """The applied cluster that runs ``override_id``'s whole body in the mixin, if any."""
        return next(
            (
                c
                for c in self.applied()
                if c.kind is HookKind.STATEMENTS and any(m.override == override_id and m.applicable for m in c.members)
            ),
            None,
        )

    def moves_own_condition(self, override_id: str) -> bool:
        """Whether an applied hook moves the override's own condition into a method of its class."""
        return any(m.override == override_id and m.applicable and m.method for c in self.applied() for m in c.members)

    def hooked_keys(self, override_id: str) -> dict[str, Cluster]:
        """Key -> the applied cluster that takes it over, for an override that is an applicable member."""
        out: dict[str, Cluster] = {}
        for cluster in self.applied():
            for member in cluster.members:
                if member.override == override_id and member.applicable:
                    out.update({key: cluster for key in member.keys})
        return out

"""The vocabulary the stages pass each other: closed sets of names, and the id of an override.

At the bottom of the pipeline: every stage may import this module, it imports none of them. Each
set is a ``Vocabulary``, a ``str`` enum that compares, hashes and serialises as its value (the JSON
documents and the golden files stay as they are) and prints as it too, so a misspelt name is an
``AttributeError`` where it is written, not a silent mismatch where it is compared.
"""

from __future__ import annotations

import dataclasses
from enum import Enum


class Vocabulary(str, Enum):
    """A name of a closed set: equal to, and printed as, its value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class ReasonKind(Vocabulary):
    """What a piece of a finding's evidence says."""

    BEHAVIOUR = "behaviour"  # a recognised behaviour the fallback has too
    EXTRA = "extra"  # a model-specific key a reduction keeps
    DIFFERENCE = "difference"  # how the override is only nearly what the fallback does
    BESPOKE = "bespoke"  # something the fallback does not do: the override stays
    UNRECOGNISED = "unrecognised"  # a statement no rule understands: the override stays
    EVIDENCE = "evidence"  # what maintainers said (an ``# Overwritten --`` comment)
    NOTE = "note"  # context that decides nothing
    FALLBACK = "fallback"  # what a deletion or super() reaches

    @property
    def keeps(self) -> bool:
        """Whether a reason of this kind alone keeps the override as it is."""
        return self in (ReasonKind.BESPOKE, ReasonKind.UNRECOGNISED)


class ExtraHow(Vocabulary):
    """How a reduced override re-creates a model-specific key after ``super()`` (``classify.Extra``)."""

    FIRST_STEP = "first-step"  # the input ``source`` on the first step only
    LATER_STEP = "later-step"  # only after the first step
    LATER_STEP_NONE = "later-step-none"  # set to None after the first step
    CONSTANT = "constant"  # always ``source`` (its code)
    NONE = "none"  # set to None
    DROP = "drop"  # removed
    ADJUSTED = "adjusted"  # given the value of another input
    SLICED = "sliced"  # cut to the new tokens like the ids
    DEFAULT = "default"  # ``source`` when the caller passes nothing
    PASSTHROUGH = "passthrough"  # the parameter as the caller gave it (verification's repair)
    PASSTHROUGH_GIVEN = (
        "passthrough-given"  # the parameter as the caller gave it, when it gave one (verification's repair)
    )
    SET_NONE = "set-none"  # None, which the forward requires (verification's repair)
    LAST_TOKEN = (
        "last-token"  # cut to the last token once there is a cache, as the old code did (verification's repair)
    )
    RENAMED = "renamed"  # what the mixin prepared under the key ``source``, under this key (verification's repair)
    NONE_WHEN_GIVEN = "none-when-given"  # None whenever the caller gives it, ``source`` reads the caller's value (verification's repair)
    KEEP_STATEMENTS = "keep-statements"  # top-level statements kept in front of super() (indices in ``source``)
    KEEP_AFTER = (
        "keep-after"  # top-level statements kept after super(), before the keys they compute (indices in ``source``)
    )
    COMPUTED = "computed"  # the override's own value, from statements kept after super(), replaces the fallback's
    CUT = "cut"  # the ids slicing inside a kept statement, which the fallback does itself, left out of it (first lines in
    # ``source``; ``key``: the ids key it no longer sets from them, the fallback's sliced ids standing)
    SWAP_DELEGATE = "swap-delegate"  # super() instead of the sub-model ``source``
    #: not handed to super() (popped from ``**kwargs``): a ``cache_position`` the class's generate() never moves on, which
    #: the fallback then derives from the cache as the override counted it
    WITHHELD = "withheld"


#: the keys and parameter names a model's cache travels under (``past_buckets_states``: Reformer's)
CACHE_NAMES = frozenset({"past_key_values", "cache_params", "mems", "past", "past_key_value", "past_buckets_states"})


class Verdict(Vocabulary):
    """What verification concluded about one class: each word means one thing (the scenarios that extend what the
    old code could do are a list of their own, ``ClassVerdict.extended``, whatever the verdict)."""

    IDENTICAL = "identical"  # every scenario that ran prepared and generated the same
    DIFFERS = "differs"  # other tokens or scores
    CRASHED = "crashed"  # the new code raises where the old code did not (or raises otherwise)
    UNVERIFIED = "unverified"  # the evidence does not decide (the detail says why)
    NO_WORSE = "no-worse"  # across releases (``verify.releases``): identical wherever the target runs the old code
    REPAIRS = "repairs"  # across releases: identical, also where the target breaks the old code
    INPUTS_DIFFER = "inputs-differ"  # the same tokens and scores from other prepared inputs: not identical


class ScenarioStatus(Vocabulary):
    """How one scenario compared on the two sides."""

    SAME = "same"  # prepared and generated the same
    SAME_ERROR = "same-error"  # failed alike on both sides: no evidence
    # failed on both sides, the new code no earlier and preparing the same until the old code failed: the caller
    # gets an exception either way (4.45's Idefics2 told not to cache): no evidence either way
    BOTH_FAIL = "both-fail"
    SKIPPED = "skipped"  # does not apply to the model
    EXTENDED = "extended"  # only the old code failed: the new code generates
    DIFFERS = "differs"  # other tokens or scores
    INPUTS_DIFFER = "inputs-differ"  # the same tokens and scores, other prepared inputs
    CRASHED = "crashed"  # failed on the new side only, or differently
    NO_WORSE = "no-worse"  # across releases: failed or differed, and the old code on the target does the same
    REPAIRS = "repairs"  # across releases: the same as the old release, where the old code on the target is not

    @property
    def compared(self) -> bool:
        """Whether both sides ran it to the end, so that it was compared."""
        return self in (
            ScenarioStatus.SAME,
            ScenarioStatus.DIFFERS,
            ScenarioStatus.INPUTS_DIFFER,
            ScenarioStatus.REPAIRS,
        )


class OverrideId(str):
    """``path::Class``: an override (or a class) of the checkout, by file and class name.

    A ``str`` (dictionary keys, JSON and reports use it as it is) that knows its parts; made with
    :meth:`of` and read back with :meth:`parse` instead of f-strings and ``split("::")``."""

    SEPARATOR = "::"

    @classmethod
    def of(cls, file: str, class_name: str) -> OverrideId:
        return cls(f"{file}{cls.SEPARATOR}{class_name}")

    @classmethod
    def parse(cls, text: str) -> OverrideId:
        if cls.SEPARATOR not in text or not text.rpartition(cls.SEPARATOR)[2]:
            raise ValueError(f"not an override id (path::Class): {text!r}")
        return cls(text)

    @property
    def file(self) -> str:
        return self.rpartition(self.SEPARATOR)[0]

    @property
    def class_name(self) -> str:
        return self.rpartition(self.SEPARATOR)[2]


class HeldCause(Vocabulary):
    """Why a change the findings asked for does not happen (``Held.cause``): each place that holds one back."""

    # the plan (codemod.transform.plan)
    NOT_RECREATABLE = "not-recreatable"  # its extra keys cannot be re-created after super() (a sliced input)
    REFUSED = "refused"  # a soundness check refused the edit
    UNPROVEN = "unproven"  # outside transformers, a change only verification can prove (``Finding.flow``)
    UNTRACED = "untraced"  # a generated file whose method comes from no class this run can edit
    SOURCE_NOT_CHANGED = "source-not-changed"  # generated from code this run does not change
    SOURCE_DISAGREES = "source-disagrees"  # a generated override and its source are classified differently
    COPY_SOURCE_KEEPS = "copy-source-keeps"  # a class-level copy of a class whose method stays
    # settling (codemod.transform.apply): the shard goes
    WOULD_NOT_COMPILE = "would-not-compile"  # a rewritten file would not parse or compile (or not rewrite at all)
    WOULD_ADD_FLAKES = "would-add-flakes"  # a rewrite would add a pyflakes problem
    HOIST_FAILS = "hoist-fails"  # the mixin's file would not take the generic implementation every change needs
    COPY_WOULD_BREAK = "copy-would-break"  # a consistent ``# Copied from`` marker would break
    LONGER = "longer"  # a reduction would leave the method longer than it is
    NOT_A_HOOK_MEMBER = "not-a-hook-member"  # the hook diffs show only the shards of a hook's members
    # verification (codemod.migrate): the change is reverted
    NOT_VERIFIED = "not-verified"  # its class (or one inheriting it) did not verify
    HOOK_TOO_SMALL = "hook-too-small"  # its hook would serve too few models once the failed members go
    WITH_ITS_SHARD = "with-its-shard"  # another member of its shard was reverted
    VERIFIED_ALONE = "verified-alone"  # other classes are verified inside it: its change needs a run of its own
    # publishing (codemod.publish.pr): the model is withheld
    NOT_IDENTICAL = "not-identical"  # a changed class was not verified identical
    SHARES_A_FILE = "shares-a-file"  # it shares a file with a withheld model


@dataclasses.dataclass(frozen=True)
class Held:
    """A change held back (an override the plan keeps, a shard settling drops, a change verification reverts,
    a model ``pr`` withholds): what, why (a cause), and the text the user is shown for it."""

    subject: str  # an override id, a shard id or a model, as the record's owner says
    cause: HeldCause
    detail: str


class ValueOrigin(Vocabulary):
    """Where a value in the prepared dict (or a local name) comes from, as the recognisers see it."""

    IDS = "ids"  # the input ids (the name says how they were sliced, if at all)
    PARAM = "param"  # a parameter or a key read from ``**kwargs``, unchanged (the name)
    PARAM_DEFAULT = "param-default"  # a key read from ``**kwargs`` with a default (name: ``key=default``)
    BEHAVIOUR = "behaviour"  # computed by a recognised behaviour (name: the behaviour)
    NONE = "none"  # None (name: the step it is None on, if only one)
    CONST = "const"  # a literal (name: its code)
    FIRST_STEP = "first-step"  # the parameter named on the first step, None afterwards
    LATER_STEP = "later-step"  # the parameter named only after the first step
    KEY = "key"  # a key name picked by model type (``decoder_...`` for encoder-decoders)
    EXPR = "expr"  # anything else (name: its code): the engine cannot vouch for it
    DROPPED = "dropped"  # the key is removed from the prepared dict here


@dataclasses.dataclass(frozen=True)
class Value:
    """Where a value comes from: an origin, and what it names (a parameter, a behaviour, code)."""

    origin: ValueOrigin
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "origin", ValueOrigin(self.origin))

    def __str__(self) -> str:
        return f"{self.origin}:{self.name}" if self.name else str(self.origin)


class CopyStatus(Vocabulary):
    """Whether a ``# Copied from`` marker still holds (as ``utils/check_copies.py`` would say)."""

    CONSISTENT = "consistent"
    STALE = "stale"  # the target exists, the copy drifted
    BROKEN = "broken"  # the target cannot be found
    UNRESOLVED = "unresolved"  # the marker names something outside what can be read


class CopyScope(Vocabulary):
    """Where a ``# Copied from`` marker that covers an override stands."""

    METHOD = "method"  # above the def
    CLASS = "class"  # above the owning class: the class is a copy, its method with it


class OriginKind(Vocabulary):
    """Where a generated file's method really comes from (its modular source)."""

    MODULAR_CLASS = "modular-class"  # the modular class defines it: edit there
    INHERITED = "inherited"  # the converter copies it from a parent
    REMOVED = "removed"  # a ``raise …Error`` stub drops it
    UNKNOWN = "unknown"


class ParamKind(Vocabulary):
    POSITIONAL = "positional"
    KEYWORD_ONLY = "keyword-only"
    VAR_ARGS = "*args"
    VAR_KEYWORDS = "**kwargs"

    @property
    def named(self) -> bool:
        """A parameter with a name of its own (not ``*args`` or ``**kwargs``)."""
        return self in (ParamKind.POSITIONAL, ParamKind.KEYWORD_ONLY)


class WorkerStatus(Vocabulary):
    """What a verification worker's answer says (the worker runs elsewhere and writes these strings)."""

    OK = "ok"
    ERROR = "error"  # a scenario that raised
    SKIPPED = "skipped"  # a scenario that does not apply
    UNBUILDABLE = "unbuildable"
    IMPORT_ERROR = "import-error"
    WORKER_ERROR = "worker-error"
    TIMEOUT = "timeout"
    NOT_RUN = "not-run"


@dataclasses.dataclass(frozen=True)
class Repair:
    """How a reduced override (``super()`` plus these fixes) would prepare what the old code prepared:
    the keys to remove, the keys to pass as None when nothing else gave them a value (the old code
    passed None, the mixin leaves them out, and a forward may require them), the keys the old
    code passed that the reduction must keep passing (its parameters, handed to ``super()``), and
    the keys the old code passed on exactly as the caller gave them where the mixin rebuilds them
    (a static cache's 4D mask from the 2D one): the reduction sets them back to its parameter (only
    when the caller gave one, where a later round finds the same key also in ``keep``: Jamba passes
    the caller's positions unsliced, and builds its own when given none); and
    the ids the old code cut to the last token where the mixin keeps every uncached one (assisted
    decoding's candidates): the reduction cuts them again; and the keys the old code passed a value
    under that the mixin prepares under another (``renamed``: (old key, the mixin's key)), which the
    reduction moves; and the keys the old code named but passed as None whenever the caller gave
    them (``none_when_given``: GPT-2 ignored a caller's ``position_ids``), which the reduction sets
    to None under the same test; and ``uncut``: the ids slicing a reduction left to the mixin (``ExtraHow.CUT``)
    goes back into the statements it kept, where verification found the reduction without it different; and
    ``ungiven``: the keys the old code named as None where the caller gave none and the mixin fills in (its mask of
    ones, for GPT-2 asked by a wrapper without one): the reduction passes them on as the caller gives them, unless a
    scenario removes them."""

    remove: tuple[str, ...] = ()
    set_none: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    passthrough: tuple[str, ...] = ()
    last_token: tuple[str, ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()
    none_when_given: tuple[str, ...] = ()
    uncut: bool = False
    ungiven: tuple[str, ...] = ()

    def __or__(self, other: Repair) -> Repair:
        def union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(sorted(set(a) | set(b)))

        return Repair(
            union(self.remove, other.remove),
            union(self.set_none, other.set_none),
            union(self.keep, other.keep),
            union(self.passthrough, other.passthrough),
            union(self.last_token, other.last_token),
            tuple(sorted(set(self.renamed) | set(other.renamed))),
            union(self.none_when_given, other.none_when_given),
            self.uncut or other.uncut,
            union(self.ungiven, other.ungiven),
        )

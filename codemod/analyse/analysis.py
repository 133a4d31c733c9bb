"""What a ``prepare_inputs_for_generation`` body does, as recognised (the data, no parser).

Kept apart from the recogniser engine (``codemod.analyse.recognise``) so that cached results load without
importing libcst and the rules.
"""

from __future__ import annotations

import dataclasses

from codemod.contracts import ParamKind, Value, ValueOrigin, Vocabulary

#: the value of an ``OutputKey`` that records the removal of the key
DROPPED = Value(ValueOrigin.DROPPED)


class Delegation(Vocabulary):
    """Whose ``prepare_inputs_for_generation`` a body takes its result from."""

    #: ``super().prepare_inputs_for_generation`` (or ``GenerationMixin.prepare_inputs_for_generation(self, …)``)
    SUPER = "super"
    #: a sub-model's method, ``self.language_model.prepare_inputs_for_generation``
    SUBMODEL = "sub-model"
    #: a bound method stored on the instance (peft's ``self.base_model_prepare_inputs_for_generation``):
    #: what it is bound to is only known at run time
    STORED_METHOD = "stored-method"


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    kind: ParamKind
    default: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ParamKind(self.kind))


@dataclasses.dataclass(frozen=True)
class Nested:
    """Where a recognised run of statements stands inside a top-level statement of the body, for a reduction that
    keeps that statement but not what the fallback does inside it (Jamba's slicing in the branch of the ``if`` that
    also makes its cache)."""

    #: the top-level statement's index in the body, then ``body`` or ``orelse`` and the index in that block, down to
    #: the run's first statement (``(2, "body", 0)``: the first statement in the body of the third statement)
    path: tuple[int | str, ...]
    count: int  # statements in the run
    writes: tuple[str, ...]  # the names the run assigns
    #: of those, the ones the top-level statement reads after the run (for more than their device or dtype)
    read_after: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Recognised:
    code: str
    behaviour: str
    kind: str
    line: int
    end_line: int
    detail: str = ""
    facets: tuple[tuple[str, str], ...] = ()
    #: inside a top-level statement (not one itself): where, for a reduction that keeps the statement without it
    nested: Nested | None = None

    def facet(self, name: str) -> str | None:
        return dict(self.facets).get(name)


@dataclasses.dataclass(frozen=True)
class Unrecognised:
    line: int
    end_line: int
    code: str  # normalised: one line, no layout (for messages and comparisons)
    #: the statement as written (the blank and comment lines above it, its layout; at column 0): for code that moves
    source: str = ""


@dataclasses.dataclass(frozen=True)
class OutputKey:
    """One assignment of a key of the returned dict."""

    key: str
    value: Value
    line: int
    guards: tuple[str, ...] = ()
    via_kwargs: bool = False  # set in **kwargs before a delegated call
    expr: str = ""  # the value's expression as written (for rewriting it elsewhere)
    conditions: tuple[str, ...] = ()  # the enclosing ``if`` tests as written (``not (…)`` in an else)


@dataclasses.dataclass(frozen=True)
class TopLevel:
    """One statement of the method's body (not nested), for reductions that keep some of them."""

    index: int  # position in the body (the docstring counts)
    line: int
    recognised: bool  # every part of it was claimed by a rule
    builds_output: bool  # it puts keys into (or creates, or returns) the output dict, or delegates
    returns: bool
    reads: tuple[str, ...]  # names it reads
    writes: tuple[str, ...]  # names it assigns
    end_line: int = 0
    #: the names it reads before it (surely) assigns them itself: what it takes from the statements before it
    exposed: tuple[str, ...] = ()
    #: of those, the ones it reads only for where they live (``input_ids.device``, ``.dtype``): a slicing before it
    #: changes nothing it reads of them
    placement_reads: tuple[str, ...] = ()
    #: the names whose object it may change or hand on, not only read: a method of it called, it passed to a call,
    #: stored into (``x[...] = ``, ``x.a = ``, ``x += ``) or deleted (``touched``)
    touched: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class BodyAnalysis:
    params: tuple[Param, ...]
    recognised: tuple[Recognised, ...]
    unrecognised: tuple[Unrecognised, ...]
    outputs: tuple[OutputKey, ...]
    dropped: tuple[str, ...]
    #: every keyword argument not listed reaches the model (``**kwargs`` forwarded, or ``super()``)
    forwards_kwargs: bool
    #: "super" when the result comes from ``super().prepare_inputs_for_generation``, or the
    #: sub-model attribute it comes from (``self.language_model``); None when built here
    delegates_to: str | None
    #: parameters a delegated call is not given (they reach the model only if added back)
    withheld: tuple[str, ...] = ()
    #: the body's statements, top level only, in order (inert ones left out)
    top_level: tuple[TopLevel, ...] = ()
    #: what ``delegates_to`` is
    delegation: Delegation | None = None

    @property
    def behaviours(self) -> frozenset[str]:
        return frozenset(r.behaviour for r in self.recognised)

    @property
    def ids_param(self) -> str | None:
        """The name the method takes the ids under: its first positional parameter after ``self``."""
        return next((p.name for p in self.params if p.kind is ParamKind.POSITIONAL and p.name != "self"), None)

    def output_values(self) -> dict[str, Value]:
        """The final value of each output key, merging assignments on different steps.

        A key set to a parameter on the first step and to ``None`` on later ones (in either
        order) is that first-step value; otherwise the last assignment wins.
        """
        merged: dict[str, Value] = {}
        for out in self.outputs:
            if out.value.origin is ValueOrigin.DROPPED:
                merged.pop(out.key, None)
                continue
            previous = merged.get(out.key)
            if previous is not None and {previous.origin, out.value.origin} == {
                ValueOrigin.FIRST_STEP,
                ValueOrigin.NONE,
            }:
                merged[out.key] = previous if previous.origin is ValueOrigin.FIRST_STEP else out.value
            else:
                merged[out.key] = out.value
        return merged

"""The words of the miner: what a hook does, what a part's value is, the conditions it may depend on, and
how those conditions are spelt in words and in the mixin's code.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from codemod.analyse.mixin import Era
from codemod.contracts import (
    Vocabulary,
)

#: a hook is proposed where at least this many models share an idiom
MIN_MODELS = 3


#: the mixin's method a model overrides with the statements that compute its own condition (``Atom.OWN``), and the
#: local the mixin keeps its answer in
NEEDS_METHOD = "_generation_needs_first_step_inputs"


NEEDED_LOCAL = "first_step_inputs_needed"


#: a part whose value depends on more conditions than this is not tabulated (nothing real comes close)
MAX_ATOMS = 4


class HookKind(Vocabulary):
    """What a mined hook does to the inputs a model names in its class attribute."""

    DROPPED = "dropped"  # left out, always (the model's forward builds them itself)
    DROPPED_WHEN = "dropped-when"  # left out when a step condition holds (after the first step / prefill)
    UNSLICED_WHEN = "unsliced-when"  # the caller's value, unsliced, while a condition holds; None otherwise
    NONE_WHEN_GIVEN = "none-when-given"  # None where the caller gives it; as the mixin prepares it otherwise
    FROM_CONFIG = "from-config"  # a config attribute
    DEFAULT = "default"  # a default when the caller gives none
    CONSTANT = "constant"  # a literal
    STATEMENTS = "statements"  # repeated statements no rule understands: applied only as whole bodies
    OTHER = "other"  # an idiom with no template: a proposal


class ValueKind(Vocabulary):
    """The value a part's key ends with, for one combination of its conditions."""

    NONE = "none"  # None, or left out: the model's forward sees None either way
    PREPARED = "prepared"  # what the fallback prepared (for a key it does not handle: the caller's value)
    CALLER = "caller"  # the caller's value as given, where the fallback would prepare another (sliced)
    CALLER_OR_DEFAULT = "caller-or-default"  # the caller's value, or a default when none is given
    CONFIG = "config"  # ``self.config.<attribute>``
    LITERAL = "literal"  # a literal
    OTHER = "other"  # any other code


class Atom(Vocabulary):
    """The conditions a part may depend on that mean the same in every model."""

    FIRST = "first-step"  # ``is_first_iteration`` (5.x), ``cache_position[0] == 0`` (cache-position era)
    USE_CACHE = "use-cache"  # ``use_cache`` (a parameter, or read from ``**kwargs``)
    NO_PAST = "no-cache-yet"  # ``past_key_values is None``
    GIVEN = "given"  # the caller gave the input (``<input> is not None``)
    #: a condition the override computes itself, in front of ``super()``, from its arguments and the config
    #: (4.45's llava family: ``legacy_processing``, a prompt with fewer image tokens than the image has features):
    #: a hook on it asks the model's ``_generation_needs_first_step_inputs``, where those statements move
    OWN = "own-condition"


class Change(Vocabulary):
    """What happens to a member's override when its class takes the hook."""

    DELETE = "delete"  # nothing model-specific is left
    REDUCE = "reduce"  # super() and what is left (an override that builds its own dict)
    TRIM = "trim"  # the statements the hook takes over removed; the rest stays
    BLOCKED = "blocked"  # not changed: ``why``


def _condition_words(atoms: Sequence[str], rows: Iterable[int]) -> str:
    words = {
        Atom.FIRST.value: "on the first step",
        Atom.USE_CACHE.value: "with a cache",
        Atom.NO_PAST.value: "before there is a cache",
        Atom.GIVEN.value: "the caller gives it",
        Atom.OWN.value: "the model needs them",
    }
    negated = {
        Atom.FIRST.value: "after the first step",
        Atom.USE_CACHE.value: "without a cache",
        Atom.NO_PAST.value: "once there is a cache",
        Atom.GIVEN.value: "the caller gives none",
        Atom.OWN.value: "the model does not need them",
    }
    terms = []
    for row in rows:
        literals = []
        for position, atom in enumerate(atoms):
            on = bool(row >> (len(atoms) - 1 - position) & 1)
            literals.append((words if on else negated).get(atom, f"{'' if on else 'not '}{atom}"))
        terms.append(" and ".join(literals) or "always")
    return " or ".join(terms)


def spelling_of(era: Era, kwargs: str, params: Iterable[str] = ()) -> dict[str, tuple[str, str]]:
    """How the mixin of ``era`` spells each atom, and its negation (``use_cache`` as its parameter, where it
    names one, else read from ``**kwargs`` with generate()'s default, as the 5.x mixin reads it)."""
    first = (
        ("is_first_iteration", "not is_first_iteration")
        if era is Era.NEXT_SEQUENCE_LENGTH
        else ("cache_position[0] == 0", "cache_position[0] != 0")
    )
    use_cache = "use_cache" if "use_cache" in set(params) else f'{kwargs}.get("use_cache", True)'
    return {
        Atom.FIRST.value: first,
        Atom.USE_CACHE.value: (use_cache, f"not {use_cache}"),
        Atom.NO_PAST.value: ("past_key_values is None", "past_key_values is not None"),
        Atom.OWN.value: (NEEDED_LOCAL, f"not {NEEDED_LOCAL}"),
    }


def condition_code(atoms: Sequence[str], rows: Sequence[int], spelling: Mapping[str, tuple[str, str]]) -> str | None:
    """Python for "the row is one of ``rows``", as short as a person would write it (one literal, a
    conjunction, a disjunction, or else every row spelt out); None when an atom has no spelling."""
    if any(atom not in spelling for atom in atoms):
        return None
    size = 1 << len(atoms)
    chosen = set(rows)

    def literal(position: int, on: bool) -> str:
        return spelling[atoms[position]][0 if on else 1]

    def bit(row: int, position: int) -> bool:
        return bool(row >> (len(atoms) - 1 - position) & 1)

    # a conjunction of literals
    for signs in itertools.product((None, False, True), repeat=len(atoms)):
        if all(s is None for s in signs):
            continue
        covered = {row for row in range(size) if all(s is None or bit(row, p) is s for p, s in enumerate(signs))}
        if covered == chosen:
            return " and ".join(literal(p, s) for p, s in enumerate(signs) if s is not None)
    # a disjunction of literals
    for signs in itertools.product((None, False, True), repeat=len(atoms)):
        if all(s is None for s in signs):
            continue
        covered = {row for row in range(size) if any(s is not None and bit(row, p) is s for p, s in enumerate(signs))}
        if covered == chosen:
            return " or ".join(literal(p, s) for p, s in enumerate(signs) if s is not None)
    terms = ["(" + " and ".join(literal(p, bit(row, p)) for p in range(len(atoms))) + ")" for row in sorted(chosen)]
    return " or ".join(terms)


def simple_words(atoms: Sequence[str], rows: Sequence[int]) -> str:
    spelling = {
        Atom.FIRST.value: ("on the first step", "after the first step"),
        Atom.USE_CACHE.value: ("with a cache", "without a cache"),
        Atom.NO_PAST.value: ("before there is a cache", "once there is a cache"),
        Atom.OWN.value: ("the model needs them", "the model does not need them"),
    }
    words = condition_code(atoms, rows, spelling) or _condition_words(atoms, rows)
    return words.replace(" and the model does not need them", " unless the model needs them")

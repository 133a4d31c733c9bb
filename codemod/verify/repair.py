"""Repairs: how a reduction would make the new code prepare what the old code did.

Where a scenario differs only by whole keys (a key the new code adds, one it leaves out, one it builds
where the old code passed the caller's value on, ...), the difference suggests a reduction that would
remove it; the migration applies it and verification runs again to test that hypothesis. Pure: reads
the scenario documents the workers wrote.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence

from codemod.contracts import CACHE_NAMES, Repair, WorkerStatus
from codemod.verify.documents import (
    PreparedCall,
    ResultDocument,
    ScenarioDocument,
    ScenarioOutcome,
    Summary,
    status_of,
)
from codemod.verify.values import same_call, same_summary


def repair_for(
    old_calls: Sequence[PreparedCall],
    new_calls: Sequence[PreparedCall],
    *,
    crashed: bool,
    received: Sequence[PreparedCall] = (),
    received_new: Sequence[PreparedCall] | None = None,
    suspects: frozenset[str] | None = None,
    optional: frozenset[str] = frozenset(),
) -> Repair | None:
    """The reduction that would make the new calls what the old ones were, where whole keys differ first; None
    where nothing below explains the first difference. Calls are compared in order up to the first step where keys
    differ (later steps may differ as its consequence): a hypothesis that re-verification tests.

    - ``remove``: keys the new code adds;
    - ``keep``: keys the old code passed that the new one leaves out (a reduction passes its parameters on);
    - ``passthrough``: keys the old code passed on as the caller gave them (``received``, per old call) where the
      new code, given the same (``received_new``), builds other values; never a cache, which the mixin hands on
      as it gets it (a cache that differs follows from another difference);
    - ``last_token``: keys the old code cut to the last of the tokens the new code passes;
    - ``renamed``: the same value under another key;
    - ``ignored``: keys the old code named but passed as None whenever the caller gave them (None again then);
    - ``ungiven``: keys the old code named as None where the caller gave none and the new code fills in;
    - ``set_none``: where the new side ``crashed``, keys the old code passed as None on every step.

    ``suspects``: where the crash names the keys a forward refused, only those of the keys the new code passes as
    None are removed. ``optional`` (made in ``compare``): keys whose None is never a cause (a parameter of
    ``forward`` that defaults to None, or a key it takes only in ``**kwargs`` where the old code passed one)."""
    found = _Keys()
    for step, (a, b) in enumerate(zip(old_calls, new_calls, strict=False)):
        given = received[step] if step < len(received) else {}
        given_new = received_new[step] if received_new is not None and step < len(received_new) else given
        extra = {k for k, v in b.items() if v is not None and a.get(k) is None}
        unheeded = _unheeded(extra, given, old_calls, received)
        # a key the old code named as None where the caller gave none, and the new code fills in (the mixin's mask of
        # ones for GPT-2 asked by a wrapper without one): passed on as the caller gives it, None here. Where a caller
        # gives it, the old code passing it on is what the mixin does (no difference there); where it did not, that
        # scenario removes it (a removal wins, see ``Repair``)
        named_none = {
            k
            for k in extra
            if step < len(received) and k in a and k not in given and k not in CACHE_NAMES and not crashed
        }
        if crashed:
            # a None the old code never passed can still crash a forward that does not take the key
            extra |= {k for k in b if k not in a and (suspects is None or k in suspects) and k not in optional}
        missing = {k for k, v in a.items() if v is not None and b.get(k) is None}
        passed = _passed_as_given(a, b, given, given_new)
        cut = {k for k, v in a.items() if k in b and k not in passed and _last_token_of(v, b[k])}
        # the same value under another key (an encoder-decoder key the mixin names by the config)
        moved = {(k, n) for k in missing for n in extra if b[n] is not None and same_summary(a[k], b[n])}
        missing -= {k for k, _ in moved}
        extra -= {n for _, n in moved}
        trimmed_a = {k: v for k, v in a.items() if k not in missing | passed | cut | {k for k, _ in moved}}
        if not same_call(
            trimmed_a, {k: v for k, v in b.items() if k not in extra | passed | cut | {n for _, n in moved}}
        ):
            # Values differ from here on. If whole keys differed before, this may be their
            # consequence (other tokens generated): the repair is what differed up to here, and
            # verification runs again to confirm it. Otherwise keys cannot explain it.
            break
        found.remove |= extra - unheeded - named_none
        found.ignored |= unheeded
        found.ungiven |= named_none
        found.keep |= missing
        found.passthrough |= passed
        found.last_token |= cut
        found.renamed |= moved
        if crashed:
            found.nones |= {k for k, v in a.items() if v is None and k not in b and k not in optional}
        if extra or missing or passed or cut or moved:
            # what differs on later steps may follow from these (a cache the model now keeps, other ids): a
            # repair that leaves a difference is verified again, and that round finds the next one
            break
    return found.repair(old_calls)


def _unheeded(
    extra: set[str], given: PreparedCall, old_calls: Sequence[PreparedCall], received: Sequence[PreparedCall]
) -> set[str]:
    """The keys the new code adds that the old code named but passed as None on every call the caller gave them
    (GPT-2's positions): None again under the same test, not removed (its own value, when the caller gives none,
    is the mixin's)."""
    return {
        k
        for k in extra
        if k in given
        and k not in CACHE_NAMES
        and all(call.get(k) is None for call, got in zip(old_calls, received, strict=False) if k in got)
    }


@dataclasses.dataclass
class _Keys:
    """The keys a repair changes, gathered step by step (see ``Repair`` for what each does)."""

    remove: set[str] = dataclasses.field(default_factory=set)
    keep: set[str] = dataclasses.field(default_factory=set)
    nones: set[str] = dataclasses.field(default_factory=set)
    passthrough: set[str] = dataclasses.field(default_factory=set)
    ungiven: set[str] = dataclasses.field(default_factory=set)
    last_token: set[str] = dataclasses.field(default_factory=set)
    renamed: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    ignored: set[str] = dataclasses.field(default_factory=set)

    def repair(self, old_calls: Sequence[PreparedCall]) -> Repair | None:
        # only keys the old code passed as None on every step (setting a cache to None would be a change)
        nones = {k for k in self.nones if all(k in a and a[k] is None for a in old_calls)}
        if not (
            self.remove
            or self.keep
            or nones
            or self.passthrough
            or self.last_token
            or self.renamed
            or self.ignored
            or self.ungiven
        ):
            return None
        return Repair(
            tuple(sorted(self.remove)),
            tuple(sorted(nones)),
            tuple(sorted(self.keep)),
            tuple(sorted(self.passthrough)),
            tuple(sorted(self.last_token)),
            tuple(sorted(self.renamed)),
            tuple(sorted(self.ignored)),
            ungiven=tuple(sorted(self.ungiven)),
        )


def _passed_as_given(a: PreparedCall, b: PreparedCall, given: PreparedCall, given_new: PreparedCall) -> set[str]:
    """The keys the old call passed on exactly as the caller gave them where the new call, given the same, has
    another value (never a cache: the mixin hands it on as it gets it)."""
    return {
        k
        for k, v in a.items()
        if v is not None
        and k in given
        and k in b
        and same_summary(v, given[k])
        and not same_summary(v, b[k])
        # given other ids (other tokens generated), the new code's other value is a consequence
        and k in given_new
        and same_summary(given[k], given_new[k])
        and k not in CACHE_NAMES
    }


def _last_token_of(old: Summary, new: Summary) -> bool:
    """Whether ``old`` is ``new`` cut to its last token: (batch, 1) where ``new`` is (batch, k > 1)
    with the same last column, as an override that keeps ``[:, -1:]`` passes assisted decoding's
    candidates. Only tensors recorded in full can tell."""
    if not (isinstance(old, dict) and isinstance(new, dict) and "values" in old and "values" in new):
        return False
    shape, wider = old.get("tensor"), new.get("tensor")
    if old.get("dtype") != new.get("dtype") or not (isinstance(shape, list) and isinstance(wider, list)):
        return False
    if len(shape) != 2 or len(wider) != 2 or shape[0] != wider[0] or shape[1] != 1 or wider[1] < 2:
        return False
    width = wider[1]
    return bool(old["values"] == [new["values"][row * width + width - 1] for row in range(shape[0])])


def scenario_repair(
    old: ScenarioDocument, new: ScenarioDocument, *, crashed: bool, optional: frozenset[str] = frozenset()
) -> Repair | None:
    """The repair over the main model's calls and the assistant's (the same class): where the
    assistant's inputs differ by whole keys, the main model's later differences may follow from the
    other candidates it proposed, and re-verification tests that."""
    error = new.get("error", "") if crashed else ""
    # The forward may say which keys it refused (passed as None by the new code) or could not do without (passed as
    # None by the old one); where the old code failed too, a None did not keep it running: nothing else is suspected.
    refused, required = arguments_named(error, UNEXPECTED), arguments_named(error, _MISSING)
    old_failed = status_of(old) is WorkerStatus.ERROR
    suspects = frozenset(refused) if refused or old_failed else None
    main = repair_for(
        old.get("calls", []),
        new.get("calls", []),
        crashed=crashed,
        received=old.get("received", []),
        received_new=new.get("received", []),
        suspects=suspects,
        optional=optional,
    )
    helper = repair_for(
        old.get("assistant_calls", []),
        new.get("assistant_calls", []),
        crashed=crashed,
        suspects=suspects,
        optional=optional,
    )
    repair = main | helper if main is not None and helper is not None else main or helper
    if repair is not None and (required & set(repair.set_none) or old_failed):
        repair = dataclasses.replace(repair, set_none=tuple(k for k in repair.set_none if k in required))
    return repair


_MISSING = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.*)")
UNEXPECTED = re.compile(r"got an unexpected keyword argument (.*)")


def arguments_named(error: str, pattern: re.Pattern[str]) -> set[str]:
    """The parameters a ``TypeError`` names: those a call lacked (``forward() missing 1 required
    positional argument: 'input_ids'``) or those it refused (``got an unexpected keyword argument
    'head_mask'``); empty for any other error."""
    found = pattern.search(error.splitlines()[0] if error else "")
    return set(re.findall(r"'(\w+)'", found.group(1))) if found else set()


def prepared_calls(scenarios: Sequence[ScenarioDocument]) -> Iterator[PreparedCall]:
    """Every call of the method under test the scenarios recorded: the main model's and the assistant's (the same
    class), the calls repairs are read from."""
    for scenario in scenarios:
        yield from scenario.get("calls", [])
        yield from scenario.get("assistant_calls", [])


def scoped_repairs(
    outcomes: list[ScenarioOutcome], old_scenarios: Sequence[ScenarioDocument]
) -> list[ScenarioOutcome]:
    """A key one scenario saw as None on every step (no cache, say) may carry a value in another
    (a cache): the class's repair must not set it to None. A repair is one reduction for every
    scenario, so set-none keeps only keys the old code never passed a value for."""
    passed = {key for call in prepared_calls(old_scenarios) for key, value in call.items() if value is not None}
    return [
        dataclasses.replace(
            o, repair=dataclasses.replace(o.repair, set_none=tuple(k for k in o.repair.set_none if k not in passed))
        )
        if o.repair is not None and passed & set(o.repair.set_none)
        else o
        for o in outcomes
    ]


def absorbed_nones(old: ResultDocument) -> frozenset[str]:
    """The keys the old code passed as None that ``forward`` does not name but takes in its ``**kwargs``
    (``forward_absorbs``): the new code leaving such a None out leaves it out of ``**kwargs``, which neither the
    prepared-inputs comparison (None is absent) nor a forward's required parameters can tell, so a repair never
    sets it again (SeamlessM4T's ``"input_ids": None``, which its forward takes in ``**kwargs`` and ignores). Only
    keys the old code passed: a None the new code adds may still be handed on from ``**kwargs`` to a module that
    refuses it."""
    named = old.get("forward_absorbs")
    if named is None:
        return frozenset()
    nones = {key for call in prepared_calls(old.get("scenarios", [])) for key, value in call.items() if value is None}
    return frozenset(nones - set(named))

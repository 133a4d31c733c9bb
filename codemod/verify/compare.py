"""Compare what the old and the new code did, scenario by scenario: a verdict per class, with evidence.

Pure: a function of the two sides' result documents (written by ``worker.py``).

- **identical**: every scenario that ran prepared the same inputs at every step (a key set to None
  is the same as a key left out) and generated the same tokens with the same scores (within a tight
  tolerance); scenarios that failed the same way on both sides do not count as evidence, nor do
  those where only the old code failed (an override that kept only the last token crashing in assisted
  decoding) and the new code generates what greedy decoding does: nothing that worked before behaves
  differently, the new code *extends* the model, and the report says where. Not embeddings that
  ``generate`` refused by the override's signature: that refusal is kept (code outside ``generate``
  reads the signature too);
- **differs**: some scenario prepared or generated something else; the evidence names the first
  differing ``prepare_inputs_for_generation`` call (step) and key;
- **crashed**: a scenario failed on the new side only, or on both where the new code failed earlier or
  prepared something else before the old code failed (where it prepared the same up to there and failed no
  earlier, the caller gets an exception either way: like a same failure, it is no evidence);
- **unverified**: the old side could not build or run the model, or no scenario ran at all.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypedDict

from codemod.contracts import CACHE_NAMES, Repair, ScenarioStatus, Verdict, WorkerStatus

RTOL = 1e-4
ATOL = 1e-5

# ----------------------------------------------------------------------------- the workers' documents

#: a value as ``scenarios.summarize`` recorded it, decoded from JSON: a tensor (``{"tensor": shape,
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
        return next(
            (s.difference for s in self.scenarios if s.difference is not None and s.status is not ScenarioStatus.SAME),
            None,
        )

    @property
    def extended(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.scenarios if s.status is ScenarioStatus.EXTENDED)

    def repair(self) -> Repair | None:
        """A reduction that would make every differing scenario prepare what the old code prepared;
        None when some difference is of another kind."""
        failed = (ScenarioStatus.DIFFERS, ScenarioStatus.CRASHED)
        differing = [s for s in self.scenarios if s.status in failed]
        repairs = [s.repair for s in differing if s.repair is not None]
        if self.verdict not in (Verdict.DIFFERS, Verdict.CRASHED) or not differing or len(repairs) < len(differing):
            return None
        combined = Repair()
        for repair in repairs:
            combined = combined | repair
        return combined


# --------------------------------------------------------------------------------------------- values


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(b)


def _same_values(a: Sequence[Any], b: Sequence[Any], floating: bool) -> bool:
    if len(a) != len(b):
        return False
    if not floating:
        return list(a) == list(b)
    return all(_close(float(x), float(y)) for x, y in zip(a, b, strict=False))


def _short(summary: Summary) -> str:
    if summary is None:
        return "None"
    if isinstance(summary, dict) and "tensor" in summary:
        values = summary.get("values")
        shown = "" if values is None else f" {values[:6]}{'…' if len(values) > 6 else ''}"
        return f"tensor{tuple(summary['tensor'])} {summary['dtype']}{shown}"
    if isinstance(summary, dict) and "cache" in summary:
        return f"{summary['cache']}(length={summary['length']})"
    text = repr(summary)
    return text if len(text) <= 80 else text[:77] + "..."


def same_summary(a: Summary, b: Summary) -> bool:
    """Whether two recorded inputs (see ``scenarios.summarize``) hold the same thing."""
    if isinstance(a, dict) and isinstance(b, dict) and "tensor" in a and "tensor" in b:
        if a["tensor"] != b["tensor"] or a["dtype"] != b["dtype"]:
            return False
        if "values" in a and "values" in b:
            return _same_values(a["values"], b["values"], "float" in a["dtype"] or "bfloat" in a["dtype"])
        if "stats" in a and "stats" in b:  # a large float tensor: sums, extremes and its first values
            return _same_values(a["stats"], b["stats"], floating=True)
        return a.get("sha256") == b.get("sha256")
    if isinstance(a, dict) and isinstance(b, dict) and "dict" in a and "dict" in b:
        return same_call(a["dict"], b["dict"])
    if isinstance(a, dict) and isinstance(b, dict) and "seq" in a and "seq" in b:
        return len(a["seq"]) == len(b["seq"]) and all(
            same_summary(x, y) for x, y in zip(a["seq"], b["seq"], strict=False)
        )
    if isinstance(a, float) and isinstance(b, float):
        return _close(a, b)
    return bool(a == b)  # decoded JSON: a bool already


def same_call(a: PreparedCall, b: PreparedCall) -> bool:
    return _call_difference(a, b) is None


def _call_difference(old: PreparedCall, new: PreparedCall) -> tuple[str, str, str] | None:
    """(key, old, new) of the first difference between two prepared dicts; a key set to None is
    the same as a key left out (the model's forward sees None either way). A mask of ones is not the
    same as none: Electra's forward builds its default without counting the cache."""
    keys = sorted({k for k, v in old.items() if v is not None} | {k for k, v in new.items() if v is not None})
    for key in keys:
        a, b = old.get(key), new.get(key)
        if not same_summary(a, b):
            at = _first_differing_value(a, b)
            if at is not None:  # the six values shown may all agree: say where they do not
                assert isinstance(a, dict) and isinstance(b, dict)  # tensors, as _first_differing_value checked
                return key, f"{_short(a)} ([{at}] = {a['values'][at]})", f"{_short(b)} ([{at}] = {b['values'][at]})"
            return key, _short(a), _short(b)
    return None


def _first_differing_value(a: Summary, b: Summary) -> int | None:
    """The flat index of the first value two recorded tensors of one shape and dtype disagree on, or None."""
    if not (
        isinstance(a, dict)
        and isinstance(b, dict)
        and "values" in a
        and "values" in b
        and a.get("tensor") == b.get("tensor")
        and a.get("dtype") == b.get("dtype")
    ):
        return None
    floating = "float" in a["dtype"]
    return next(
        (
            i
            for i, (x, y) in enumerate(zip(a["values"], b["values"], strict=False))
            if not _same_values([x], [y], floating)
        ),
        None,
    )


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
    """The reduction that would make the new calls what the old ones were, when whole keys differ
    first: keys the new code adds (removed), keys the old code passed that the new one leaves out
    (kept: a reduction passes the override's parameters on), keys the old code passed on exactly
    as the caller gave them (``received``, per old call) where the new code, given the same
    (``received_new``), builds other values (passed through), keys the old code cut to the last of the tokens the new code passes (cut
    again), keys the old code named but passed as None whenever the caller gave them (None again
    when given), keys the old code named as None where the caller gave none and the new code fills in (``ungiven``:
    passed on as the caller gives them), and, where the new side crashed, keys the old code passed as None on every step (a
    forward may require them). Calls are compared in order up to the first step where keys differ
    (later steps may differ as its consequence), or the first difference that none of these explain;
    a hypothesis that re-verification tests. ``suspects``: where the crash names the
    keys a forward refused, only those of the keys the new code passes as None are removed; a None for a
    parameter of ``forward`` that defaults to None, or for a key ``forward`` takes only in ``**kwargs`` where the
    old code passed one (``optional``, made in ``compare``), is never a cause.
    A cache is never passed through: the mixin hands it on as it gets it, so a cache that differs
    follows from another difference."""
    remove: set[str] = set()
    keep: set[str] = set()
    nones: set[str] = set()
    passthrough: set[str] = set()
    ungiven: set[str] = set()
    last_token: set[str] = set()
    renamed: set[tuple[str, str]] = set()
    ignored: set[str] = set()
    for step, (a, b) in enumerate(zip(old_calls, new_calls, strict=False)):
        given = received[step] if step < len(received) else {}
        given_new = received_new[step] if received_new is not None and step < len(received_new) else given
        extra = {k for k, v in b.items() if v is not None and a.get(k) is None}
        # a key the old code named but passed as None on every call the caller gave it (GPT-2's
        # positions): None again under the same test, not removed (its own value, when the caller
        # gives none, is the mixin's)
        unheeded = {
            k
            for k in extra
            if k in given
            and k not in CACHE_NAMES
            and all(call.get(k) is None for call, got in zip(old_calls, received, strict=False) if k in got)
        }
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
        passed = {
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
        remove |= extra - unheeded - named_none
        ignored |= unheeded
        ungiven |= named_none
        keep |= missing
        passthrough |= passed
        last_token |= cut
        renamed |= moved
        if crashed:
            nones |= {k for k, v in a.items() if v is None and k not in b and k not in optional}
        if extra or missing or passed or cut or moved:
            # what differs on later steps may follow from these (a cache the model now keeps, other ids): a
            # repair that leaves a difference is verified again, and that round finds the next one
            break
    # only keys the old code passed as None on every step (setting a cache to None would be a change)
    nones = {k for k in nones if all(k in a and a[k] is None for a in old_calls)}
    if not (remove or keep or nones or passthrough or last_token or renamed or ignored or ungiven):
        return None
    return Repair(
        tuple(sorted(remove)),
        tuple(sorted(nones)),
        tuple(sorted(keep)),
        tuple(sorted(passthrough)),
        tuple(sorted(last_token)),
        tuple(sorted(renamed)),
        tuple(sorted(ignored)),
        ungiven=tuple(sorted(ungiven)),
    )


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


def first_call_difference(
    scenario: str, old_calls: Sequence[PreparedCall], new_calls: Sequence[PreparedCall]
) -> Difference | None:
    for step, (a, b) in enumerate(zip(old_calls, new_calls, strict=False)):
        found = _call_difference(a, b)
        if found is not None:
            key, old, new = found
            return Difference(scenario, "prepared-inputs", step, key, old, new)
    if len(old_calls) != len(new_calls):
        step = min(len(old_calls), len(new_calls))
        return Difference(
            scenario, "prepared-inputs", step, None, f"{len(old_calls)} calls", f"{len(new_calls)} calls"
        )
    return None


# --------------------------------------------------------------------------------------------- scenarios


def _outputs_difference(name: str, old: ScenarioDocument, new: ScenarioDocument) -> Difference | None:
    if old["sequences"] != new["sequences"]:
        for row, (a, b) in enumerate(zip(old["sequences"], new["sequences"], strict=False)):
            if a != b:
                position = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
                return Difference(
                    name,
                    "sequences",
                    None,
                    None,
                    f"row {row} token {position}: {a[position : position + 4]}",
                    f"{b[position : position + 4]}",
                )
        return Difference(
            name, "sequences", None, None, f"{len(old['sequences'])} rows", f"{len(new['sequences'])} rows"
        )
    old_scores, new_scores = old.get("scores") or [], new.get("scores") or []
    if len(old_scores) != len(new_scores):
        return Difference(name, "scores", None, None, f"{len(old_scores)} steps", f"{len(new_scores)} steps")
    for step, (old_step, new_step) in enumerate(zip(old_scores, new_scores, strict=False)):
        flat_a = [x for row in old_step for x in row]
        flat_b = [x for row in new_step for x in row]
        if not _same_values(flat_a, flat_b, floating=True):
            worst = (
                max(abs(float(x) - float(y)) for x, y in zip(flat_a, flat_b, strict=False))
                if len(flat_a) == len(flat_b)
                else math.inf
            )
            return Difference(name, "scores", step, None, "", f"max abs difference {worst:.3g}")
    return None


def _scenario_repair(
    old: ScenarioDocument, new: ScenarioDocument, *, crashed: bool, optional: frozenset[str] = frozenset()
) -> Repair | None:
    """The repair over the main model's calls and the assistant's (the same class): where the
    assistant's inputs differ by whole keys, the main model's later differences may follow from the
    other candidates it proposed, and re-verification tests that."""
    error = new.get("error", "") if crashed else ""
    # The forward may say which keys it refused (passed as None by the new code) or could not do without (passed as
    # None by the old one); where the old code failed too, a None did not keep it running: nothing else is suspected.
    refused, required = _arguments_named(error, _UNEXPECTED), _arguments_named(error, _MISSING)
    old_failed = _status(old) is WorkerStatus.ERROR
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
_UNEXPECTED = re.compile(r"got an unexpected keyword argument (.*)")


def _arguments_named(error: str, pattern: re.Pattern[str]) -> set[str]:
    """The parameters a ``TypeError`` names: those a call lacked (``forward() missing 1 required
    positional argument: 'input_ids'``) or those it refused (``got an unexpected keyword argument
    'head_mask'``); empty for any other error."""
    found = pattern.search(error.splitlines()[0] if error else "")
    return set(re.findall(r"'(\w+)'", found.group(1))) if found else set()


def compare_scenario(
    old: ScenarioDocument, new: ScenarioDocument, *, same_inputs: bool = True, optional: frozenset[str] = frozenset()
) -> ScenarioOutcome:
    """One scenario's outcome. Without ``same_inputs`` (two releases) the prepared inputs are not
    held against each other: a difference there is noted on a scenario whose outputs agree.
    ``optional``: the keys whose None is never a cause (see ``repair_for``)."""
    if same_inputs:
        outcome = _compare_scenario(old, new, optional)
    else:
        blind: ScenarioDocument = {"calls": [], "assistant_calls": [], "outer_calls": [], "received": []}
        outcome = _compare_scenario({**old, **blind}, {**new, **blind})
        if outcome.status is ScenarioStatus.SAME:
            noted = _compare_scenario(old, new)
            if noted.difference is not None:
                outcome = dataclasses.replace(
                    outcome, detail=f"outputs agree; the prepared inputs differ: {noted.difference}"
                )
        # only what the new side's forward said it refused (passed by the new mixin, not by the old code) repairs
        refused = (
            _arguments_named(new.get("error", ""), _UNEXPECTED) if outcome.status is ScenarioStatus.CRASHED else set()
        )
        outcome = dataclasses.replace(outcome, repair=Repair(remove=tuple(sorted(refused))) if refused else None)
    return dataclasses.replace(
        outcome, inputs=dict(old.get("inputs") or {}), cache_used=old.get("cache_used"), variant=old.get("variant", "")
    )


def _compare_scenario(
    old: ScenarioDocument, new: ScenarioDocument, optional: frozenset[str] = frozenset()
) -> ScenarioOutcome:
    name = old["name"]
    if _status(old) is WorkerStatus.SKIPPED:
        return ScenarioOutcome(name, ScenarioStatus.SKIPPED, old.get("reason", ""))
    if _status(new) is WorkerStatus.SKIPPED:
        return ScenarioOutcome(name, ScenarioStatus.CRASHED, f"new code skips it: {new.get('reason', '')}")
    old_calls, new_calls = old.get("calls", []), new.get("calls", [])
    # the assistant runs first and is the same class: its difference, if any, is the cause; a
    # composite's own calls (the decoder's are the ones under test) come after the decoder's
    assistant = first_call_difference(
        f"{name} (assistant)", old.get("assistant_calls", []), new.get("assistant_calls", [])
    )
    calls = (
        assistant
        or first_call_difference(name, old_calls, new_calls)
        or first_call_difference(f"{name} (composite)", old.get("outer_calls", []), new.get("outer_calls", []))
    )
    old_failed, new_failed = _status(old) is WorkerStatus.ERROR, _status(new) is WorkerStatus.ERROR
    if old_failed and new_failed and _error_kind(old["error"]) == _error_kind(new["error"]):
        return ScenarioOutcome(name, ScenarioStatus.SAME_ERROR, old["error"][:300])
    if old_failed and not new_failed:
        # Nothing that worked before works differently: the old code failed here, the new generates.
        when = "before preparing anything" if not old_calls else f"after {len(old_calls)} steps"
        return ScenarioOutcome(
            name,
            ScenarioStatus.EXTENDED,
            f"the old code failed {when} ({_error_kind(old['error'])[:160]}); the new code generates",
            calls,
        )
    if old_failed and not old_calls:
        rejected = f"the old code rejects it before preparing anything ({_error_kind(old['error'])[:160]})"
        # generate() rejected it by the override's signature, which a reduction keeps
        return ScenarioOutcome(
            name,
            ScenarioStatus.CRASHED,
            f"{rejected}; the new code crashes: {new['error'][:200]}",
            Difference(name, "error", None, None, old["error"][:120], new["error"][:120]),
            Repair(),
        )
    if (
        old_failed
        and new_failed
        and assistant is None
        and _alike_until(old_calls, new_calls)
        and _alike_until(old.get("outer_calls", []), new.get("outer_calls", []))
    ):
        # the old code prepared something before it failed (no signature refusal), and the new code did the same up
        # to there before failing too: what worked before still works, what failed still fails
        return ScenarioOutcome(
            name,
            ScenarioStatus.BOTH_FAIL,
            f"fails on both sides, the new code no earlier: old after "
            f"{len(old_calls)} steps ({_error_kind(old['error'])[:120]}), new after {len(new_calls)} "
            f"({_error_kind(new['error'])[:120]})",
        )
    if new_failed:
        detail = f"old: {old['error'][:200]} / new: {new['error'][:200]}" if old_failed else new["error"][:300]
        difference = calls or Difference(
            name, "error", None, None, old.get("error", "generates")[:120], new["error"][:120]
        )
        return ScenarioOutcome(
            name,
            ScenarioStatus.CRASHED,
            detail,
            difference,
            _scenario_repair(old, new, crashed=True, optional=optional),
        )
    repair = _scenario_repair(old, new, crashed=False, optional=optional)
    outputs = _outputs_difference(name, old, new)
    if outputs is not None:
        return ScenarioOutcome(name, ScenarioStatus.DIFFERS, str(calls or outputs), calls or outputs, repair)
    if calls is not None:
        return ScenarioOutcome(
            name, ScenarioStatus.DIFFERS, f"same outputs, but the prepared inputs differ: {calls}", calls, repair
        )
    return ScenarioOutcome(name, ScenarioStatus.SAME)


def _alike_until(old_calls: Sequence[PreparedCall], new_calls: Sequence[PreparedCall]) -> bool:
    """Whether the new code made at least the old code's calls, and the same ones, before it stopped."""
    return (
        len(new_calls) >= len(old_calls) and first_call_difference("", old_calls, new_calls[: len(old_calls)]) is None
    )


def _status(document: ScenarioDocument | ResultDocument) -> WorkerStatus | None:
    """The status a worker wrote into a result document (None when it wrote none)."""
    status = document.get("status")
    return WorkerStatus(status) if status is not None else None


def _error_kind(error: str) -> str:
    """The exception type and the first line: enough to call two failures the same."""
    return error.splitlines()[0] if error else ""


def _prepared_calls(scenarios: Sequence[ScenarioDocument]) -> Iterator[PreparedCall]:
    """Every call of the method under test the scenarios recorded: the main model's and the assistant's (the same
    class), the calls repairs are read from."""
    for scenario in scenarios:
        yield from scenario.get("calls", [])
        yield from scenario.get("assistant_calls", [])


def _scoped_repairs(
    outcomes: list[ScenarioOutcome], old_scenarios: Sequence[ScenarioDocument]
) -> list[ScenarioOutcome]:
    """A key one scenario saw as None on every step (no cache, say) may carry a value in another
    (a cache): the class's repair must not set it to None. A repair is one reduction for every
    scenario, so set-none keeps only keys the old code never passed a value for."""
    passed = {key for call in _prepared_calls(old_scenarios) for key, value in call.items() if value is not None}
    return [
        dataclasses.replace(
            o, repair=dataclasses.replace(o.repair, set_none=tuple(k for k in o.repair.set_none if k not in passed))
        )
        if o.repair is not None and passed & set(o.repair.set_none)
        else o
        for o in outcomes
    ]


def _absorbed_nones(old: ResultDocument) -> frozenset[str]:
    """The keys the old code passed as None that ``forward`` does not name but takes in its ``**kwargs``
    (``forward_absorbs``): the new code leaving such a None out leaves it out of ``**kwargs``, which neither the
    prepared-inputs comparison (None is absent) nor a forward's required parameters can tell, so a repair never
    sets it again (SeamlessM4T's ``"input_ids": None``, which its forward takes in ``**kwargs`` and ignores). Only
    keys the old code passed: a None the new code adds may still be handed on from ``**kwargs`` to a module that
    refuses it."""
    named = old.get("forward_absorbs")
    if named is None:
        return frozenset()
    nones = {key for call in _prepared_calls(old.get("scenarios", [])) for key, value in call.items() if value is None}
    return frozenset(nones - set(named))


def compare(
    override_id: str,
    old: ResultDocument,
    new: ResultDocument,
    *,
    same_inputs: bool = True,
    needs: Sequence[frozenset[str]] = (),
) -> ClassVerdict:
    """The verdict on one class from both sides' results. ``needs``: the inputs the change's kept statements
    read, a group per statement (``runner.Target.needs``); identical only where a compared scenario gave one
    of each."""
    seconds = float(old.get("seconds", 0)) + float(new.get("seconds", 0))
    if _status(old) is not WorkerStatus.OK:
        return ClassVerdict(
            override_id,
            Verdict.UNVERIFIED,
            detail=f"the old code cannot run it: {old.get('error', old.get('status'))}",
            seconds=seconds,
        )
    if _status(new) is not WorkerStatus.OK:
        return ClassVerdict(
            override_id,
            Verdict.CRASHED,
            detail=f"the new code cannot run it: {new.get('error', new.get('status'))}",
            seconds=seconds,
        )
    new_by_name = {s["name"]: s for s in new.get("scenarios", [])}
    optional = frozenset(old.get("forward_optional") or ()) | _absorbed_nones(old)
    outcomes = []
    for scenario in old.get("scenarios", []):
        other = new_by_name.get(
            scenario["name"], {"name": scenario["name"], "status": WorkerStatus.ERROR, "error": "missing"}
        )
        outcomes.append(compare_scenario(scenario, other, same_inputs=same_inputs, optional=optional))
    refused = frozenset(
        str(s["name"]) for s in old.get("scenarios", []) if SIGNATURE_REFUSAL in str(s.get("error", ""))
    )
    outcomes = _consistent_extensions(
        outcomes, new_by_name, caches=bool(old.get("caches", True)), refused_by_signature=refused
    )
    outcomes = _scoped_repairs(outcomes, old.get("scenarios", []))
    statuses = {o.status for o in outcomes}
    if ScenarioStatus.CRASHED in statuses:
        verdict = Verdict.CRASHED
    elif ScenarioStatus.DIFFERS in statuses:
        verdict = Verdict.DIFFERS
    elif ScenarioStatus.SAME in statuses:
        verdict = Verdict.IDENTICAL
    else:
        verdict = Verdict.UNVERIFIED
    first = next((o for o in outcomes if o.status in (ScenarioStatus.CRASHED, ScenarioStatus.DIFFERS)), None)
    extended = [o.name for o in outcomes if o.status is ScenarioStatus.EXTENDED]
    if first:
        detail = f"{first.name}: {first.detail}"
    elif verdict is Verdict.UNVERIFIED:
        detail = "no scenario ran on either side"
    else:
        detail = f"extends: {', '.join(extended)} (the old code failed there)" if extended else ""
    same = {o.name for o in outcomes if o.status is ScenarioStatus.SAME}
    given = tuple(
        sorted(
            {
                name
                for scenario in old.get("scenarios", [])
                if scenario["name"] in same
                for name in scenario.get("given", [])
            }
        )
    )
    if verdict is Verdict.IDENTICAL:
        missing = (
            missing_evidence(outcomes, caches=bool(old.get("caches", True)))
            or unreached(needs, given)
            or unrun(old.get("required") or {}, outcomes)
        )
        if missing:
            verdict, detail = Verdict.UNVERIFIED, missing
    variants = tuple(
        {k: v.get(k) for k in ("name", "settings", "why", "error") if v.get(k) is not None and v.get(k) != ""}
        for v in old.get("variants") or ()
    )
    return ClassVerdict(override_id, verdict, tuple(outcomes), detail, seconds, built_from(old), variants, given=given)


def unreached(needs: Sequence[frozenset[str]], given: Sequence[str]) -> str:
    """Why the evidence does not reach the statements a change keeps (Mllama's image check after super(),
    Musicgen's guidance in front of it): the inputs of each group no compared scenario gave; "" when it does."""
    reached = set(given)
    missing = sorted({name for group in needs if not group & reached for name in group})
    return f"the statements it keeps handle {', '.join(missing)}, which no scenario gave it" if missing else ""


def unrun(required: Mapping[str, str], outcomes: Sequence[ScenarioOutcome]) -> str:
    """Why a scenario the class's own code makes necessary (``usage.required_scenarios``: the llava family's legacy
    prompt) is no evidence: it did not run the same on both sides (its inputs could not be built, or it failed
    alike); "" when each ran the same."""
    by_name = {o.name: o for o in outcomes}
    for name, why in sorted(required.items()):
        outcome = by_name.get(name)
        if outcome is None or outcome.status is not ScenarioStatus.SAME:
            state = "not run" if outcome is None else f"{outcome.status.value}: {outcome.detail}"
            return f"{why}, but no {name} scenario ran the same on both sides ({state[:200]})"
    return ""


#: the variant that runs the class as the decoder of an ``EncoderDecoderModel`` (``verify.usage``)
COMPOSITE_VARIANT = "encoder-decoder"


def missing_evidence(outcomes: Sequence[ScenarioOutcome], *, caches: bool) -> str:
    """Why scenarios that all agree still prove too little, or "" when they prove enough: a class that
    can cache needs one compared run that read from a cache and one that ran without, or a
    difference in either path would go unseen (a decoder head never used as a decoder)."""
    same = [o for o in outcomes if o.status is ScenarioStatus.SAME]
    if not caches:
        return ""
    # a decoder's cache read inside a wrapper is not its own cached path: 4.45's wrappers ask its method without the
    # positions generate() gives it, so the mixin takes another branch there (a decoder head that never ran as a
    # decoder of its own was called identical on the wrapper's evidence alone)
    if not any(o.cache_used for o in same if o.variant != COMPOSITE_VARIANT):
        return (
            "no scenario that ran on both sides read from a cache (but inside a wrapper): the cached path is untested"
        )
    # where the old code cannot generate without a cache (4.45's Idefics2 reads a Cache method off a tuple), the
    # uncached path is the new code's extension, and it counts only as the greedy tokens it must generate
    # (``REFERENCE``): an extension that does not has been made a difference by then
    uncached = [o for o in outcomes if o.status in (ScenarioStatus.SAME, ScenarioStatus.EXTENDED)]
    if not any(o.cache_used is False or asks_no_cache(o.inputs) for o in uncached):
        return "no scenario that ran on both sides ran without a cache: the uncached path is untested"
    return ""


def asks_no_cache(inputs: dict[str, Any]) -> bool:
    """Whether a scenario's generate() call was told not to cache (by its flag, or by the config it
    ran with): the uncached path, even where an override hands the model a cache object anyway."""
    flag = inputs.get("use_cache")
    return flag is False or (flag is None and (inputs.get("config") or {}).get("use_cache") is False)


#: scenarios whose tokens must be greedy's (same prompt, greedy decoding): a path the new code opens
#: where the old one failed is only kept when it generates what the ids do
REFERENCE = {
    "inputs-embeds": "greedy",
    "inputs-embeds-padded": "left-padded-batch",
    "assisted": "greedy",
    "static-cache": "greedy",
    "greedy-no-cache": "greedy",
    "config-no-cache": "greedy",
    "multimodal-no-cache": "multimodal",
    "position-ids": "left-padded-batch",
    "prefilled-cache": "greedy",
}

#: scenarios whose extension can only be held to the first few of the reference's new tokens, and why
PARTIAL_REFERENCE = {
    # the caller's positions cover the prompt: generate() does not extend them (4.45 as 5.x), so from the second
    # new token on the mixin hands the model the last prompt position again, as upstream's does
    "position-ids": (1, "later ones reuse the last prompt position: generate() does not extend the caller's"),
}


def _variant_and_scenario(name: str) -> tuple[str, str]:
    variant, _, scenario = name.rpartition("/")
    return (variant + "/" if variant else ""), scenario


def _new_tokens(sequences: Sequence[Sequence[int]], count: int) -> list[list[int]]:
    return [list(row)[-count:] for row in sequences]


def _consistent_extensions(
    outcomes: list[ScenarioOutcome],
    new_by_name: dict[str, ScenarioDocument],
    *,
    caches: bool = True,
    refused_by_signature: frozenset[str] = frozenset(),
) -> list[ScenarioOutcome]:
    """An extension (the old code failed, the new one generates) is evidence of nothing unless what it
    generates is right: the new code must generate the same tokens there as in its greedy run. If
    not, it differs; where the old code refused up front (generate() checked the override's
    signature), keeping that signature restores the refusal (the empty repair). Embeddings generate()
    refused by the signature (the scenarios in ``refused_by_signature``) are never an extension: that
    refusal stays in any case. A class that keeps no cache cannot generate from embeddings at all: after
    the first step generate() feeds it the ids it has, only those generated since (a tiny model that
    repeats one token would hide it)."""
    out = []
    for o in outcomes:
        prefix, scenario = _variant_and_scenario(o.name)
        reference = new_by_name.get(prefix + REFERENCE.get(scenario, ""))
        mine = new_by_name.get(o.name)
        rejected_up_front = "before preparing anything" in o.detail
        if o.status is ScenarioStatus.EXTENDED and o.name in refused_by_signature and scenario in EMBEDDING_SCENARIOS:
            # generate() refused the embeddings by the override's signature. That refusal stays (the empty repair
            # keeps the signature): code outside generate() decides by the same signature whether a model takes
            # embeddings (upstream's own test_generate_from_inputs_embeds_decoder_only, skipped for such a model,
            # runs once it names them, and holds the model to more than this scenario: CTRL scales the caller's
            # tensor in place, BertGeneration's encoder-configured test crashes), and the mixin's embeddings path
            # is right only with a cache (without one, after the first step it feeds the generated ids alone)
            out.append(
                dataclasses.replace(
                    o,
                    status=ScenarioStatus.DIFFERS,
                    repair=Repair(),
                    difference=Difference(o.name, "extension", None, None, "refused", "generates"),
                    detail=f"{o.detail}, where its signature refused embeddings: that refusal is kept, as code outside "
                    "generate() reads the signature too",
                )
            )
            continue
        if o.status is ScenarioStatus.EXTENDED and not caches and scenario in EMBEDDING_SCENARIOS:
            out.append(
                dataclasses.replace(
                    o,
                    status=ScenarioStatus.DIFFERS,
                    repair=Repair() if rejected_up_front else None,
                    difference=Difference(o.name, "extension", None, None, "refused", "generates without its prompt"),
                    detail=f"{o.detail}, but the class keeps no cache: after the first step it would see only the ids "
                    "generated since",
                )
            )
            continue
        if (
            o.status is not ScenarioStatus.EXTENDED
            or reference is None
            or mine is None
            or _status(reference) is not WorkerStatus.OK
        ):
            out.append(o)
            continue
        # the new tokens only: generating from inputs_embeds returns no prompt ids
        count = min((len(row) for row in (*mine["sequences"], *reference["sequences"])), default=0)
        wanted, got = _new_tokens(reference["sequences"], count), _new_tokens(mine["sequences"], count)
        if len(wanted) == len(got) and wanted == got:
            out.append(o)
            continue
        checked, why = PARTIAL_REFERENCE.get(scenario, (0, ""))
        generated = (mine.get("inputs") or {}).get("max_new_tokens")  # the rows hold the prompt too
        if (
            why
            and isinstance(generated, int)
            and len(wanted) == len(got)
            and [row[-generated:][:checked] for row in wanted] == [row[-generated:][:checked] for row in got]
        ):
            out.append(
                dataclasses.replace(o, detail=f"{o.detail}; its first new token is {REFERENCE[scenario]}'s, {why}")
            )
            continue
        difference = Difference(o.name, "sequences", None, None, f"greedy: {wanted[:1]}", f"{got[:1]}")
        out.append(
            dataclasses.replace(
                o,
                status=ScenarioStatus.DIFFERS,
                difference=difference,
                repair=Repair() if rejected_up_front else None,
                detail=f"{o.detail}, but not what greedy decoding generates: {difference}",
            )
        )
    return out


#: the scenarios that generate from embeddings instead of ids
EMBEDDING_SCENARIOS = ("inputs-embeds", "inputs-embeds-padded")
#: generate()'s words (4.45 to 5.x) when the signature of ``prepare_inputs_for_generation`` names no ``inputs_embeds``
SIGNATURE_REFUSAL = "doesn't have its forwarding implemented"


def built_from(side: ResultDocument) -> str:
    """What the building side said about its tiny model: the tester it used, or a generic shrink."""
    notes = side.get("notes") or []
    found = next((str(note) for note in notes if str(note).startswith("config from ")), None)
    if found is not None:
        return found
    return "config class defaults, shrunk" if _status(side) is WorkerStatus.OK else ""

"""Verification across two releases, judged on three sides.

Model code outside transformers moves from the release it was written for (``--from``) to a target. Two
sides cannot tell "the edit breaks the model" from "the target breaks the model", so a third runs: the
*reference* is the old code on ``--from``, the *baseline* the old code on the target, the *candidate* the
new code on the target. The candidate is judged against the reference (``compare``); then, per scenario:

- it fails or differs, and the baseline fails the same way (the same error kind) or generates what the
  candidate generates: the target breaks it, not the edit (``ScenarioStatus.NO_WORSE``);
- it matches the reference where the baseline fails or differs: the edit repairs it (``REPAIRS``);
- it fails on every side, the old code on its own release too: nobody ran it there (``BOTH_FAIL``).

A class whose scenarios are all identical, no worse or repairs keeps its change (``KEPT``); its verdict
names the release's own break. Pure: a function of the three sides' result documents. Known differences
between releases' ``generate()`` outputs are normalised first (``without_placeholder``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from codemod.contracts import ScenarioStatus, Verdict, WorkerStatus
from codemod.verify.compare import compare, compare_scenario, missing_evidence, uncalled, unreached, unrun
from codemod.verify.documents import ClassVerdict, ResultDocument, ScenarioDocument, ScenarioOutcome, status_of

#: the verdicts that let a change stay: identical, or across releases no worse than the target, or a repair
KEPT = frozenset({Verdict.IDENTICAL, Verdict.NO_WORSE, Verdict.REPAIRS})

_FAILED = (ScenarioStatus.DIFFERS, ScenarioStatus.CRASHED)
#: the scenario outcomes that leave a class kept (any other is a failure of the edit's, whatever its name)
_KEPT_OUTCOMES = frozenset(
    {
        ScenarioStatus.SAME,
        ScenarioStatus.REPAIRS,
        ScenarioStatus.NO_WORSE,
        ScenarioStatus.SKIPPED,
        ScenarioStatus.SAME_ERROR,
        ScenarioStatus.BOTH_FAIL,
        ScenarioStatus.EXTENDED,
    }
)
#: what a judged scenario's detail says before the release's own break (``_note`` reads what follows)
_FOR_OLD = "for the old code"


def without_placeholder(reference: ScenarioDocument, other: ScenarioDocument) -> tuple[ScenarioDocument, ...]:
    """The two runs of a scenario given only ``inputs_embeds``, with the placeholder token that older releases'
    ``generate()`` puts in front of the sequences (4.3x: there are no prompt ids to return, a start token stands
    for them; newer ones return the new tokens alone) taken off the side that has it: every row one token longer
    than the other side's, behind the same first token. Any other pair comes back as it was."""
    given = reference.get("inputs") or {}
    if "inputs_embeds" not in given or "input_ids" in given:
        return reference, other
    ours, theirs = reference.get("sequences"), other.get("sequences")
    if not ours or not theirs or len(ours) != len(theirs):
        return reference, other
    if all(len(a) == len(b) + 1 for a, b in zip(ours, theirs, strict=True)) and len({a[0] for a in ours}) == 1:
        return {**reference, "sequences": [a[1:] for a in ours]}, other
    if all(len(b) == len(a) + 1 for a, b in zip(ours, theirs, strict=True)) and len({b[0] for b in theirs}) == 1:
        return reference, {**other, "sequences": [b[1:] for b in theirs]}
    return reference, other


def normalised(reference: ResultDocument, other: ResultDocument) -> tuple[ResultDocument, ResultDocument]:
    """Both sides' results with each scenario's known release difference taken out (``without_placeholder``)."""
    by_name = {s["name"]: s for s in other.get("scenarios", [])}
    ours, theirs = [], dict(by_name)
    for scenario in reference.get("scenarios", []):
        counterpart = by_name.get(scenario["name"])
        if counterpart is None:
            ours.append(scenario)
            continue
        mine, its = without_placeholder(scenario, counterpart)
        ours.append(mine)
        theirs[scenario["name"]] = its
    return {**reference, "scenarios": ours}, {**other, "scenarios": list(theirs.values())}


@dataclasses.dataclass(frozen=True)
class Runs:
    """One scenario as the three sides ran it (``reference``: the old code on ``--from``; ``baseline``: the old
    code on the target; ``candidate``: the new code on the target)."""

    reference: ScenarioDocument
    baseline: ScenarioDocument
    candidate: ScenarioDocument


def judge(outcome: ScenarioOutcome, runs: Runs, release: str) -> ScenarioOutcome:
    """``outcome`` (the candidate against the reference) once the baseline is known: no worse than ``release``
    where the baseline fails or differs the way the candidate does, repairs where only the candidate matches
    the reference, else as it was (a failure saying it is the new code's own, and what the baseline did)."""
    if outcome.status not in (*_FAILED, ScenarioStatus.SAME):
        return outcome
    if all(status_of(r) is WorkerStatus.ERROR for r in (runs.reference, runs.baseline, runs.candidate)):
        # the old code fails it on its own release too: nothing a user ran there, nothing the edit could break
        reference_error = _first(runs.reference["error"])
        return _not_the_edits(
            outcome,
            ScenarioStatus.BOTH_FAIL,
            f"fails on every side, the old code on its own release too: {reference_error}",
        )
    on_target = compare_scenario(runs.reference, runs.baseline, same_inputs=False)
    if on_target.status is ScenarioStatus.SAME:
        if outcome.status is ScenarioStatus.SAME:
            return outcome
        own = f"the new code's own ({release} runs the old code as its release did)"
        return dataclasses.replace(outcome, detail=f"{own}: {outcome.detail}")
    reason = _reason(on_target, runs.baseline)
    if outcome.status is ScenarioStatus.SAME:
        detail = f"the new code generates as on the old release; {release} breaks it {_FOR_OLD}: {reason}"
        return dataclasses.replace(outcome, status=ScenarioStatus.REPAIRS, detail=detail)
    alike = compare_scenario(runs.baseline, runs.candidate, same_inputs=False)
    if alike.status not in (ScenarioStatus.SAME, ScenarioStatus.SAME_ERROR):
        own = f"the new code's own ({release} breaks it {_FOR_OLD} otherwise: {reason})"
        return dataclasses.replace(outcome, detail=f"{own}: {outcome.detail}")
    return _not_the_edits(outcome, ScenarioStatus.NO_WORSE, f"{release} breaks it {_FOR_OLD} too: {reason}")


def _not_the_edits(outcome: ScenarioOutcome, status: ScenarioStatus, detail: str) -> ScenarioOutcome:
    """A failure the edit is not answerable for: no difference of its own to show, nothing to repair."""
    return dataclasses.replace(outcome, status=status, detail=detail, difference=None, repair=None)


def _reason(on_target: ScenarioOutcome, baseline: ScenarioDocument) -> str:
    """How the target breaks the old code in a scenario: its error, or what it generates instead."""
    if status_of(baseline) is WorkerStatus.ERROR:
        return _first(baseline.get("error", "")) or "an error"
    if on_target.status is ScenarioStatus.DIFFERS:
        return f"it generates otherwise ({on_target.difference or on_target.detail})"
    return on_target.detail[:200]


@dataclasses.dataclass(frozen=True)
class Sides:
    """One class's results on the three sides (``baseline`` None: ``--from`` is the target, and the reference
    is the baseline)."""

    reference: ResultDocument
    baseline: ResultDocument | None
    candidate: ResultDocument


def judge_class(override_id: str, sides: Sides, release: str, needs: Sequence[frozenset[str]] = ()) -> ClassVerdict:
    """The verdict on one class across two releases: ``compare``'s, the candidate against the reference, with
    each scenario judged again by the baseline (``judge``) when there is one; ``release``: the target's name."""
    reference, candidate = normalised(sides.reference, sides.candidate)
    verdict = compare(override_id, reference, candidate, same_inputs=False, needs=needs)
    if sides.baseline is None or status_of(reference) is not WorkerStatus.OK:
        return verdict
    reference, baseline = normalised(reference, sides.baseline)
    if status_of(candidate) is not WorkerStatus.OK:
        return _unrunnable(verdict, baseline, candidate, release)
    runs = {name: _runs(name, reference, baseline, candidate) for name in _names(reference)}
    outcomes = tuple(judge(o, runs[o.name], release) if o.name in runs else o for o in verdict.scenarios)
    if outcomes == verdict.scenarios:
        return verdict
    return _rejudged(verdict, outcomes, reference, needs, release)


def _names(document: ResultDocument) -> list[str]:
    return [s["name"] for s in document.get("scenarios", [])]


def _runs(name: str, reference: ResultDocument, baseline: ResultDocument, candidate: ResultDocument) -> Runs:
    """A scenario's three runs; a side that could not run the class at all failed each with its error."""

    def run(document: ResultDocument) -> ScenarioDocument:
        if status_of(document) is not WorkerStatus.OK:
            error = str(document.get("error") or document.get("status") or "")
            return {"name": name, "status": WorkerStatus.ERROR, "error": error}
        found = next((s for s in document.get("scenarios", []) if s["name"] == name), None)
        return found if found is not None else {"name": name, "status": WorkerStatus.ERROR, "error": "missing"}

    return Runs(run(reference), run(baseline), run(candidate))


def _unrunnable(
    verdict: ClassVerdict, baseline: ResultDocument, candidate: ResultDocument, release: str
) -> ClassVerdict:
    """A candidate that cannot run the class at all (an import that fails on the target): no evidence either way
    when the old code fails there alike, else the edit's crash."""
    error = str(candidate.get("error") or candidate.get("status") or "")
    if status_of(baseline) is WorkerStatus.OK or _first(str(baseline.get("error") or "")) != _first(error):
        return verdict
    return dataclasses.replace(
        verdict,
        verdict=Verdict.UNVERIFIED,
        detail=f"{release} cannot run the old code either, so nothing ran: {_first(error)}",
    )


def _first(error: str) -> str:
    return error.splitlines()[0][:200] if error else ""


def _rejudged(
    verdict: ClassVerdict,
    outcomes: tuple[ScenarioOutcome, ...],
    reference: ResultDocument,
    needs: Sequence[frozenset[str]],
    release: str,
) -> ClassVerdict:
    """The class's verdict from its scenarios judged on three sides: a failure the release does not explain
    decides it; else the evidence ``compare`` asks of an identical class (a repaired scenario counts, having
    matched the reference), and no worse or repairs, the release's own break named."""
    note = _note(outcomes, release)
    failing = [o for o in outcomes if o.status not in _KEPT_OUTCOMES]
    if failing:
        statuses = {o.status for o in failing}
        kind = (
            Verdict.CRASHED
            if ScenarioStatus.CRASHED in statuses
            else Verdict.DIFFERS
            if ScenarioStatus.DIFFERS in statuses
            else verdict.verdict
        )
        detail = "; ".join(part for part in (f"{failing[0].name}: {failing[0].detail}", note) if part)
        return dataclasses.replace(verdict, verdict=kind, scenarios=outcomes, detail=detail)
    evidence = [
        dataclasses.replace(o, status=ScenarioStatus.SAME) if o.status is ScenarioStatus.REPAIRS else o
        for o in outcomes
    ]
    same = {o.name for o in evidence if o.status is ScenarioStatus.SAME}
    scenarios = reference.get("scenarios", [])
    given = tuple(sorted({name for s in scenarios if s["name"] in same for name in s.get("given", [])}))
    missing = (
        missing_evidence(evidence, caches=bool(reference.get("caches", True)))
        or unreached(needs, given)
        or unrun(reference.get("required") or {}, evidence)
        or uncalled(scenarios, same)
    )
    if missing:
        kind, detail = Verdict.UNVERIFIED, f"{missing}; {note}"
    elif any(o.status is ScenarioStatus.NO_WORSE for o in outcomes):
        kind, detail = Verdict.NO_WORSE, f"identical where {release} runs the old code; {note}"
    else:
        kind, detail = Verdict.REPAIRS, f"identical; {note}"
    return dataclasses.replace(verdict, verdict=kind, scenarios=outcomes, detail=detail, given=given)


def _note(outcomes: Sequence[ScenarioOutcome], release: str) -> str:
    """What the baseline showed: the scenarios the release breaks for the old code too, and those repaired, each
    with the first one's break."""
    parts = []
    no_worse = [o for o in outcomes if o.status is ScenarioStatus.NO_WORSE]
    if no_worse:
        parts.append(f"{release} breaks {_listed(no_worse)} {_FOR_OLD} too: {_break_in(no_worse[0])}")
    repairs = [o for o in outcomes if o.status is ScenarioStatus.REPAIRS]
    if repairs:
        parts.append(f"repairs {_listed(repairs)}, which {release} breaks {_FOR_OLD}: {_break_in(repairs[0])}")
    return "; ".join(parts)


def _break_in(outcome: ScenarioOutcome) -> str:
    """The release's own break, as ``judge`` wrote it into a scenario's detail."""
    return outcome.detail.split(
        f"{_FOR_OLD} too: " if outcome.status is ScenarioStatus.NO_WORSE else f"{_FOR_OLD}: ", 1
    )[-1]


def _listed(outcomes: Sequence[ScenarioOutcome]) -> str:
    return ", ".join(o.name for o in outcomes)

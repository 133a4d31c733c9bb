"""Compare what the old and the new code did, scenario by scenario: a verdict per class, with evidence.

A class is identical when every scenario that ran prepared the same inputs at every step and generated
the same tokens with the same scores; it differs, crashed, or stays unverified otherwise (the old side
could not run it, or the evidence does not reach what the change touched). Pure: a function of the two
sides' result documents (written by ``worker.py``). See docs/design/verify.md for what counts as evidence.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from codemod.contracts import Repair, ScenarioStatus, Verdict, WorkerStatus
from codemod.verify.documents import FAILING, Difference, PreparedCall, ScenarioDocument, deciding_outcome
from codemod.verify.documents import ClassVerdict as ClassVerdict  # the verdict types are re-exported from here
from codemod.verify.documents import ResultDocument as ResultDocument
from codemod.verify.documents import ScenarioOutcome as ScenarioOutcome
from codemod.verify.documents import status_of as _status
from codemod.verify.extensions import SIGNATURE_REFUSAL, consistent_extensions
from codemod.verify.repair import UNEXPECTED, absorbed_nones, arguments_named, scenario_repair, scoped_repairs
from codemod.verify.values import first_call_difference, same_values


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
        if not same_values(flat_a, flat_b, floating=True):
            worst = (
                max(abs(float(x) - float(y)) for x, y in zip(flat_a, flat_b, strict=False))
                if len(flat_a) == len(flat_b)
                else math.inf
            )
            return Difference(name, "scores", step, None, "", f"max abs difference {worst:.3g}")
    return None


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
            arguments_named(new.get("error", ""), UNEXPECTED) if outcome.status is ScenarioStatus.CRASHED else set()
        )
        outcome = dataclasses.replace(outcome, repair=Repair(remove=tuple(sorted(refused))) if refused else None)
    return dataclasses.replace(
        outcome, inputs=dict(old.get("inputs") or {}), cache_used=old.get("cache_used"), variant=old.get("variant", "")
    )


#: a scenario the installed release cannot run at all (the worker's ``scenarios.RELEASE_LACKS``): across releases
#: the new side's release lacks it, which is no evidence either way
RELEASE_LACKS = "the release cannot run it: "


def _compare_scenario(
    old: ScenarioDocument, new: ScenarioDocument, optional: frozenset[str] = frozenset()
) -> ScenarioOutcome:
    name = old["name"]
    if _status(old) is WorkerStatus.SKIPPED:
        return ScenarioOutcome(name, ScenarioStatus.SKIPPED, old.get("reason", ""))
    if _status(new) is WorkerStatus.SKIPPED and new.get("reason", "").startswith(RELEASE_LACKS):
        return ScenarioOutcome(name, ScenarioStatus.SKIPPED, f"the new side's {new['reason']}")
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
            scenario_repair(old, new, crashed=True, optional=optional),
        )
    repair = scenario_repair(old, new, crashed=False, optional=optional)
    outputs = _outputs_difference(name, old, new)
    if outputs is not None:
        return ScenarioOutcome(name, ScenarioStatus.DIFFERS, str(calls or outputs), calls or outputs, repair)
    if calls is not None:
        return ScenarioOutcome(name, ScenarioStatus.INPUTS_DIFFER, str(calls), calls, repair)
    return ScenarioOutcome(name, ScenarioStatus.SAME)


def _alike_until(old_calls: Sequence[PreparedCall], new_calls: Sequence[PreparedCall]) -> bool:
    """Whether the new code made at least the old code's calls, and the same ones, before it stopped."""
    return (
        len(new_calls) >= len(old_calls) and first_call_difference("", old_calls, new_calls[: len(old_calls)]) is None
    )


def _error_kind(error: str) -> str:
    """The exception type and the first line: enough to call two failures the same."""
    return error.splitlines()[0] if error else ""


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
    outcomes = _outcomes(old, new, same_inputs)
    verdict, detail = _verdict(outcomes)
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
            or uncalled(old.get("scenarios", []), same)
        )
        if missing:
            verdict, detail = Verdict.UNVERIFIED, missing
    variants = tuple(
        {k: v.get(k) for k in ("name", "settings", "why", "error") if v.get(k) is not None and v.get(k) != ""}
        for v in old.get("variants") or ()
    )
    return ClassVerdict(override_id, verdict, tuple(outcomes), detail, seconds, built_from(old), variants, given=given)


def _outcomes(old: ResultDocument, new: ResultDocument, same_inputs: bool) -> list[ScenarioOutcome]:
    """Each scenario the old side ran, compared with the new side's run of it (a missing one is an error there);
    the extensions checked against their reference, and the repairs scoped to the whole class."""
    new_by_name = {s["name"]: s for s in new.get("scenarios", [])}
    optional = frozenset(old.get("forward_optional") or ()) | absorbed_nones(old)
    outcomes = []
    for scenario in old.get("scenarios", []):
        other = new_by_name.get(
            scenario["name"], {"name": scenario["name"], "status": WorkerStatus.ERROR, "error": "missing"}
        )
        outcomes.append(compare_scenario(scenario, other, same_inputs=same_inputs, optional=optional))
    refused = frozenset(
        str(s["name"]) for s in old.get("scenarios", []) if SIGNATURE_REFUSAL in str(s.get("error", ""))
    )
    outcomes = consistent_extensions(
        outcomes, new_by_name, caches=bool(old.get("caches", True)), refused_by_signature=refused
    )
    return scoped_repairs(outcomes, old.get("scenarios", []))


def _verdict(outcomes: Sequence[ScenarioOutcome]) -> tuple[Verdict, str]:
    """The class's verdict from its scenarios' outcomes (a crash first, then other tokens or scores, then other
    prepared inputs), and its detail: the first scenario of the status that decided it. The scenarios the new code
    extends are no detail of it (``ClassVerdict.extended`` lists them, whatever the verdict)."""
    deciding = deciding_outcome(outcomes)
    if deciding is not None:
        return FAILING[deciding.status], f"{deciding.name}: {deciding.detail}"
    if any(o.status is ScenarioStatus.SAME for o in outcomes):
        return Verdict.IDENTICAL, ""
    return Verdict.UNVERIFIED, "no scenario ran on either side"


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


def uncalled(scenarios: Sequence[ScenarioDocument], same: set[str]) -> str:
    """Why scenarios that agree never ran the change: none of them called the method under test (a composite's
    decoder it never drove, a ``generate()`` of the class's own that asks no prepared inputs). A class that caches
    already needs a cached call (``missing_evidence``); one that cannot would be identical on outputs alone."""
    if any(scenario.get("calls") for scenario in scenarios if scenario["name"] in same):
        return ""
    return "no scenario that ran the same on both sides called its prepare_inputs_for_generation: the change never ran"


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


def built_from(side: ResultDocument) -> str:
    """What the building side said about its tiny model: the tester it used, or a generic shrink."""
    notes = side.get("notes") or []
    found = next((str(note) for note in notes if str(note).startswith("config from ")), None)
    if found is not None:
        return found
    return "config class defaults, shrunk" if _status(side) is WorkerStatus.OK else ""

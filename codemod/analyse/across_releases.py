"""Repair candidates across releases: an override kept only because the target itself breaks it.

From 4.54.0 ``generate()`` makes the cache before the first step (from 4.56.0 one that is true while empty), so an
override that cuts the ids to the last token under ``if past_key_values is not None:`` (``if past_key_values:``) cuts
the prompt on the target (``rules.slice_to_last_token``, PI103): the scan keeps it, as the old code is no longer
what the mixin does. On the release the code was written for (``apply --verify --from F``, F before that era) the
cut ran only after the first step: there the override was generic, and on the target its generic plan (delete it, or
reduce it to ``super()``) is what repairs it. Such a plan is unsafe, so it is proposed only where the three-sided
verdict decides (``codemod.verify.releases``): reference = old code on F, baseline = old code on the target, and it
stays only when that verdict keeps it, never unverified. Plain ``diff``/``apply`` and same-release verification keep
the override as the scan says.

Pure: a function of the scan and the two releases' names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from packaging.version import InvalidVersion, Version

from codemod.analyse.classify import Action, Finding, Reason, classify_override
from codemod.analyse.mixin import MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import ReasonKind
from codemod.rules.slice_to_last_token import CACHE_BEFORE_FIRST_STEP
from codemod.rules.slice_to_last_token import RULE as LAST_TOKEN

#: the releases from which ``generate()`` makes the cache before the first step for remote code, and whether the
#: still-empty cache is true (``codemod.analyse.mixin``; read from the releases' own ``generate()`` by the network
#: test of ``tests/test_cache_before_first_step.py``), newest last
ERAS: tuple[tuple[Version, str], ...] = ((Version("4.54.0"), "falsy"), (Version("4.56.0"), "truthy"))

#: how the note of a repair candidate begins (``candidates`` finds them by it)
CANDIDATE = "a repair candidate across releases"
#: the note a repair candidate carries: what is tried, and why it is safe only where verified
CANDIDATE_NOTE = (
    CANDIDATE + ": on {release} generate() made no cache{kind} before the first step, so "
    "the cut ran only after it and the override was generic there; the target's cache cuts the prompt, so its "
    "generic plan is tried, kept only where the three-sided verdict proves it"
)


def cache_facts(release: str) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...] | None:
    """The mixin's ``cache-before-first-step`` fact on ``release`` (empty: it makes none); None: not a version."""
    try:
        version = Version(release)
    except InvalidVersion:
        return None
    empty = next((truth for since, truth in reversed(ERAS) if version >= since), None)
    if empty is None:
        return ()
    return ((CACHE_BEFORE_FIRST_STEP, (("empty", empty), ("where", "generate(), before the first step"))),)


def with_cache_facts(
    profile: MixinProfile, facts: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
) -> MixinProfile:
    """``profile`` with its ``cache-before-first-step`` fact replaced by ``facts`` (another release's)."""
    others = tuple(b for b in profile.generate_behaviours if b[0] != CACHE_BEFORE_FIRST_STEP)
    behaviours = (profile.behaviours - {CACHE_BEFORE_FIRST_STEP}) | {name for name, _ in facts}
    return dataclasses.replace(profile, generate_behaviours=others + facts, behaviours=behaviours)


def era_cut(finding: Finding) -> bool:
    """Whether the scan keeps ``finding`` with PI103's cut among its reasons (the target's cache may be why)."""
    return finding.action is Action.KEEP and any(
        r.rule == LAST_TOKEN.code and r.kind is ReasonKind.BESPOKE for r in finding.reasons
    )


def repair_candidate(finding: Finding, profile: MixinProfile, from_release: str) -> Finding | None:
    """The plan ``finding``'s override gets judged with ``from_release``'s cache fact in place of the target's,
    marked as a repair candidate; None where that changes nothing (another reason keeps it too, or the older
    release makes the same cache)."""
    facts = cache_facts(from_release)
    if facts is None or not era_cut(finding):
        return None
    again = classify_override(finding.override, with_cache_facts(profile, facts))
    if again.action is Action.KEEP:
        return None
    kind = "" if not facts else " that is true while empty"
    note = Reason(ReasonKind.NOTE, CANDIDATE_NOTE.format(release=from_release, kind=kind))
    # the cut on the target's prompt is what differs in the standard flow: only verification proves the plan
    flow = tuple(r.text for r in finding.reasons if r.rule == LAST_TOKEN.code and r.kind is ReasonKind.BESPOKE)
    return dataclasses.replace(again, reasons=(*again.reasons, note), flow=(*again.flow, *flow))


def across_releases(result: ScanResult, from_release: str | None) -> ScanResult:
    """``result`` as a migration from ``from_release`` onto its target plans it: each override kept only because
    the target's ``generate()`` makes the cache before the first step gets its generic plan, as a repair candidate
    (``repair_candidate``). The scan as it is without ``from_release``."""
    if from_release is None:
        return result
    findings = [repair_candidate(f, result.profile, from_release) or f for f in result.findings]
    if all(new is old for new, old in zip(findings, result.findings, strict=True)):
        return result
    return dataclasses.replace(result, findings=tuple(findings))


def candidates(findings: Sequence[Finding]) -> frozenset[str]:
    """The overrides whose change is a repair candidate: kept only where verified, never unverified."""
    return frozenset(
        f.override.id
        for f in findings
        if any(r.kind is ReasonKind.NOTE and r.text.startswith(CANDIDATE) for r in f.reasons)
    )

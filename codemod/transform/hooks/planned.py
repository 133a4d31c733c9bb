"""The plan with the hooks: the members' findings as the hooked mixin classifies them, and the hook edits."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from codemod.analyse.classify import Action, Category, Extra, Finding, Reason
from codemod.analyse.mixin import MIXIN_CLASS, MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import (
    ExtraHow,
    Held,
    HeldCause,
    ReasonKind,
    Repair,
)
from codemod.transform.hooks.members import reduced_its_own_way, signature_kept
from codemod.transform.hooks.model import Cluster, HookReport, Member
from codemod.transform.hooks.own_condition import own_condition
from codemod.transform.hooks.parts import within
from codemod.transform.hooks.vocabulary import MIN_MODELS, NEEDS_METHOD, Change, HookKind
from codemod.transform.plan import Edit, EditKind, Plan, Trim, initial_plan


def hooked_findings(result: ScanResult, report: HookReport, keep_signature: Iterable[str] = ()) -> tuple[Finding, ...]:
    """The findings as the mixin with the applied hooks would classify them: a member's hooked keys are
    the mixin's, so its extras lose them (none left: generic, deleted; ``keep_signature``: trimmed instead)."""
    keep_signature = set(keep_signature)
    out = []
    for f in result.findings:
        moved = report.whole_body(f.override.id)
        if moved is not None:
            out.append(_moved_whole(f, moved))
            continue
        hooked = report.hooked_keys(f.override.id)
        if not hooked:
            out.append(f)
            continue
        out.append(_hooked(f, hooked, result.profile, report, keep=f.override.id in keep_signature))
    return tuple(out)


def _moved_whole(f: Finding, moved: Cluster) -> Finding:
    """``f`` as the mixin classifies it once ``moved``, a hook, runs the override's whole body: reduced to super()."""
    note = Reason(ReasonKind.NOTE, f"its whole body runs in the mixin: the {moved.name} hook ({moved.description})")
    guards = next(m.guards for m in moved.members if m.override == f.override.id)
    kept: tuple[Extra, ...] = ()
    notes = [note]
    # its own checks stay in front of super(), where they run first, as they did before the hook's code
    if guards:
        kept = (Extra("", ExtraHow.KEEP_STATEMENTS, ",".join(map(str, guards))),)
        notes.append(
            Reason(
                ReasonKind.NOTE,
                "kept as is in front of super(): its own check of the config (the "
                "hook's code checks the same condition its own way)",
            )
        )
    return dataclasses.replace(f, action=Action.REDUCE, extras=kept, reasons=(*f.reasons, *notes), flow=())


def _hooked(
    f: Finding, hooked: Mapping[str, Cluster], profile: MixinProfile, report: HookReport, *, keep: bool
) -> Finding:
    """``f`` as the mixin classifies it once the clusters in ``hooked`` (key -> cluster) do those keys for it
    (``keep``: its signature matters, so it is trimmed rather than deleted)."""
    remaining = tuple(
        e for e in f.extras if e.key not in hooked or e.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE)
    )
    lines = {out_.line for out_ in f.override.analysis.outputs if out_.key in hooked}
    reasons = tuple(
        r
        for r in f.reasons
        if not (r.kind is ReasonKind.EXTRA and (r.line in lines or (r.text.split() or [""])[0] in hooked))
    )
    reasons += tuple(
        Reason(
            ReasonKind.NOTE,
            f"{', '.join(sorted(k for k, c in hooked.items() if c is cluster))}: "
            f"the mixin's {cluster.name} hook ({cluster.description})",
        )
        for cluster in dict.fromkeys(hooked.values())
    )
    provided = {k for k, c in hooked.items() if c.kind is HookKind.DEFAULT}
    # what the mixin does not do (Fuyu's ids cut to the last token) keeps the override: only trimmed; the
    # statements of a condition of its own move into its _generation_needs_first_step_inputs (a member's method)
    moves = report.moves_own_condition(f.override.id)
    condition = own_condition(f.override, profile) if moves else None
    spans = condition.spans if condition is not None else ()
    own = any(r.kind.keeps and not within(r.line, spans) for r in f.reasons)
    if condition is not None:
        reasons = tuple(r for r in reasons if not (r.kind.keeps and within(r.line, spans)))
        reasons += (
            Reason(
                ReasonKind.NOTE,
                f"its own condition ({condition.local}) moves into {NEEDS_METHOD}, "
                "which the mixin asks before it prepares anything",
            ),
        )
    if (
        not remaining
        and not own
        and not reduced_its_own_way(f)
        and not signature_kept(f.override.analysis, profile, provided)
        and not keep
    ):
        return dataclasses.replace(f, category=Category.GENERIC, action=Action.DELETE, reasons=reasons, extras=())
    if f.override.analysis.delegation is None:
        return dataclasses.replace(f, action=Action.REDUCE, reasons=reasons, extras=remaining)
    # already super(): trimmed below, not by the planner
    return dataclasses.replace(f, action=Action.KEEP, reasons=reasons, extras=remaining)


def hooked_result(result: ScanResult, report: HookReport, keep_signature: Iterable[str] = ()) -> ScanResult:
    return dataclasses.replace(result, findings=hooked_findings(result, report, keep_signature))


def plan_with_hooks(
    result: ScanResult,
    report: HookReport,
    repairs: dict[str, Repair] | None = None,
    *,
    mark_kept: bool = False,
    hold_unproven: bool = False,
    keep_signature: Mapping[str, Trim] | None = None,
) -> Plan:
    """The migration plan of ``result`` with the applied hooks: each member's shard gets its change
    (the planner's deletion or reduction, or the trim), the class attribute, and the hook in the mixin
    (the same edit in every member's shard, written once: the hook stays as long as one member does).
    ``keep_signature``: members trimmed (of these statements) rather than deleted (:func:`signature_trims`)."""
    kept = dict(keep_signature or {})
    plan = initial_plan(
        hooked_result(result, report, kept),
        repairs,
        mark_kept=mark_kept,
        hold_unproven=hold_unproven,
        trims={**trims(report), **kept},
        moved_whole=report.moved_whole(),
        left_out=left_out(report),
    )
    return extend(plan, report)


def left_out(report: HookReport) -> dict[str, frozenset[str]]:
    """Override id -> the keys the applied hooks make the mixin leave out for its class (always: none of them
    reaches forward)."""
    out: dict[str, set[str]] = {}
    for cluster in report.applied():
        if cluster.kind is HookKind.DROPPED:
            for member in cluster.members:
                if member.applicable:
                    out.setdefault(member.override, set()).update(member.keys)
    return {oid: frozenset(keys) for oid, keys in out.items()}


def trims(report: HookReport) -> dict[str, Trim]:
    """Override id -> what to remove, for the applicable members that call ``super()`` already (the statements
    every hook it takes does in the mixin now, and the parameters only they read)."""
    removed: dict[str, set[int]] = {}
    unnamed: dict[str, set[str]] = {}
    for cluster in report.applied():
        for member in cluster.members:
            if member.applicable and member.change is Change.TRIM:
                removed.setdefault(member.override, set()).update(member.removed)
                unnamed.setdefault(member.override, set()).update(member.unnamed)
    return {oid: Trim(tuple(sorted(statements)), tuple(sorted(unnamed[oid]))) for oid, statements in removed.items()}


def extend(plan: Plan, report: HookReport) -> Plan:
    """``plan`` (made from the hooked findings, with the trims) with the hook edits added to the shards of
    the members it changes: a member the planner keeps (held back, refused) takes no hook."""
    if report.mixin_file is None:
        return plan
    members: dict[str, list[tuple[Cluster, Member]]] = {}
    for cluster in report.applied():
        for member in cluster.members:
            if member.applicable:
                members.setdefault(member.override, []).append((cluster, member))
    actions = dict(plan.actions)
    shards = []
    for shard in plan.shards:
        edits = list(shard.edits)
        for oid in shard.members:
            if oid not in members or actions.get(oid, Action.KEEP) is Action.KEEP:
                continue
            for cluster, member in members[oid]:
                assert cluster.hook is not None  # an applied cluster has one
                edits.append(
                    Edit(
                        member.file,
                        member.class_name,
                        EditKind.SET_ATTRIBUTE,
                        oid,
                        f"takes the mixin's {cluster.name} hook",
                        member.assignment,
                    )
                )
                if member.method:
                    edits.append(
                        Edit(
                            member.file,
                            member.class_name,
                            EditKind.ADD_METHOD,
                            oid,
                            f"its own condition, asked by the mixin's {cluster.name} hook",
                            member.method,
                            keep=member.moved,
                        )
                    )
                edits.append(
                    Edit(
                        report.mixin_file,
                        MIXIN_CLASS,
                        EditKind.HOOK,
                        oid,
                        f"the {cluster.name} hook ({cluster.description})",
                        hook=cluster.hook.code(),
                    )
                )
        shards.append(dataclasses.replace(shard, edits=tuple(edits)))
    hoist = plan.hoist
    if hoist is None and report.hoisted and any(a is not Action.KEEP for a in actions.values()):
        hoist = _hoist(report.mixin_file)
    return dataclasses.replace(plan, shards=tuple(shards), hoist=hoist)


def _hoist(mixin_file: str) -> Edit:
    from codemod.rules.generic_mixin import HOIST_SOURCE

    return Edit(
        mixin_file,
        MIXIN_CLASS,
        EditKind.HOIST,
        None,
        "the mixin is a stub: install the generic implementation first",
        HOIST_SOURCE,
    )


def failing_clusters(plan: Plan, report: HookReport, failed: Iterable[str]) -> dict[str, Held]:
    """Shards to revert besides the failed ones: the members of a hook that, without the failed members,
    fewer than ``MIN_MODELS`` models would still use (the hook is not worth adding for them)."""
    failed = set(failed)
    actions = dict(plan.actions)
    shard_of = {m: s.id for s in plan.shards for m in s.members}
    out: dict[str, Held] = {}
    for cluster in report.applied():
        if cluster.name in report.in_mixin:
            continue  # the mixin had it before this plan: it stays, and a member costs it nothing
        staying = [
            m
            for m in cluster.members
            if m.applicable and m.override not in failed and actions.get(m.override, Action.KEEP) is not Action.KEEP
        ]
        if staying and len({m.model for m in staying}) < MIN_MODELS:
            why = (
                f"reverted: the {cluster.name} hook would serve {len({m.model for m in staying})} model(s) once the "
                f"failed members are reverted (at least {MIN_MODELS} needed)"
            )
            for shard in (shard_of[m.override] for m in staying if m.override in shard_of):
                out.setdefault(shard, Held(shard, HeldCause.HOOK_TOO_SMALL, why))
    return out


def shards_of_members(plan: Plan, report: HookReport) -> set[str]:
    """The shards that hold an applied hook's members."""
    ids = {m.override for c in report.applied() for m in c.members if m.applicable}
    return {s.id for s in plan.shards if set(s.members) & ids}

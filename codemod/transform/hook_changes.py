"""What the mined hooks would change, file by file, computed in memory: the diffs ``codemod hooks`` shows.

The plan is ``hooks.plan_with_hooks`` restricted to the members' shards (the rest of the migration
is ``apply``'s business), settled as ``apply`` settles every plan (files that would not compile or add a
pyflakes problem, copies that would break: their shards held back). Each member's diff is its own
file rewritten with its own edits; each hook's diff is the mixin with that hook alone (on top of the
generic implementation ``apply`` installs first, for a stub mixin). Lines saved are counted from
those diffs: the lines a member's change removes less those it adds (the class attribute).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence

from codemod.analyse.classify import Action
from codemod.analyse.scan import ScanResult
from codemod.checkout import Checkout
from codemod.contracts import Held, HeldCause, Vocabulary
from codemod.sources import MIXIN_CLASS
from codemod.style import checkout_line_length
from codemod.transform.apply import Changes, settle
from codemod.transform.hooks import Cluster, HookReport, Member, hooked_result, plan_with_hooks, shards_of_members
from codemod.transform.plan import Edit, EditKind, Plan
from codemod.transform.predict import predicted_repairs
from codemod.transform.rewrite import rewrite_source


class MemberStatus(Vocabulary):
    """What the settled plan made of a cluster's member."""

    APPLIED = "applied"  # rewritten: it takes the hook
    HELD = "held"  # an applicable member the plan held back (a copy, a file that would not compile, ...): ``why``
    NOT_CHANGED = "not changed"  # blocked, or its cluster is a proposal: ``why``


@dataclasses.dataclass(frozen=True)
class MemberChanges:
    member: Member
    status: MemberStatus
    why: str = ""  # why it is held or not changed
    diff: str = ""
    removed: int = 0  # lines the diff removes
    added: int = 0  # lines it adds

    @property
    def lines_saved(self) -> int:
        return self.removed - self.added if self.status is MemberStatus.APPLIED else 0

    def describe(self) -> str:
        return f"{self.status}: {self.why}" if self.why else str(self.status)


@dataclasses.dataclass(frozen=True)
class ClusterChanges:
    cluster: Cluster
    members: tuple[MemberChanges, ...]
    #: the mixin with this hook alone (empty for a proposal)
    mixin_diff: str = ""
    mixin_added: int = 0

    @property
    def lines_saved(self) -> int:
        """What the members' changes save, less what the hook adds to the mixin."""
        return sum(m.lines_saved for m in self.members) - self.mixin_added

    @property
    def member_lines_saved(self) -> int:
        return sum(m.lines_saved for m in self.members)


@dataclasses.dataclass(frozen=True)
class HookChanges:
    report: HookReport
    clusters: tuple[ClusterChanges, ...]
    #: the settled plan of every applied hook together (what ``apply --hooks`` writes of them)
    changes: Changes | None


def _counts(diff: str) -> tuple[int, int]:
    lines = diff.splitlines()
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    return removed, added


def _diff(path: str, old: str, new: str, label: str = "") -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}{label}",
            tofile=f"b/{path}",
        )
    )


def _rewritten(checkout: Checkout, path: str, edits: Sequence[Edit]) -> tuple[str, str] | None:
    """(old text, new text) of ``path`` with ``edits``; None when the rewrite fails."""
    done = rewrite_source(path, (checkout.root / path).read_bytes(), edits, checkout_line_length(checkout, path))
    if done.error is not None:
        return None
    return done.old_text(), done.new_text()


def member_plan(result: ScanResult, report: HookReport) -> Plan:
    """``plan_with_hooks`` with only the shards that hold an applied hook's members, with the repairs the scan
    predicts (``predict``) planned as ``apply --hooks`` plans them: a member's diff is what apply writes for it."""
    plan = plan_with_hooks(result, report, predicted_repairs(result.findings) or None)
    keep = shards_of_members(plan, report)
    return plan.without(
        Held(s.id, HeldCause.NOT_A_HOOK_MEMBER, "not a hook member") for s in plan.shards if s.id not in keep
    )


def compute(result: ScanResult, report: HookReport, jobs: int | None = None) -> HookChanges:
    """The diffs of every cluster: read from the checkout on disk, written nowhere."""
    checkout = result.index.checkout
    changes = settle(hooked_result(result, report), member_plan(result, report), jobs) if report.applied() else None
    plan = changes.plan if changes is not None else None
    actions = dict(plan.actions) if plan is not None else {}
    held = {h.subject: h.detail for h in plan.held} if plan is not None else {}
    dropped = {h.subject: h.detail for h in changes.dropped} if changes is not None else {}
    shard_of = {m: s.id for s in plan.shards for m in s.members} if plan is not None else {}
    edits_of: dict[str, list[Edit]] = {}
    if plan is not None:
        for edit in plan.edits():
            if edit.override_id is not None and edit.kind is not EditKind.HOOK:
                edits_of.setdefault(edit.override_id, []).append(edit)
    out = []
    for cluster in report.clusters:
        members = []
        for member in cluster.members:
            if not cluster.applied or not member.applicable:
                members.append(MemberChanges(member, MemberStatus.NOT_CHANGED, member.why or cluster.not_applied))
                continue
            if actions.get(member.override, Action.KEEP) is Action.KEEP:
                why = held.get(member.override) or dropped.get(shard_of.get(member.override, "")) or "kept by the plan"
                members.append(MemberChanges(member, MemberStatus.HELD, why))
                continue
            own = [e for e in edits_of.get(member.override, []) if e.file == member.file]
            texts = _rewritten(checkout, member.file, own) if own else None
            if texts is None:
                members.append(MemberChanges(member, MemberStatus.HELD, "its file does not rewrite"))
                continue
            diff = _diff(member.file, *texts)
            removed, added = _counts(diff)
            members.append(MemberChanges(member, MemberStatus.APPLIED, "", diff, removed, added))
        mixin_diff, mixin_added = "", 0
        if cluster.applied and cluster.hook is not None and report.mixin_file is not None:
            hook = Edit(report.mixin_file, MIXIN_CLASS, EditKind.HOOK, None, cluster.name, hook=cluster.hook.code())
            base = [plan.hoist] if plan is not None and plan.hoist is not None else []
            before = _rewritten(checkout, report.mixin_file, base) if base else None
            after = _rewritten(checkout, report.mixin_file, [*base, hook])
            if after is not None:
                old = before[1] if before is not None else after[0]
                label = " (after the generic implementation apply installs)" if base else ""
                mixin_diff = _diff(report.mixin_file, old, after[1], label)
                mixin_added = _counts(mixin_diff)[1] - _counts(mixin_diff)[0]
        out.append(ClusterChanges(cluster, tuple(members), mixin_diff, mixin_added))
    return HookChanges(report, tuple(out), changes)

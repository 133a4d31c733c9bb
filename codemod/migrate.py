"""Migrate: scan → plan → apply → verify → revert what is not proven unchanged.

The whole job on one checkout, as ``codemod apply --verify`` and the PR bot run it. The base of the
comparison is the checkout's HEAD, so the tree must be clean (or the caller accepts that its
uncommitted changes are part of the base). A class that does not verify takes its whole shard
(copy group, modular family) back to the original text; the result lists what stays and why the
rest went.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from codemod.analyse.across_releases import across_releases, candidates
from codemod.analyse.classify import Action, Finding
from codemod.analyse.index import Override
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import Checkout, resolve
from codemod.contracts import Held, HeldCause, OriginKind, Repair, Verdict
from codemod.migration import MIXIN_MODEL, ClassOutcome, Migration, ModelOutcome
from codemod.transform import hooks as hook_stage
from codemod.transform.apply import Changes, WriteError, restore, settle, write
from codemod.transform.formatting import CUT
from codemod.transform.plan import EditKind, Plan, Shard, Trim, extras_summary, initial_plan
from codemod.transform.predict import predicted_repairs
from codemod.verify.compare import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.releases import KEPT
from codemod.verify.reuse import VerdictCache
from codemod.verify.runner import Progress, Target
from codemod.verify.session import VerifyReport, targets_from_plan, verify_change, with_written_needs
from codemod.writes import clear_unverified, mark_unverified, stopped


@dataclasses.dataclass(frozen=True)
class MigrationRun:
    """Everything a migration did: what the CLI reports and what ``Migration`` publishes."""

    result: ScanResult
    first: Changes  # what was applied and verified
    final: Changes  # what stays on disk
    report: VerifyReport
    #: the overrides whose change was reverted, in id order
    reverted: tuple[Held, ...]

    def migration(self) -> Migration:
        return to_migration(self.result, self.final, self.report, self.reverted)


def restore_originals(checkout: Checkout, originals: dict[str, bytes]) -> None:
    lost = restore(checkout, originals)
    if lost:
        raise WriteError(f"could not put back {', '.join(lost)}")


@contextlib.contextmanager
def unverified_while(checkout: Checkout, originals: dict[str, bytes]) -> Iterator[None]:
    """Around writing changes and verifying them: a note of the unverified files for as long as it lasts (what a
    kill leaves is reported by the next run); on any error the ``originals`` (path -> bytes, as the block leaves
    them) are put back, and Ctrl-C ends the run with one line that says so."""
    mark_unverified(checkout.root, originals)
    try:
        yield
    except BaseException as error:
        restore_originals(checkout, originals)
        stopped(error, originals)
    clear_unverified(checkout.root)


def failing(report: VerifyReport, keep_unverified: bool, proven_only: frozenset[str] = frozenset()) -> dict[str, str]:
    """Override id -> reason, for every verdict that does not let the change stay (``proven_only``: changes kept
    only where verified, whatever ``keep_unverified`` says)."""
    out: dict[str, str] = {}
    heirs: dict[str, list[Verdict]] = {}
    for verdict in report.verdicts:
        if verdict.inherits_from:
            heirs.setdefault(verdict.inherits_from, []).append(verdict.verdict)
    for verdict in report.verdicts:
        unverified_kept = keep_unverified and verdict.changed_override not in proven_only
        if verdict.verdict in KEPT or (verdict.verdict is Verdict.UNVERIFIED and unverified_kept):
            continue
        if _abstract_proven_by_heirs(verdict, heirs.get(verdict.override_id, [])):
            continue
        why = f"{verdict.verdict}: {verdict.detail}"
        if verdict.inherits_from:
            why = f"{verdict.override_id.rsplit('::', 1)[1]}, which inherits it: {why}"
        out.setdefault(verdict.changed_override, why)
    return out


#: the words ``verify/tiny/inputs.py`` (run in the release's environment, apart from this package) fails a class with
#: when generate() cannot run on it at all
NO_HEAD = "has no language-model head"


def _abstract_proven_by_heirs(verdict: ClassVerdict, heirs: Sequence[Verdict]) -> bool:
    """A base class no generate() can run on (no language-model head: phi-1.5's MixFormerSequentialPreTrainedModel
    holds the override its causal-LM class runs) is judged by the classes that inherit the change: kept when each
    of them is, and there is at least one."""
    return (
        verdict.verdict is Verdict.UNVERIFIED
        and not verdict.inherits_from
        and NO_HEAD in verdict.detail
        and bool(heirs)
        and all(v in KEPT for v in heirs)
    )


def _shards_to_drop(plan: Plan, failed: dict[str, str], result: ScanResult) -> dict[str, Held]:
    """The shards holding a failed class, also through the modular source a generated class follows."""
    by_id = result.index.by_id()
    linked: dict[str, str] = dict(failed)
    for override_id, reason in failed.items():
        origin = by_id[override_id].generated_from
        if origin is not None and origin.modular_id is not None:
            linked.setdefault(origin.modular_id, reason)
    drops = {}
    for shard in plan.shards:
        hit = next((linked[m] for m in shard.members if m in linked), None)
        if hit is not None:
            drops[shard.id] = Held(shard.id, HeldCause.NOT_VERIFIED, hit)
    return drops


#: classes that verification builds other classes into, or around them (every decoder head also runs as the decoder
#: of an ``EncoderDecoderModel``, and each wrapper runs with a BERT and a GPT-2 decoder, whose own methods give it the
#: mask it passes, see ``verify.usage``): a change to one would be judged together with each decoder's, and a revert
#: of one would leave the decoders judged in a tree that is not the one kept
CONTEXT_CLASSES = ("EncoderDecoderModel", "VisionEncoderDecoderModel", "SpeechEncoderDecoderModel")


def reworded_mark(mark: str, hooked: Iterable[str]) -> str:
    """A mark this tool wrote (``plan.extras_summary``: phrases joined by ``; ``, each naming its key first, as in
    ``image_patches only on the first step``, or after ``drops`` / ``no``), without the phrases of the ``hooked``
    keys, which a hook does now."""
    keys = set(hooked)

    def key_of(phrase: str) -> str:
        words = phrase.split() or [""]
        return words[1] if words[0] in ("drops", "no") and len(words) > 1 else words[0]

    # (a mark read back from a tree may end in the cut that fitted it to its line: no phrase of its own)
    return "; ".join(p for p in mark.split("; ") if key_of(p) not in keys and p != CUT)


def composed_marks(plan: Plan) -> dict[str, str]:
    """Override id -> the ``# Overwritten --`` reason the plan composed for it, whole: the tree has it cut to fit
    its line (``formatting.fitted_mark``), so a later pass re-words this one. The planner gives every changed
    override with a mark a MARK edit (``Planner.shards``), a trim its new reason: the text of either."""
    return {
        e.override_id: e.text
        for shard in plan.shards
        for e in shard.edits
        if e.override_id is not None and e.kind in (EditKind.MARK, EditKind.TRIM) and e.text
    }


def _contexts_alone(plan: Plan, result: ScanResult) -> Plan:
    """The plan without the changes to ``CONTEXT_CLASSES`` when it changes anything else: those are
    made in a run of their own once the rest is settled (``_contexts_after``), against decoders as they stay."""
    by_id = result.index.by_id()
    contexts = [s for s in plan.shards if any(by_id[m].class_name in CONTEXT_CLASSES for m in s.members)]
    if not contexts or len(contexts) == len(plan.shards):
        return plan

    def models(shard: Shard) -> str:
        return ",".join(
            sorted({by_id[m].model or "" for m in shard.members if by_id[m].class_name in CONTEXT_CLASSES})
        )

    return plan.without(
        Held(
            s.id,
            HeldCause.VERIFIED_ALONE,
            f"other classes are verified as its decoder: verify its change alone (--only {models(s)})",
        )
        for s in contexts
    )


@dataclasses.dataclass(frozen=True)
class MigrationOptions:
    """What a migration changes and keeps: the models (``only`` / ``skip``); ``keep_unverified``: keep the
    changes to classes that could not be verified; ``mark_kept``: also mark the overrides that stay as they
    are; ``hooks``: with the hooks mined from the overrides (``codemod.transform.hooks``), a member that fails
    taking its part of the hook with it, and a hook that fewer than three models would keep going altogether;
    ``contexts_after``: the changes held back for a run of their own (``CONTEXT_CLASSES``) are made in one
    once the rest is settled (``_contexts_after``)."""

    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    keep_unverified: bool = False
    mark_kept: bool = False
    hooks: bool = False
    contexts_after: bool = True


MIGRATION = MigrationOptions()
VERIFY = VerifyOptions()


def run_migration_on(
    checkout: Checkout,
    options: MigrationOptions = MIGRATION,
    verifying: VerifyOptions = VERIFY,
    *,
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
    scanned: ScanResult | None = None,
    reuse: VerdictCache | None = None,
) -> MigrationRun:
    """The whole job, verified as ``verifying`` says (for model code outside transformers: the releases the
    new and the old code run on, see ``verify_change``). ``scanned``: the checkout's scan when the caller
    has it (judged against the target it chose); ``reuse``: the verdicts of earlier rounds (``verify.reuse``)."""
    result = (scanned if scanned is not None else scan(checkout)).select(options.only, options.skip)
    # across releases, an override kept only because the target itself breaks it is tried as a repair
    result = across_releases(result, verifying.from_release)
    reuse = VerdictCache() if reuse is None else reuse
    job = _Job(checkout, result, options, verifying, progress, say, reuse)
    migrated = job.first_pass()
    if options.hooks and migrated.final.changed:
        migrated = _hooks_after(migrated, options, verifying.jobs, job.verify)
    if not options.contexts_after:
        return migrated

    def alone(held: frozenset[str]) -> MigrationRun:
        # the tree as this run leaves it, judged against what this run was (its mixin, now written, for a stub);
        # only the overrides held back, not what this run already changed
        current = scan(checkout, target=result.profile.target)
        current = dataclasses.replace(current, findings=tuple(f for f in current.findings if f.override.id in held))
        again = dataclasses.replace(options, only=(), skip=(), hooks=False, contexts_after=False)
        return run_migration_on(checkout, again, verifying, progress=progress, say=say, scanned=current, reuse=reuse)

    return _contexts_after(migrated, alone)


class _Job:
    """One pass of a migration while it runs: the scan and its mined hooks, the repairs verification found so
    far, and the original bytes of every file written (put back on failure, and read by ``verify``)."""

    def __init__(
        self,
        checkout: Checkout,
        result: ScanResult,
        options: MigrationOptions,
        verifying: VerifyOptions,
        progress: Progress | None,
        say: Callable[[str], None] | None,
        reuse: VerdictCache,
    ) -> None:
        self.checkout, self.result, self.options, self.verifying = checkout, result, options, verifying
        self.progress, self.say, self.reuse = progress, say, reuse
        self.mined = hook_stage.mine(result) if options.hooks else None
        self.planned = hook_stage.hooked_result(result, self.mined) if self.mined is not None else result
        self.originals: dict[str, bytes] = {}
        # what the scan's facts already say verification would repair is planned from the first round
        self.repairs: dict[str, Repair] = predicted_repairs(result.findings)
        #: the repair candidates across releases (``analyse.across_releases``): never kept unverified
        self.proven_only = candidates(result.findings)

    def make_plan(self, repairs: dict[str, Repair] | None = None) -> Plan:
        mark_kept = self.options.mark_kept
        if self.mined is None:
            return _contexts_alone(initial_plan(self.result, repairs, mark_kept=mark_kept), self.result)
        plan = hook_stage.plan_with_hooks(self.result, self.mined, repairs, mark_kept=mark_kept)
        return _contexts_alone(plan, self.result)

    def verify(
        self, changes: Changes, which: set[str] | None = None, planned_from: ScanResult | None = None
    ) -> VerifyReport:
        planned_from = self.result if planned_from is None else planned_from
        targets, not_run = targets_from_plan(planned_from, changes.plan)
        if which is not None:
            # a class that inherits a re-planned override runs its new code too: its verdict on the old one is stale
            targets = [t for t in targets if t.override_id in which or t.inherits_from in which]
        # and what `codemod verify` on the written tree asks of each (read from the files of these targets only): the
        # plan's needs miss statements a hook trim leaves in place
        targets = with_written_needs(planned_from, targets, self.originals)
        # a class whose code (and what it runs through) no round changed since an earlier one keeps that verdict
        self.reuse.remember_base({**{r.path: r.old for r in changes.rewrites if r.changed}, **self.originals})

        def run(chosen: list[Target]) -> VerifyReport:
            options, progress, say = self.verifying, self.progress, self.say
            return verify_change(self.checkout, chosen, options=options, progress=progress, say=say, not_run=not_run)

        report = self.reuse.verified(self.checkout.root, targets, self.verifying, not_run, run)
        given, reused = self.reuse.rounds[-1]
        if reused and self.say is not None:
            self.say(f"{reused} of {given} classes unchanged since an earlier round: their verdicts stand")
        return report

    def rewrite(self, plan: Plan) -> Changes:
        """Back to the original text, then the plan's changes (settle reads the files from disk)."""
        restore_originals(self.checkout, self.originals)
        changes = settle(self.planned, plan, self.verifying.jobs)
        self.originals.update({r.path: r.old for r in changes.rewrites if r.changed and r.path not in self.originals})
        write(self.checkout, changes)
        return changes

    def first_pass(self) -> MigrationRun:
        """Apply the plan, verify it, repair what differs only by whole keys and revert what still differs."""
        first = settle(self.planned, self.make_plan(self.repairs or None), self.verifying.jobs)
        self.originals = {r.path: r.old for r in first.rewrites if r.changed}
        with unverified_while(self.checkout, self.originals):  # rewrite() adds the files it writes to originals
            write(self.checkout, first)
            current, report = self.repaired(first, self.verify(first))
            failed = failing(report, self.options.keep_unverified, self.proven_only)
            final, hook_drops = self.without_failed(current, failed)
        reverted = _reverted(current.plan, final.plan, failed, hook_drops)
        return MigrationRun(self.result, first, final, report, tuple(reverted[m] for m in sorted(reverted)))

    def repaired(self, current: Changes, report: VerifyReport) -> tuple[Changes, VerifyReport]:
        """ "Reduced until identical": where the only difference is keys the mixin adds (or a key the forward
        requires that it omits), the override is reduced to super() with that fixed, and those classes are
        verified again; a reduction whose cut (the ids slicing left to the mixin) does not verify is tried as
        it was without the cut, the slicing kept in its statements, before it goes altogether."""
        current, report = self.grow(_repairs(report, self.result), current, report)
        failed = failing(report, self.options.keep_unverified, self.proven_only)
        cut = {e.override_id for e in current.plan.edits() if e.cuts and e.override_id in failed}
        if not cut:
            return current, report
        # a generated class's modular source is planned uncut with it, so both files agree (as ``_repairs`` does)
        uncut = {
            oid: self.repairs.get(oid, Repair()) | Repair(uncut=True)
            for oid in sorted(_with_modular_sources(cut, self.result.index.by_id()))
        }
        self.repairs.update(uncut)
        current = self.rewrite(self.make_plan(self.repairs))
        again = self.verify(current, set(uncut))
        return self.grow(_repairs(again, self.result), current, _merge(report, again))

    def grow(self, pending: dict[str, Repair], current: Changes, report: VerifyReport) -> tuple[Changes, VerifyReport]:
        """A repair can uncover the next difference (a forward that crashed at the first step without a key
        reaches the second, where the ids differ): the classes that still differ only by whole keys get the
        union of what each round found, a few rounds at most."""
        for _ in range(REPAIR_ROUNDS):
            grown = {oid: self.repairs[oid] | r if oid in self.repairs else r for oid, r in pending.items()}
            grown = {oid: r for oid, r in grown.items() if r != self.repairs.get(oid)}
            if not grown:
                break
            self.repairs.update(grown)
            current = self.rewrite(self.make_plan(self.repairs))
            again = self.verify(current, set(grown))
            report = _merge(report, again)
            pending = _repairs(again, self.result)
        return current, report

    def without_failed(self, current: Changes, failed: dict[str, str]) -> tuple[Changes, dict[str, Held]]:
        """The tree with every shard holding a failed class (and, with hooks, every hook it breaks) put back;
        the hook clusters dropped, by shard."""
        if not failed:
            return current, {}
        drops = _shards_to_drop(current.plan, failed, self.result)
        hook_drops: dict[str, Held] = {}
        if self.mined is not None:
            hook_drops = hook_stage.failing_clusters(current.plan, self.mined, failed)
            for shard, held in hook_drops.items():
                drops.setdefault(shard, held)
        return self.rewrite(current.plan.without(drops.values(), "reverted: verification failed")), hook_drops


def _reverted(current: Plan, final: Plan, failed: dict[str, str], hook_drops: dict[str, Held]) -> dict[str, Held]:
    """Override id -> why its change went: its own failure, its hook's, or its shard's."""
    kept = {s.id for s in final.shards}
    return {
        m: (
            Held(m, HeldCause.NOT_VERIFIED, failed[m])
            if m in failed
            else dataclasses.replace(hook_drops[s.id], subject=m)
            if s.id in hook_drops
            else Held(m, HeldCause.WITH_ITS_SHARD, "reverted with its shard")
        )
        for s in current.shards
        if s.id not in kept
        for m in s.members
    }


def _contexts_after(run: MigrationRun, alone: Callable[[frozenset[str]], MigrationRun]) -> MigrationRun:
    """The changes ``_contexts_alone`` held back, made now in a run of their own (``alone``: the whole job on those
    overrides, the tree as this run leaves it): each decoder is then as it stays, changed or reverted, and the
    wrapper is verified around it against the base like any class. What that run reverts is reported with the
    rest; what it keeps joins this run's change."""
    waiting = frozenset(h.subject for h in run.final.plan.held if h.cause is HeldCause.VERIFIED_ALONE)
    if not waiting:
        return run
    second = alone(waiting)
    plan = dataclasses.replace(
        run.final.plan,
        held=tuple(h for h in run.final.plan.held if h.subject not in waiting)
        + tuple(h for h in second.final.plan.held if h.subject in waiting),
    )
    final = _combined(dataclasses.replace(run.final, plan=plan), second.final)
    reverted = {h.subject: h for h in (*run.reverted, *second.reverted)}
    return MigrationRun(
        run.result,
        run.first,
        final,
        _merge(run.report, second.report, add=True),
        tuple(reverted[s] for s in sorted(reverted)),
    )


def _hooks_after(
    run: MigrationRun,
    options: MigrationOptions,
    jobs: int,
    verify: Callable[[Changes, set[str] | None, ScanResult], VerifyReport],
) -> MigrationRun:
    """The hooks the migrated tree has to offer, verified as the first pass was.

    Verification's repairs write the same few lines into many reductions (the BERT family's decoders drop the
    encoder states and token types their closed dicts never passed): repeated bodies that the scan of the
    pristine tree could not see. The tree as the first pass left it is scanned again and its hooks mined; the
    members' shards are applied (the rest stays as it is), and each changed class is verified against the
    base, the original code, as in the first pass. A member that does not verify goes back to what the first
    pass left, with the hook members it is needed for."""
    checkout = run.result.index.checkout
    result = scan(checkout).select(options.only, options.skip)
    keep_unverified = options.keep_unverified
    # what the first pass reverted failed verification as it stood: not tried again as a hook member
    gone = {h.subject for h in run.reverted}
    result = dataclasses.replace(result, findings=tuple(f for f in result.findings if f.override.id not in gone))
    mined = hook_stage.mine(result)
    if not mined.applied():
        return run

    def plan_for(keep_signature: dict[str, Trim]) -> Plan:
        return _members_plan(result, mined, run.final.plan, keep_signature)

    changes = settle(result, plan_for({}), jobs)
    if not changes.changed:
        return run
    before = {r.path: r.old for r in changes.rewrites if r.changed}  # what the first pass left
    drops: dict[str, Held] = {}
    with unverified_while(checkout, before):
        write(checkout, changes)
        report = verify(changes, None, result)
        failed = failing(report, keep_unverified)
        # a deletion that changed what generate() does through the signature (it now takes inputs_embeds the old
        # signature refused, or lost a default a composite's decoder relied on) is tried again as a trim
        retry = hook_stage.signature_trims(mined, result, failed)
        if retry:
            restore_originals(checkout, before)
            changes = settle(result, plan_for(retry), jobs)
            write(checkout, changes)
            report = _merge(report, verify(changes, set(retry), result))
            failed = failing(report, keep_unverified)
        final = changes
        if failed:
            drops = _shards_to_drop(changes.plan, failed, result)
            for shard, held in hook_stage.failing_clusters(changes.plan, mined, failed).items():
                drops.setdefault(shard, held)
            restore_originals(checkout, before)
            final = settle(result, changes.plan.without(drops.values(), "reverted: verification failed"), jobs)
            write(checkout, final)
    undone = _hook_changes_undone(changes.plan, final.plan, drops, failed)
    return MigrationRun(
        run.result,
        run.first,
        _combined(run.final, final),
        _merge(run.report, report, add=True),
        tuple(sorted((*run.reverted, *undone), key=lambda h: h.subject)),
    )


def _members_plan(
    result: ScanResult, mined: hook_stage.HookReport, first: Plan, keep_signature: dict[str, Trim]
) -> Plan:
    """The hook members' shards only (everything else stays as the ``first`` pass left it), the marks re-worded:
    a reduction the first pass wrote names what it re-creates in its mark, which a trim re-words (the mark as
    composed: the tree's may be cut)."""
    reduced = {i for i, a in first.actions if a is Action.REDUCE}
    first_marks = composed_marks(first)
    planned = _contexts_alone(hook_stage.plan_with_hooks(result, mined, keep_signature=keep_signature), result)
    members = hook_stage.shards_of_members(planned, mined)
    changing = {m for s in planned.shards if s.id in members for m in s.members}
    remaining: dict[str, Finding] = {
        f.override.id: f for f in hook_stage.hooked_findings(result, mined, keep_signature)
    }

    def mark(oid: str) -> str:
        f = remaining[oid]
        if any(r.kind.keeps for r in f.reasons) and f.override.overwritten:
            # statements of its own stay (Fuyu's ids cut): the first pass's mark, less what the hooks do now
            kept = reworded_mark(first_marks.get(oid) or f.override.overwritten, mined.hooked_keys(oid))
            if kept:
                return kept
        why = hook_stage.signature_kept(f.override.analysis, result.profile)
        return extras_summary(f.extras, f) or (
            f"keeps its signature ({why})" if why else "keeps its signature for generate()"
        )

    shards = tuple(
        dataclasses.replace(
            s,
            edits=tuple(
                dataclasses.replace(e, text=mark(e.override_id))
                if e.kind is EditKind.TRIM and e.override_id in reduced and e.override_id in remaining
                else e
                for e in s.edits
            ),
        )
        for s in planned.shards
        if s.id in members
    )
    return dataclasses.replace(
        planned,
        shards=shards,
        held=(),
        hoist=None,
        actions=tuple((i, a if i in changing else Action.KEEP) for i, a in planned.actions),
    )


def _hook_changes_undone(
    planned: Plan, final: Plan, drops: dict[str, Held], failed: dict[str, str]
) -> tuple[Held, ...]:
    """The members of every hook shard ``planned`` that ``final`` no longer has, with why (their own failure or
    their shard's): what the first pass made of each stays."""
    stays = "; what the first pass made of it stays"
    kept = {k.id for k in final.shards}
    return tuple(
        dataclasses.replace(
            drops[s.id], subject=m, detail=f"its hook change reverted ({failed.get(m, drops[s.id].detail)}){stays}"
        )
        if s.id in drops
        else Held(m, HeldCause.WITH_ITS_SHARD, f"its hook change reverted with its shard{stays}")
        for s in planned.shards
        if s.id not in kept
        for m in s.members
    )


def _combined(first: Changes, second: Changes) -> Changes:
    """Two passes as one change of the pristine tree: each file from its original text to its last one, the
    second pass's actions over the first's, and both passes' edits (the files each model's change touches)."""
    rewrites = {r.path: r for r in first.rewrites}
    for r in second.rewrites:
        if not r.changed:
            continue
        earlier = rewrites.get(r.path)
        rewrites[r.path] = (
            r
            if earlier is None
            else dataclasses.replace(
                r,
                old=earlier.old,
                applied=(*earlier.applied, *r.applied),
                removed_imports=(*earlier.removed_imports, *r.removed_imports),
            )
        )
    changed = {i: a for i, a in second.plan.actions if a is not Action.KEEP}
    shards = {s.id: s for s in first.plan.shards}
    for shard in second.plan.shards:
        earlier_shard = shards.get(shard.id)
        shards[shard.id] = (
            shard
            if earlier_shard is None
            else dataclasses.replace(
                earlier_shard,
                members=tuple(dict.fromkeys((*earlier_shard.members, *shard.members))),
                edits=(*earlier_shard.edits, *shard.edits),
            )
        )
    plan = dataclasses.replace(
        first.plan, shards=tuple(shards.values()), actions=tuple((i, changed.get(i, a)) for i, a in first.plan.actions)
    )
    return Changes(
        plan,
        tuple(rewrites[p] for p in sorted(rewrites)),
        (*first.dropped, *second.dropped),
        tuple(dict.fromkeys((*first.mirrored, *second.mirrored))),
    )


#: verification rounds that test repairs (each re-verifies only the classes whose repair grew)
REPAIR_ROUNDS = 3


def _with_modular_sources(override_ids: Iterable[str], by_id: Mapping[str, Override]) -> set[str]:
    """The overrides and, for a generated class's, the modular source's override it comes from."""
    ids = set(override_ids)
    for oid in list(ids):
        origin = by_id[oid].generated_from
        if (
            origin is not None and origin.kind is OriginKind.MODULAR_CLASS and origin.modular_id is not None
        ):  # always named
            ids.add(origin.modular_id)
    return ids


def _repairs(report: VerifyReport, result: ScanResult) -> dict[str, Repair]:
    """Override id -> the reduction's fixes, for classes whose prepared inputs differ only by whole
    keys. A generated class's modular source gets the same repair, so both files agree."""
    by_id = result.index.by_id()
    out: dict[str, Repair] = {}
    for verdict in report.verdicts:
        if verdict.inherits_from:
            continue  # repaired through the override it inherits, when that one differs itself
        repair = verdict.repair()  # None unless only whole keys differ
        if repair is None:
            continue
        for oid in _with_modular_sources([verdict.override_id], by_id):
            out[oid] = repair
    return out


def _merge(first: VerifyReport, again: VerifyReport, add: bool = False) -> VerifyReport:
    """The first report with the re-verified classes' verdicts replaced (``add``: and the others appended)."""
    newer = {v.override_id: v for v in again.verdicts}
    verdicts = tuple(newer.get(v.override_id, v) for v in first.verdicts)
    if add:
        known = {v.override_id for v in first.verdicts}
        verdicts += tuple(v for v in again.verdicts if v.override_id not in known)
    return dataclasses.replace(first, verdicts=verdicts, seconds=first.seconds + again.seconds)


def verdicts_applied(
    result: ScanResult, changes: Changes, report: VerifyReport, keep_unverified: bool
) -> MigrationRun:
    """``changes`` (written on the checkout, as the verification that made ``report`` saw them: ``apply
    --from-report`` with the merged verdicts of shard jobs) with every shard holding a class that is not identical
    put back, as ``apply --verify`` reverts them, and nothing verified again: no repair is tried. A changed class
    the report has no verdict on is unverified."""
    targets, _ = targets_from_plan(result, changes.plan)
    known = {v.override_id for v in report.verdicts}
    absent = tuple(
        ClassVerdict(
            t.override_id, Verdict.UNVERIFIED, detail="the report has no verdict on it", inherits_from=t.inherits_from
        )
        for t in targets
        if t.override_id not in known
    )
    report = dataclasses.replace(report, verdicts=report.verdicts + absent)
    members = {m for shard in changes.plan.shards for m in shard.members}
    failed = {oid: why for oid, why in failing(report, keep_unverified).items() if oid in members}
    drops = _shards_to_drop(changes.plan, failed, result)
    final = changes
    if drops:
        final = settle(result, changes.plan.without(drops.values(), "reverted: verification failed"))
    write(result.index.checkout, final)
    reverted = _reverted(changes.plan, final.plan, failed, {})
    return MigrationRun(result, changes, final, report, tuple(reverted[m] for m in sorted(reverted)))


def run_migration(root: Path, *, only: list[str], skip: list[str]) -> Migration:
    """The PR bot's entry point: migrate the worktree at ``root`` and say what stayed."""
    return run_migration_on(resolve(root), MigrationOptions(only=only, skip=skip)).migration()


def to_migration(result: ScanResult, changes: Changes, report: VerifyReport, reverted: Sequence[Held]) -> Migration:
    """Per model: the files its kept change touches and each class's finding and verdict."""
    by_id = result.index.by_id()
    findings: dict[str, Finding] = {f.override.id: f for f in result.findings}
    actions = dict(changes.plan.actions)
    files_of: dict[str, set[str]] = {}
    classes_of: dict[str, list[ClassOutcome]] = {}
    if changes.plan.hoist is not None:
        files_of.setdefault(MIXIN_MODEL, set()).add(changes.plan.hoist.file)

    def model_of(override_id: str) -> str:
        o = by_id[override_id]
        return o.model or o.class_name

    leads: dict[str, set[str]] = {}
    for shard in changes.plan.shards:
        # A shard's edits only make sense together (a copy whose source is deleted loses its
        # "# Copied from" marker; a generated file follows its modular source): every model the
        # shard changes lists all of its files, so no pull request publishes half of a shard.
        changed = sorted({model_of(m) for m in shard.members if actions.get(m, Action.KEEP) is not Action.KEEP})
        for edit in shard.edits:
            assert edit.override_id is not None  # a shard's edits are its members' (only the hoist has no id)
            for model in changed or [model_of(edit.override_id)]:
                files_of.setdefault(model, set()).add(edit.file)
        for model in changed:
            leads.setdefault(model, set()).add(model_of(shard.source))
    for override_id, action in actions.items():
        if action is Action.KEEP:
            continue
        o = by_id[override_id]
        finding = findings[override_id]
        verdict = report.verdict_of(override_id)
        generated_verdict = _generated_verdict(result, report, override_id)
        chosen = verdict or generated_verdict
        classes_of.setdefault(o.model or o.class_name, []).append(
            ClassOutcome(
                file=o.file,
                class_name=o.class_name,
                category=finding.category,
                action=action,
                lines_removed=o.lines if action is Action.DELETE else 0,
                verdict=chosen.verdict if chosen else Verdict.UNVERIFIED,
                scenarios=chosen.compared if chosen else (),
                detail=chosen.detail if chosen else dict(report.not_run).get(override_id, ""),
            )
        )
    if MIXIN_MODEL in files_of:
        classes_of.setdefault(MIXIN_MODEL, [])
    models = tuple(
        ModelOutcome(
            model,
            tuple(sorted(files_of.get(model, ()))),
            tuple(sorted(classes, key=lambda c: (c.file, c.class_name))),
            lead=min(leads.get(model, {model}) - {model}, default=""),
        )
        for model, classes in sorted(classes_of.items())
        if files_of.get(model)
    )
    return Migration(models, tuple(reverted))


def _generated_verdict(result: ScanResult, report: VerifyReport, override_id: str) -> ClassVerdict | None:
    """A modular source is verified through the class generated from it."""
    for o in result.index.overrides:
        origin = o.generated_from
        if origin is not None and origin.modular_id == override_id:
            found = report.verdict_of(o.id)
            if found is not None:
                return found
    return None

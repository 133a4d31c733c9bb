"""The idiom round of ``apply --verify``: the fixes for what blocks a tree on its target, kept where verified.

``diff`` and ``apply --unsafe-fixes`` write the idiom fixes (``codemod.transform.idioms``) unverified. Here, before
the override migration, every file the scan found blocking its target is fixed on disk, and every class that runs
through a fixed file (an override in it, or in a file importing it) is verified as ``codemod verify`` would:
the old code of ``HEAD`` against the fixed tree, on three sides across two releases (``verify.releases``). A file
stays fixed when each of its classes is kept (identical, no worse than the release, or a repair; ``KEPT``); any
other goes back byte for byte, and the files that stay are verified again without it, until what stays is proven
together. A file no class runs through proves nothing and goes back. A killed run leaves the files as they were
(``migrate.unverified_while``: the journal ``codemod.writes`` keeps, and the next run reports).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.util import decode_source
from pathlib import Path

from codemod import git
from codemod.analyse.across_releases import across_releases, candidates
from codemod.analyse.classify import Action, Finding
from codemod.analyse.index import Override
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import Checkout
from codemod.contracts import Held, HeldCause, OverrideId
from codemod.migrate import MigrationRun, failing, restore_originals, unverified_while
from codemod.sources import FileKind
from codemod.transform.apply import Changes, settle, write
from codemod.transform.edits import Plan
from codemod.transform.idioms import IdiomEdit
from codemod.transform.idioms.tree import idiom_results
from codemod.transform.plan import initial_plan
from codemod.transform.predict import predicted_repairs
from codemod.transform.rewrite import FileRewrite
from codemod.verify.compare import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.reuse import imported_files
from codemod.verify.runner import Progress, Target
from codemod.verify.session import (
    Method,
    VerifyReport,
    change_needs,
    importable_module,
    methods_by_class,
    verify_change,
    with_dependents,
)

#: a plan with nothing in it: the idiom fixes are whole-file rewrites of their own
_NO_PLAN = Plan((), None, (), ())

#: ``verify_change`` as the round calls it (a test stands in for it): the checkout, the targets, the options,
#: the progress and the notes, the changed overrides not run
Verifier = Callable[
    [
        Checkout,
        Sequence[Target],
        VerifyOptions,
        Progress | None,
        Callable[[str], None] | None,
        Sequence[tuple[str, str]],
    ],
    VerifyReport,
]


def _verify(
    checkout: Checkout,
    targets: Sequence[Target],
    options: VerifyOptions,
    progress: Progress | None,
    say: Callable[[str], None] | None,
    not_run: Sequence[tuple[str, str]],
) -> VerifyReport:
    return verify_change(checkout, targets, options=options, progress=progress, say=say, not_run=not_run)


@dataclasses.dataclass(frozen=True)
class IdiomFile:
    """One file the round fixed: the idioms migrated, whether the fixes stay, and why."""

    path: str
    edits: tuple[IdiomEdit, ...]
    kept: bool
    detail: str
    #: the overrides whose planned change went with the fixes, and how (a round after the migration: ``_again``)
    overrides: tuple[tuple[str, Action], ...] = ()

    @property
    def reason(self) -> str:
        """``its idiom fixes (TB001 x2, TB004) kept: <why>``, or ``reverted``."""
        codes: dict[str, int] = {}
        for edit in self.edits:
            codes[edit.code] = codes.get(edit.code, 0) + 1
        named = ", ".join(f"{c} x{n}" if n > 1 else c for c, n in sorted(codes.items()))
        changes = ", ".join(
            f"{i.rsplit('::', 1)[-1]} {'deleted' if a is Action.DELETE else 'reduced'}" for i, a in self.overrides
        )
        together = f" with {changes}" if changes else ""
        return f"its idiom fixes ({named}){together} {'kept' if self.kept else 'reverted'}: {self.detail}"


@dataclasses.dataclass(frozen=True)
class IdiomRound:
    """What a round left: each fixed file's outcome, the verification's report (None: nothing was fixed), and the
    rewrites of the files that stay fixed (from their bytes before the round)."""

    files: tuple[IdiomFile, ...] = ()
    report: VerifyReport | None = None
    rewrites: tuple[FileRewrite, ...] = ()


@dataclasses.dataclass(frozen=True)
class RoundOptions:
    """How a round verifies: ``verifying`` as the migration does; ``keep_unverified``: a class that could not be
    verified does not put its file back; ``only``: the files it may fix (None: every blocking one)."""

    verifying: VerifyOptions
    keep_unverified: bool = False
    #: overrides whose change is kept only where verified, whatever ``keep_unverified`` says (the repair candidates
    #: across releases the retry plans: ``analyse.across_releases``)
    proven_only: frozenset[str] = frozenset()
    only: frozenset[str] | None = None
    #: the plan's changes the fixes go on top of, in memory (None: the files as they are)
    on: Changes | None = None
    #: the classes verified (None: the scan's): a round after the migration runs each class the scan before had
    classes: tuple[Finding, ...] | None = None


def idiom_round(
    result: ScanResult,
    options: RoundOptions,
    *,
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
    verifier: Verifier = _verify,
) -> IdiomRound:
    """Fix the idioms of ``result``'s blocking files on disk, verify the classes running through them, keep the
    files whose classes are all kept and put the others back. Nothing fixed: nothing verified, nothing built."""
    checkout = result.index.checkout
    on = options.on if options.on is not None else Changes(_NO_PLAN, (), (), ())
    fixed = {
        path: (rewrite, migrated.edits)
        for path, (rewrite, migrated) in idiom_results(result, on).items()
        if rewrite.changed and migrated.changed and (options.only is None or path in options.only)
    }
    if not fixed:
        return IdiomRound()
    classes = dataclasses.replace(result, findings=options.classes) if options.classes is not None else result
    originals = {path: rewrite.old for path, (rewrite, _) in fixed.items()}
    verdicts: dict[str, str] = {}
    reports: list[VerifyReport] = []
    standing = set(fixed)
    with unverified_while(checkout, originals):
        write(checkout, Changes(_NO_PLAN, tuple(fixed[p][0] for p in sorted(fixed)), (), ()))
        while standing:
            targets, not_run, through = _targets(classes, {p: fixed[p][0] for p in standing})
            report = verifier(checkout, targets, options.verifying, progress, say, not_run) if targets else None
            if report is not None:
                reports.append(report)
            outcome = _judged(
                report,
                through,
                standing,
                options,
            )
            verdicts.update(outcome)
            failed = {p for p in standing if not outcome[p].startswith(_KEPT_PREFIX)}
            if failed:
                restore_originals(checkout, {p: originals[p] for p in failed})
            # what stays was verified beside what just went back: verified again without it
            standing = standing - failed if failed else set()
    kept = {p for p, why in verdicts.items() if why.startswith(_KEPT_PREFIX)}
    changing = [(i, a) for i, a in on.plan.actions if a is not Action.KEEP]
    files = tuple(
        IdiomFile(
            p,
            fixed[p][1],
            p in kept,
            verdicts[p].removeprefix(_KEPT_PREFIX),
            tuple((i, a) for i, a in changing if OverrideId(i).file == p),
        )
        for p in sorted(fixed)
    )
    for f in files:
        if say is not None:
            say(f"{f.path}: {f.reason}")
    report = _combined_reports(reports)
    return IdiomRound(files, report, tuple(fixed[p][0] for p in sorted(kept)))


#: what ``_judged`` puts in front of the reason of a file that stays
_KEPT_PREFIX = "+"


def _targets(
    result: ScanResult, fixed: Mapping[str, FileRewrite]
) -> tuple[list[Target], list[tuple[str, str]], dict[str, set[str]]]:
    """The classes running through the ``fixed`` files (path -> its rewrite, written): each override in one of them
    or in a file that imports one, as ``codemod verify`` runs a file whose idioms were fixed (the whole file, each
    needing what its method reads and what its change handles), with those that inherit or generate through them;
    the overrides not run; and per override id the fixed files it runs through."""
    checkout = result.index.checkout
    root = checkout.root
    through: dict[str, set[str]] = {}
    targets: list[Target] = []
    not_run: list[tuple[str, str]] = []
    imports: dict[str, set[str]] = {}
    texts: dict[str, tuple[bytes, bytes]] = {}
    for finding in result.findings:
        o = finding.override
        if o.file not in imports:
            # the needs of a change from HEAD, as ``codemod verify`` reads them (the base verification runs)
            now = fixed[o.file].new if o.file in fixed else _read(root / o.file)
            texts[o.file] = (git.show(root, "HEAD", o.file) or now, now)
            imports[o.file] = imported_files(root, o.file, texts[o.file][1]) & set(fixed)
        runs_through = imports[o.file] | ({o.file} & set(fixed))
        if not runs_through:
            continue
        through[o.id] = runs_through
        module = importable_module(checkout, o.file)
        if o.kind not in (FileKind.MODELING, FileKind.OTHER) or module is None:
            not_run.append((o.id, f"{o.kind.value} file: verified through the generated model classes"))
            continue
        targets.append(Target(o.id, module, o.class_name, o.model or "", needs=_needs(o, *texts[o.file])))
    targets, not_run = with_dependents(result, targets, not_run)
    return targets, not_run, through


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _needs(override: Override, old: bytes, new: bytes) -> tuple[frozenset[str], ...]:
    """What a verdict on a class running through a fixed file needs: ``session.change_needs`` between its file's
    texts before and after (the same text for a class in a file that imports a fixed one)."""
    empty: Method = ("", (), None)
    before = methods_by_class(decode_source(old)).get(override.class_name, empty)
    after = methods_by_class(decode_source(new)).get(override.class_name, empty)
    return change_needs(override, before, after)


def _judged(
    report: VerifyReport | None,
    through: Mapping[str, set[str]],
    standing: Iterable[str],
    options: RoundOptions,
) -> dict[str, str]:
    """Per standing file: ``_KEPT_PREFIX`` and the verdicts of its classes when each is kept, else why it goes
    back (the first failing class, or that no class ran through it)."""
    verdicts = report.verdicts if report is not None else ()
    failed = failing(report, options.keep_unverified, options.proven_only) if report is not None else {}
    out: dict[str, str] = {}
    for path in standing:
        mine = [v for v in verdicts if path in through.get(v.changed_override, set())]
        bad = next((f"{oid}: {failed[oid]}" for oid in sorted(failed) if path in through.get(oid, set())), None)
        if bad is not None:
            out[path] = bad
        elif not mine:
            out[path] = "no class runs through it: nothing proves the fixes"
        else:
            words = sorted({str(v.verdict) for v in mine})
            out[path] = f"{_KEPT_PREFIX}{', '.join(words)} ({len(mine)} {'class' if len(mine) == 1 else 'classes'})"
    return out


def _combined_reports(reports: Sequence[VerifyReport]) -> VerifyReport | None:
    """The rounds' reports as one: each class with its last verdict, the time of all."""
    if not reports:
        return None
    last: dict[str, ClassVerdict] = {}
    for report in reports:
        for v in report.verdicts:
            last[v.override_id] = v
    targets = {t.override_id: t for r in reports for t in r.targets}
    final = reports[-1]
    return dataclasses.replace(
        final,
        verdicts=tuple(v for r in reports for v in r.verdicts if last[v.override_id] is v),
        targets=tuple(targets.values()),
        seconds=sum(r.seconds for r in reports),
    )


def _chained(first: Iterable[FileRewrite], then: Iterable[FileRewrite]) -> tuple[FileRewrite, ...]:
    """Two rewrites of the tree, one after the other, as one: each file from its bytes before ``first`` to what
    ``then`` (or else ``first``) left."""
    rewrites = {r.path: r for r in first}
    for r in then:
        earlier = rewrites.get(r.path)
        if earlier is not None and earlier.changed and r.changed:
            r = dataclasses.replace(r, old=earlier.old, applied=(*earlier.applied, *r.applied))
        rewrites[r.path] = r if r.changed or earlier is None else earlier
    return tuple(rewrites[p] for p in sorted(rewrites))


@dataclasses.dataclass(frozen=True)
class Rounds:
    """``apply --verify`` with its idiom rounds: the migration as one change of the tree before them (its changes,
    report and reverted changes with the rounds'), and each fixed file's last outcome."""

    migration: MigrationRun
    files: tuple[IdiomFile, ...]


def _planned(result: ScanResult) -> Changes:
    """The override migration of ``result`` in memory, as ``diff --unsafe-fixes`` plans it before its idiom fixes."""
    return settle(result, initial_plan(result, predicted_repairs(result.findings) or None))


def with_idiom_rounds(
    checkout: Checkout,
    result: ScanResult,
    options: RoundOptions,
    migrate: Callable[[ScanResult], MigrationRun],
    *,
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
) -> Rounds:
    """The idiom round, then the override migration (``migrate``, on the tree as the round left it, scanned again
    when it kept a fix), then once more for the files whose fixes went back and the migration changed: an idiom
    fix may run only once the override is migrated too (InternLM's keeps the full-length ``position_ids``)."""
    first = idiom_round(result, options, progress=progress, say=say)
    migration = migrate(scan(checkout, target=result.profile.target) if first.rewrites else result)
    second = _again(result, first, options, progress, say)
    latest = {f.path: f for f in (*first.files, *second.files)}
    files = tuple(latest[p] for p in sorted(latest))
    final = dataclasses.replace(
        migration.final, rewrites=_chained(_chained(first.rewrites, migration.final.rewrites), second.rewrites)
    )
    # a change made with the fixes stands as the plan made it, whatever the migration did of it alone
    actions = {i: a for f in second.files if f.kept for i, a in f.overrides}
    together = set(actions)
    if together:
        final = dataclasses.replace(
            final,
            plan=dataclasses.replace(
                final.plan,
                actions=tuple((i, actions.get(i, a) if i in together else a) for i, a in final.plan.actions),
                held=tuple(h for h in final.plan.held if h.subject not in together),
            ),
        )
    report = _first_of(second.report, migration.report, first.report)
    assert report is not None  # the migration's
    reverted = (
        *(h for h in migration.reverted if h.subject not in together),
        *(Held(f.path, HeldCause.NOT_VERIFIED, f.reason) for f in files if not f.kept),
    )
    return Rounds(
        dataclasses.replace(migration, final=final, report=report, reverted=tuple(sorted(reverted, key=_subject))),
        files,
    )


def _again(
    result: ScanResult,
    first: IdiomRound,
    options: RoundOptions,
    progress: Progress | None,
    say: Callable[[str], None] | None,
) -> IdiomRound:
    """The files whose fixes went back, fixed again together (with the override migration's plan for them), on the
    tree as the migration left it: a fix may run only once the override changes too (InternLM's keeps the
    full-length ``position_ids`` 5.x passes). Nothing when the plan changes none of them."""
    again = frozenset(f.path for f in first.files if not f.kept)
    if not again:
        return IdiomRound()
    checkout = result.index.checkout
    chosen = {f.override.id for f in result.findings}
    # across releases the plan tries what the target itself breaks, as the migration did (``run_migration_on``)
    current = across_releases(scan(checkout, target=result.profile.target), options.verifying.from_release)
    current = dataclasses.replace(current, findings=tuple(f for f in current.findings if f.override.id in chosen))
    on = _planned(current)
    changing = frozenset(r.path for r in on.rewrites if r.changed and r.path in again)
    if not changing:
        return IdiomRound()
    if say is not None:
        say(f"idiom fixes tried again with the override migration's plan: {', '.join(sorted(again))}")
    # every file that went back is tried again, not only those the plan changes: a model file's fixes may need
    # its config file's (StableLM-epoch's pad_token_id default), which went back with them
    with_plan = dataclasses.replace(
        options, only=again, on=on, classes=result.findings, proven_only=candidates(current.findings)
    )
    return idiom_round(current, with_plan, progress=progress, say=say)


def _first_of(*reports: VerifyReport | None) -> VerifyReport | None:
    """The reports as one, each class with its verdict in the first report that has one (a later round's before the
    migration's before an earlier round's: a class is reported as the tree is left)."""
    given = [r for r in reports if r is not None]
    if not given:
        return None
    report = given[0]
    for other in given[1:]:
        report = _beside(report, other)
    return report


def _subject(held: Held) -> str:
    return held.subject


def _beside(report: VerifyReport, other: VerifyReport | None) -> VerifyReport:
    """``report`` with the verdicts of ``other`` on the classes it has none of (a round's, beside the migration's:
    a class both verified is reported as the migration left it)."""
    if other is None:
        return report
    known = {v.override_id for v in report.verdicts}
    targets = {t.override_id for t in report.targets}
    return dataclasses.replace(
        report,
        verdicts=(*report.verdicts, *(v for v in other.verdicts if v.override_id not in known)),
        targets=(*report.targets, *(t for t in other.targets if t.override_id not in targets)),
        seconds=report.seconds + other.seconds,
    )

"""The commands as plain functions: typed options in, typed results out, nothing drawn.

``codemod.cli`` parses the arguments into these options, calls one function per command, renders what
it returns and chooses the exit code; what a command does in between (which checkout, judged against
which release, what it refuses, the worktree ``verify`` compares with) is here. Options that do not go
together raise :class:`ToolError`, a ``CodemodError`` like every stage's errors, which the CLI reports
once; progress goes to a :class:`Feedback`. ``fetch`` is ``codemod.fetch.fetch_release`` with a feedback;
``pr`` adds nothing to ``codemod.publish.pr.run_pr``, which the CLI calls as it is.

Every function runs quietly unless given a ``Feedback`` (``QUIET`` is the default)::

    from codemod import api

    result = api.scan(api.Source(["modeling_custom.py"]))
    result, changes = api.diff(api.Source(["."]))
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

from codemod.contracts import Held
from codemod.errors import CodemodError

if TYPE_CHECKING:  # the stages are imported by the functions that run them (``--help`` stays quick)
    from codemod.analyse.index import Progress as ScanProgress
    from codemod.analyse.scan import ScanResult
    from codemod.analyse.target import Target
    from codemod.checkout import Checkout
    from codemod.idiom_round import IdiomFile
    from codemod.tools import ToolRun
    from codemod.transform.apply import Changes
    from codemod.transform.hook_changes import HookChanges
    from codemod.verify.options import VerifyOptions
    from codemod.verify.runner import Progress as VerifyProgress
    from codemod.verify.session import VerifyReport

__all__ = [
    "DEFAULT_RELEASE",
    "QUIET",
    "Applied",
    "Edits",
    "Feedback",
    "Quiet",
    "Run",
    "Source",
    "ToolError",
    "apply",
    "diff",
    "fetch",
    "hooks",
    "run_tools",
    "scan",
    "verified_diff",
    "verify",
]

#: the release ``make run`` and ``make scan`` migrate (``--release``)
DEFAULT_RELEASE = "4.45.2"


class ToolError(CodemodError):
    """A usage error the commands themselves find (options that do not go together, a dirty tree)."""


class Feedback(Protocol):
    """What a command shows while it runs: notes, and a progress display around each long stage (one
    at a time: a terminal holds one live display)."""

    def say(self, message: str) -> None: ...

    def scanning(self) -> contextlib.AbstractContextManager[ScanProgress | None]: ...

    def verifying(self) -> contextlib.AbstractContextManager[VerifyProgress]: ...


class Quiet:
    """The feedback of a caller that wants none: no notes, no progress (every function's default)."""

    def say(self, message: str) -> None:
        pass

    def scanning(self) -> contextlib.AbstractContextManager[ScanProgress | None]:
        return contextlib.nullcontext()

    def verifying(self) -> contextlib.AbstractContextManager[VerifyProgress]:
        return contextlib.nullcontext(_no_progress)


def _no_progress(*_: object) -> None:
    """A verification progress callback that shows nothing."""


QUIET = Quiet()

#: what ``Source`` takes as its paths: one, or several (a str is one path, not its letters)
Paths: TypeAlias = "Path | str | Sequence[Path | str]"


@dataclasses.dataclass(frozen=True)
class Source:
    """The code a command works on: ``paths`` (files and directories; none: the current directory), or
    the pristine ``release`` fetched from PyPI and cached; the models it keeps; and for model code
    outside transformers the release it runs on and is judged against (``target``, or for the scan
    alone the transformers at ``mixin``)."""

    paths: Paths = ()
    release: str | None = None
    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    jobs: int | None = None
    cache: bool = True
    target: str | None = None
    mixin: Path | None = None

    def __post_init__(self) -> None:
        given = [self.paths] if isinstance(self.paths, (str, Path)) else self.paths
        object.__setattr__(self, "paths", tuple(Path(p) for p in given))

    @property
    def path_list(self) -> tuple[Path, ...]:
        """The paths, as ``__post_init__`` made them: a tuple of ``Path``."""
        assert isinstance(self.paths, tuple)
        return self.paths


@dataclasses.dataclass(frozen=True)
class Run:
    """How ``verify`` and ``apply --verify`` run the changed classes on tiny models; outside transformers,
    ``from_release`` is the release the old code runs on. ``keep_unverified`` (``apply`` only): keep the
    changes to classes that could not be verified."""

    device: str = "cpu"
    python: Path | None = None
    own_tests: bool = True
    from_release: str | None = None
    requirements: Sequence[str] = ()
    keep_unverified: bool = False


@dataclasses.dataclass(frozen=True)
class Edits:
    """What ``diff`` and ``apply`` write besides the migration: ``mark`` every override that stays with
    ``# Overwritten -- <reason>``; ``hooks``: add the hooks mined from repeated overrides to the mixin
    and rewrite their members (a transformers checkout only)."""

    mark: bool = False
    hooks: bool = False
    #: without verification, also make the edits only verification proves (ruff's unsafe fixes): those that
    #: change what the standard generate flow prepares (``Finding.flow``)
    unsafe: bool = False


RUN = Run()
EDITS = Edits()


@dataclasses.dataclass(frozen=True)
class Applied:
    """What ``apply`` left on disk: the scan, the changes and the files they wrote; after verification,
    its report and the overrides whose change was reverted, with why."""

    result: ScanResult
    changes: Changes
    written: Sequence[str]
    report: VerifyReport | None = None
    reverted: tuple[Held, ...] = ()
    #: each file whose idioms ``apply --verify`` fixed (``codemod.idiom_round``): kept or put back, and why
    idioms: tuple[IdiomFile, ...] = ()


def _checkout(source: Source, feedback: Feedback, writable: bool) -> Checkout:
    """The checkout to work on: the paths (none: the current directory), or the pristine release (a fresh
    copy when it will be written)."""
    import shutil

    from codemod.cache import cache_dir
    from codemod.checkout import resolve, resolve_paths
    from codemod.fetch import fetch_release

    if source.release is None:
        return resolve_paths(source.path_list or (Path.cwd(),))
    if source.path_list:
        raise ToolError("give PATHS or --release, not both: --release fetches a pristine transformers to work on")
    if writable:
        path = cache_dir("work") / f"transformers-{source.release}"
        if path.exists():
            shutil.rmtree(path)
        path = fetch_release(source.release, path, progress=feedback.say)
        feedback.say(f"working on a copy: {path}")
        return resolve(path)
    return resolve(fetch_release(source.release, progress=feedback.say))


def _judged_against(checkout: Checkout, source: Source, feedback: Feedback) -> Target | None:
    """The release a tree or file is judged against (``--target`` / ``--mixin``); None: the default."""
    from codemod.analyse.target import default_target, from_path, from_release
    from codemod.checkout import CheckoutKind

    if source.target is None and source.mixin is None:
        return default_target(checkout, progress=feedback.say)  # a tree: the release it runs with
    if source.target is not None and source.mixin is not None:
        raise ToolError("give --target or --mixin, not both")
    if checkout.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE):
        raise ToolError(
            f"{checkout.root} is a transformers {checkout.kind.value}: it is judged against its own mixin; "
            "--target and --mixin are for trees and files of model code"
        )
    if source.target is not None:
        return from_release(source.target, progress=feedback.say)
    assert source.mixin is not None  # one of the two, checked above
    return from_path(source.mixin)


def scan(source: Source, feedback: Feedback = QUIET, writable: bool = False) -> ScanResult:
    """checkout → index → classify; where every command but ``verify`` starts."""
    return _scanned(_prepared(source, feedback, writable), source, feedback)


def _prepared(source: Source, feedback: Feedback, writable: bool) -> Checkout:
    """The checkout, with what a stopped run left undone before a write (and said)."""
    from codemod.writes import recovered

    checkout, notes = recovered(_checkout(source, feedback, writable), recover=writable)
    for line in notes:
        feedback.say(line)
    return checkout


def _scanned(checkout: Checkout, source: Source, feedback: Feedback) -> ScanResult:
    from codemod.analyse.scan import scan as scan_checkout

    judged_against = _judged_against(checkout, source, feedback)
    with feedback.scanning() as progress:
        result = scan_checkout(
            checkout, use_cache=source.cache, jobs=source.jobs, progress=progress, target=judged_against
        )
    return result.select(source.only, source.skip)


def hooks(source: Source, feedback: Feedback = QUIET) -> tuple[ScanResult, HookChanges]:
    """The scan, and the hooks mined from its overrides with each cluster's changes."""
    from codemod.transform.hook_changes import compute
    from codemod.transform.hooks import mine

    result = scan(source, feedback)
    return result, compute(result, mine(result), source.jobs)


def _changes(result: ScanResult, jobs: int | None, edits: Edits) -> Changes:
    from codemod.transform.apply import compute_changes

    # nothing verifies a plain apply: what only verification proves is held back, in a checkout too, unless asked
    hold = not edits.unsafe
    return compute_changes(result, jobs, mark_kept=edits.mark, hold_unproven=hold, hooks=edits.hooks)


def diff(source: Source, feedback: Feedback = QUIET, edits: Edits = EDITS) -> tuple[ScanResult, Changes]:
    """The scan, and what ``apply`` would write (in memory)."""
    result = scan(source, feedback)
    return result, _changes(result, source.jobs, edits)


def _refuse_dirty(checkout: Checkout, remedy: str = "commit or stash them, or pass --allow-dirty") -> None:
    """A git tree with uncommitted changes is not rewritten: the edits would mix with the user's. A single
    file is guarded by its own repository, as a directory is. ``remedy``: what the user does about it."""
    from codemod.checkout import CheckoutKind, git_state

    git = checkout.git
    if git is None and checkout.kind is CheckoutKind.FILE:
        git = git_state(checkout.root)
    if git is not None and git.dirty:
        where = f"the git tree of {checkout.target_file}" if checkout.kind is CheckoutKind.FILE else checkout.root
        raise ToolError(f"{where} has uncommitted changes: {remedy}")


def _check_releases(checkout: Checkout, target: str | None, from_release: str | None) -> None:
    """A transformers checkout runs on itself: releases to run on are for model code outside it."""
    if (target or from_release) and not checkout.is_tree:
        raise ToolError(
            f"{checkout.root} is a transformers {checkout.kind.value}: its code runs on itself "
            "(--target and --from are for model code outside transformers)"
        )


def verify(
    source: Source, run: Run = RUN, feedback: Feedback = QUIET, *, base: str = "HEAD", shard: str | None = None
) -> VerifyReport:
    """Compare the working tree with ``base`` for every model class the change touches (``shard``: I/N
    of them), on tiny random models."""
    from codemod.analyse.scan import scan as scan_checkout
    from codemod.checkout import resolve
    from codemod.git import worktree
    from codemod.verify.session import shard as take_shard
    from codemod.verify.session import targets_from_diff, verify_change

    checkout = _prepared(source, feedback, writable=False)  # says what a stopped apply --verify left
    if checkout.git is None:
        raise ToolError(f"{checkout.root} is not a git work tree: verify compares the working tree with a revision")
    _check_releases(checkout, source.target, run.from_release)
    options = _verify_options(source, run, _runs_on(checkout, source, feedback))
    # one worktree of the base for the whole run: scanned here, then run by the verification
    with worktree(checkout.root, base, error=ToolError) as old_root, feedback.verifying() as progress:
        base_result = scan_checkout(resolve(old_root, with_git=False)).select(source.only, source.skip)
        base_result = dataclasses.replace(base_result, index=dataclasses.replace(base_result.index, checkout=checkout))
        targets, not_run = targets_from_diff(base_result, base)
        return verify_change(
            checkout,
            take_shard(targets, shard),
            options=options,
            base=base,
            old_root=old_root,
            progress=progress,
            say=feedback.say,
            not_run=not_run,
        )


def apply(
    source: Source,
    feedback: Feedback = QUIET,
    edits: Edits = EDITS,
    run: Run | None = None,
    *,
    allow_dirty: bool = False,
) -> Applied:
    """Rewrite the checkout (for a pristine release: a fresh copy of it); with a ``run``, verify every changed
    class and revert what is not identical (``run.keep_unverified``: keep what could not be verified).
    ``allow_dirty``: rewrite a git tree with uncommitted changes."""
    from codemod.transform.apply import write

    if run is not None and source.mixin is not None:
        raise ToolError("--verify runs the new code on a release: give --target VERSION instead of --mixin")
    # what is refused is refused before the scan (which may fetch the release a tree runs with)
    checkout = _prepared(source, feedback, writable=True)
    _check_writable(checkout, source, run or RUN, edits, allow_dirty)
    if run is not None and checkout.git is None:
        raise ToolError(f"{checkout.root} is not a git work tree: --verify compares with HEAD")
    result = _scanned(checkout, source, feedback)
    if run is None:
        changes = _changes(result, source.jobs, edits)
        return Applied(result, changes, write(checkout, changes))
    from codemod.migrate import MigrationOptions, run_migration_on

    options = MigrationOptions(source.only, source.skip, run.keep_unverified, edits.mark, edits.hooks)
    # verified on the release it was judged against: what diff and scan judge it against too
    verifying = _verify_options(source, run, _release_of(result.profile.target))
    from codemod.idiom_round import RoundOptions, with_idiom_rounds

    with feedback.verifying() as progress:
        # what blocks a tree on its target is fixed first, kept where verified, and the overrides migrated on top
        rounds = with_idiom_rounds(
            checkout,
            result,
            RoundOptions(verifying, run.keep_unverified),
            lambda scanned: run_migration_on(
                checkout, options, verifying, progress=progress, say=feedback.say, scanned=scanned
            ),
            progress=progress,
            say=feedback.say,
        )
    migration = rounds.migration
    written = [r.path for r in migration.final.rewrites if r.changed]
    return Applied(migration.result, migration.final, written, migration.report, migration.reverted, rounds.files)


def verified_diff(source: Source, feedback: Feedback = QUIET, edits: Edits = EDITS, run: Run = RUN) -> Applied:
    """What ``apply`` with verification would write, without writing it: the same run on a throwaway worktree
    of HEAD (the checkout's files are never touched), or for a pristine ``release`` on the fresh copy ``apply``
    makes anyway. Its ``changes`` are the verified ones; its ``written`` the files the copy got; its scan is of
    the user's checkout (what the diff names is there). A path that HEAD does not have is refused."""
    if source.release is not None:
        return apply(source, feedback, edits, run)
    from codemod.git import repository_root, worktree

    checkout = _prepared(source, feedback, writable=False)
    if checkout.git is None:
        raise ToolError(f"{checkout.root} is not a git work tree: --verify compares with HEAD")
    # what is verified is HEAD: uncommitted changes would be left out of a diff that looks like theirs
    _refuse_dirty(checkout, "diff --verify verifies HEAD in a worktree; commit or stash them")
    top = repository_root(checkout.root)
    paths = source.path_list or (Path.cwd(),)
    with worktree(top, "HEAD", error=ToolError) as copy:
        mapped = tuple(copy / Path(p).resolve().relative_to(top) for p in paths)
        for given, path in zip(paths, mapped, strict=True):
            if not path.exists():  # untracked: no change of its is in the tree verified
                raise ToolError(f"{given} is not in HEAD: diff --verify verifies HEAD in a worktree; commit it")
        applied = apply(dataclasses.replace(source, paths=mapped), feedback, edits, run)
    # what the diff names (annotations, the checkout's own tools) is the user's tree: the worktree is gone
    index = dataclasses.replace(applied.result.index, checkout=checkout)
    return dataclasses.replace(applied, result=dataclasses.replace(applied.result, index=index))


def _check_writable(checkout: Checkout, source: Source, run: Run, edits: Edits, allow_dirty: bool) -> None:
    """What ``apply`` refuses before it writes: releases to run a transformers checkout on, a dirty tree,
    hooks without a mixin to add them to."""
    _check_releases(checkout, source.target, run.from_release)
    if not allow_dirty:
        _refuse_dirty(checkout)
    if edits.hooks and checkout.mixin_file is None:
        raise ToolError(
            f"{checkout.root} has no mixin of its own to add hooks to: --hooks needs a transformers checkout"
        )


def _runs_on(checkout: Checkout, source: Source, feedback: Feedback) -> str | None:
    """The release a tree's new code is verified on without ``--target``: the one scan and diff judge it against
    (``analyse.target.default_target``: its pin, the highest it allows, the installed one, the newest), fetched
    here so that a pin to a release that does not exist fails before anything is built. None: not a tree, or
    ``--target`` given, or transformers' own model code (``session.DEFAULT_TREE_TARGET`` then)."""
    if source.target is not None or not checkout.is_tree:
        return None
    from codemod.analyse.target import default_target

    return _release_of(default_target(checkout, progress=feedback.say))


def _release_of(target: Target | None) -> str | None:
    """The release a scan's target names (None: the built-in mixin, or a checkout judged against itself)."""
    from codemod.analyse.target import TargetOrigin

    return target.release if target is not None and target.origin is TargetOrigin.RELEASE else None


def _verify_options(source: Source, run: Run, runs_on: str | None = None) -> VerifyOptions:
    """How verification runs, from the command's options: one class at a time unless ``--jobs`` says; model code
    outside transformers on ``--target``, else on ``runs_on`` (the release it runs with)."""
    from codemod.analyse.target import BUILT_IN_NAME
    from codemod.verify.options import VerifyOptions

    if BUILT_IN_NAME in (source.target, run.from_release):
        raise ToolError(
            f"verification runs the code on transformers releases: {BUILT_IN_NAME} is none; give a VERSION"
        )
    return VerifyOptions(
        device=run.device,
        jobs=source.jobs or 1,
        python=run.python,
        own_tests=run.own_tests,
        target=source.target or runs_on,
        from_release=run.from_release,
        requirements=run.requirements,
    )


def fetch(version: str, dest: Path | None = None, feedback: Feedback = QUIET) -> Path:
    """A transformers release from PyPI as a one-commit git checkout (``dest``; default: the user cache)."""
    from codemod.fetch import fetch_release

    return fetch_release(version, dest, progress=feedback.say)


def run_tools(applied: Applied, python: Path | None = None, feedback: Feedback = QUIET) -> list[ToolRun]:
    """After ``apply``: the checkout's own modular converter and check_copies on the files it wrote, when
    it has them (a git clone). Raises ``EnvironmentSetupError`` when they cannot be run."""
    from codemod.tools import after_rewrite

    return after_rewrite(applied.result.index.checkout, applied.written, python=python, say=feedback.say)

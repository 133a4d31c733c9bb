"""The command line: parse arguments, call the pipeline's stages, render. Nothing else lives here.

Exit codes: 0 success; 1 reserved for "there are changes" (``diff``) and failed verification;
2 usage or tool errors: every ``CodemodError`` is caught once, in ``_Commands.invoke``, and printed as one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

from codemod import __version__
from codemod.contracts import Verdict
from codemod.errors import CodemodError, one_line, redact
from codemod.layout import LOG_WIDTH, lay_out

if TYPE_CHECKING:  # the stages are imported by the commands that run them (``--help`` stays quick)
    from rich.progress import TaskID

    from codemod.apply import Changes
    from codemod.checkout import Checkout
    from codemod.scan import ScanResult
    from codemod.target import Target
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

DEFAULT_RELEASE = "4.45.2"

stdout = Console()
stderr = Console(stderr=True)


class ToolError(CodemodError):
    """A usage error the commands themselves find (options that do not go together, a dirty tree)."""


def error_line(error: BaseException) -> str:
    """What the user reads: one line, never a credential. An ``OSError`` (a directory that cannot be
    read or written, a full disk) is the user's to fix like any ``CodemodError``."""
    if isinstance(error, OSError) and error.strerror:
        text = f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    else:
        text = str(error) or type(error).__name__
    return one_line(redact(text))


class _Commands(TyperGroup):
    """Every command, laid out for where its output goes, with its errors reported in one line."""

    def invoke(self, ctx: Any) -> Any:  # typer's click Context (typer.Context is a subclass)
        for console in (stdout, stderr):
            lay_out(console)
        try:
            return super().invoke(ctx)
        except (CodemodError, OSError) as error:
            if isinstance(error, BrokenPipeError):
                raise  # the reader went away (``| head``): typer exits quietly
            stderr.print(f"error: {error_line(error)}", style="red", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(getattr(error, "exit_code", 2)) from None


app = typer.Typer(
    name="codemod",
    help="Migrate transformers' prepare_inputs_for_generation overrides onto GenerationMixin, and prove nothing changed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_Commands,
)


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


PathArg = Annotated[
    Optional[Path],
    typer.Argument(
        help="A transformers checkout, an installed transformers package, a directory of model code or one file. "
        "Default: the pristine release given by --release (fetched from PyPI and cached).",
        show_default=False,
    ),
]
ReleaseOpt = Annotated[str, typer.Option("--release", help="Release to fetch when PATH is not given.")]
OnlyOpt = Annotated[Optional[list[str]], typer.Option("--only", help="Only these models (comma-separated, repeatable).")]
SkipOpt = Annotated[Optional[list[str]], typer.Option("--skip", help="Skip these models (comma-separated, repeatable).")]
MarkOpt = Annotated[
    bool,
    typer.Option("--mark", help="Also mark every override that stays as it is with '# Overwritten -- <reason>' "
                              "(comment-only edits; off by default: a migration changes code, not comments)."),
]
JobsOpt = Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPU count).")]
TargetOpt = Annotated[
    Optional[str],
    typer.Option("--target", help="For a tree or file: judge it against this transformers release (fetched from PyPI "
                                  "and cached). Default: the built-in generic implementation."),
]
MixinOpt = Annotated[
    Optional[Path],
    typer.Option("--mixin", help="For a tree or file: judge it against this transformers checkout or installed "
                                 "package instead of a --target release."),
]


@contextmanager
def _progress(enabled: bool) -> Iterator[Progress | None]:
    """A progress display on a terminal for runs that take more than a moment; nothing otherwise."""
    if not enabled or not stderr.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr, transient=True,
    ) as progress:
        yield progress


def _resolve_path(path: Path | None, release: str, writable: bool = False) -> Checkout:
    """The checkout to work on; without PATH, the pristine release (a fresh copy when it will be written)."""
    import shutil

    from codemod.cache import cache_dir
    from codemod.checkout import resolve
    from codemod.fetch import fetch_release

    if path is None:
        def say(message: str) -> None:
            stderr.print(message, style="dim")

        if writable:
            path = cache_dir("work") / f"transformers-{release}"
            if path.exists():
                shutil.rmtree(path)
            path = fetch_release(release, path, progress=say)
            say(f"working on a copy: {path}")
        else:
            path = fetch_release(release, progress=say)
    return resolve(path)


def _target(checkout: Checkout, target: str | None, mixin: Path | None) -> Target | None:
    """The release a tree or file is judged against (``--target`` / ``--mixin``); None: the default."""
    from codemod.checkout import CheckoutKind
    from codemod.target import from_path, from_release

    if target is None and mixin is None:
        return None
    if target is not None and mixin is not None:
        raise ToolError("give --target or --mixin, not both")
    if checkout.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE):
        raise ToolError(f"{checkout.root} is a transformers {checkout.kind.value}: it is judged against its own mixin; "
                        "--target and --mixin are for trees and files of model code")
    if target is not None:
        return from_release(target, progress=lambda message: stderr.print(message, style="dim"))
    assert mixin is not None  # one of the two, checked above
    return from_path(mixin)


def run_scan(
    path: Path | None, release: str, only: list[str], skip: list[str], jobs: int | None, cache: bool, writable: bool = False,
    target: str | None = None, mixin: Path | None = None,
) -> ScanResult:
    """checkout → index → classify; shared by every command that starts with a scan."""
    from codemod.scan import scan as scan_checkout

    checkout = _resolve_path(path, release, writable)
    judged_against = _target(checkout, target, mixin)
    with _progress(True) as progress:
        task: TaskID | None = None

        def report(stage: str, done: int, total: int) -> None:
            nonlocal task
            if progress is None:
                return
            if task is None:
                task = progress.add_task("parsing model files", total=total)
            progress.update(task, completed=done)

        result = scan_checkout(checkout, use_cache=cache, jobs=jobs, progress=report, target=judged_against)
    return result.select(only, skip)


@app.command()
def scan(
    path: PathArg = None,
    release: ReleaseOpt = DEFAULT_RELEASE,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, json or markdown.")] = "table",
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the report to this file.")] = None,
    jobs: JobsOpt = None,
    cache: Annotated[bool, typer.Option(help="Use the content-hash cache in the user cache dir.")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every reason in the table.")] = False,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
) -> None:
    """Find every prepare_inputs_for_generation override and classify it against what a deletion would reach:
    this checkout's mixin, or for a tree or file the --target / --mixin release (default: the built-in one)."""
    from codemod.report import render

    if fmt not in ("table", "json", "markdown"):
        raise typer.BadParameter(f"unknown format {fmt!r}: use table, json or markdown", param_hint="--format")
    started = time.perf_counter()
    result = run_scan(path, release, _split(only), _split(skip), jobs, cache, target=target, mixin=mixin)
    if output is not None and fmt == "table":
        with output.open("w", encoding="utf-8") as handle:
            render(result, fmt, Console(file=handle, width=LOG_WIDTH), verbose)
    else:
        text = render(result, fmt, stdout, verbose)
        if text is not None:
            if output is not None:
                output.write_text(text, encoding="utf-8")
            else:
                sys.stdout.write(text)
    if fmt == "table":
        stderr.print(f"scanned in {time.perf_counter() - started:.2f}s", style="dim")


def _run_tools(checkout: Checkout, written: list[str], python: Path | None) -> None:
    """The checkout's own modular converter and check_copies, when it has them (a git clone)."""
    from codemod.environment import EnvironmentSetupError
    from codemod.tools import after_rewrite, available

    if not available(checkout):
        return
    try:
        runs = after_rewrite(checkout, written, python=python, say=lambda m: stderr.print(m, style="dim"))
    except EnvironmentSetupError as error:
        stderr.print(f"could not run the checkout's utils/ tools: {error}", style="yellow", soft_wrap=True)
        return
    for run in runs:
        stderr.print(run.describe(), style="" if run.ok else "red", highlight=False, soft_wrap=True)


def _print_summary(result: ScanResult, changes: Changes, checkout: Checkout) -> None:
    s = changes.summary(result)
    stderr.print(
        f"{s['deleted']} overrides deleted, {s['reduced']} reduced, {s['kept']} kept ({s['held']} held back); "
        # a hoisted mixin can add more lines than a few reductions remove
        f"{s['files']} files, " + (f"{s['lines_removed']} lines removed" if s["lines_removed"] >= 0
                                   else f"{-s['lines_removed']} more lines than before"),
        highlight=False,
    )
    # nothing is held back silently: the plan's own (a check refused the edit) and what settling dropped
    for held, why in (*changes.plan.held, *changes.dropped):
        stderr.print(f"held back {held}: {why}", style="yellow", highlight=False)
    from codemod.tools import has_converter

    # the same edit in the generated file; the checkout's converter, when it has one, then has the last word
    after = "apply then runs the checkout's converter on it" if has_converter(checkout) else \
        "this checkout has no utils/modular_model_converter.py to regenerate it"
    for generated, source in changes.mirrored:
        stderr.print(f"{generated}: same edit as its modular source {source} ({after})", style="dim", highlight=False)


HooksOpt = Annotated[
    bool,
    typer.Option("--hooks", help="Also add the hooks mined from repeated overrides (see `codemod hooks`) to the mixin "
                                 "and rewrite their members."),
]


@app.command()
def hooks(
    path: PathArg = None,
    release: ReleaseOpt = DEFAULT_RELEASE,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table, json or markdown.")] = "table",
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the report to this file.")] = None,
    jobs: JobsOpt = None,
    cache: Annotated[bool, typer.Option(help="Use the content-hash cache in the user cache dir.")] = True,
    diffs: Annotated[bool, typer.Option("--diffs/--no-diffs", help="The table with each hook's and member's diff.")] = True,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
) -> None:
    """Cluster the model-specific parts of the overrides and, where three or more models share one, propose a hook on
    the mixin: each cluster's members, the lines they save, the mixin change and each member's change as a diff."""
    from codemod.hook_changes import compute
    from codemod.hooks import mine
    from codemod.hooks_report import render_hooks

    if fmt not in ("table", "json", "markdown"):
        raise typer.BadParameter(f"unknown format {fmt!r}: use table, json or markdown", param_hint="--format")
    result = run_scan(path, release, _split(only), _split(skip), jobs, cache, target=target, mixin=mixin)
    changes = compute(result, mine(result), jobs)
    if output is not None and fmt == "table":
        with output.open("w", encoding="utf-8") as handle:
            render_hooks(result, changes, fmt, Console(file=handle, width=LOG_WIDTH), diffs)
        return
    text = render_hooks(result, changes, fmt, stdout, diffs)
    if text is not None:
        if output is not None:
            output.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)


@app.command()
def diff(
    path: PathArg = None,
    release: ReleaseOpt = DEFAULT_RELEASE,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    jobs: JobsOpt = None,
    cache: Annotated[bool, typer.Option(help="Use the content-hash cache in the user cache dir.")] = True,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
    mark: MarkOpt = False,
    hooks: HooksOpt = False,
) -> None:
    """Print the unified diff of everything `apply` would change. Exit 1 when there are changes, 0 when none."""
    from rich.syntax import Syntax

    from codemod.apply import compute_changes, unified_diff, unified_diff_bytes

    result = run_scan(path, release, _split(only), _split(skip), jobs, cache, target=target, mixin=mixin)
    # what apply would write (it holds back the same unproven changes outside transformers)
    changes = compute_changes(result, jobs, mark_kept=mark, hold_unproven=result.index.checkout.is_tree,
                              hooks=hooks)
    if stdout.is_terminal:
        stdout.print(Syntax(unified_diff(changes), "diff", theme="ansi_dark", background_color="default"))
    else:
        # a patch to apply: each file's lines as its bytes are (latin-1 stays latin-1)
        sys.stdout.flush()
        sys.stdout.buffer.write(unified_diff_bytes(changes))
        sys.stdout.buffer.flush()
    _print_summary(result, changes, result.index.checkout)
    raise typer.Exit(1 if changes.changed else 0)


DeviceOpt = Annotated[str, typer.Option("--device", help="cpu or cuda: where the tiny models run.")]
PythonOpt = Annotated[
    Optional[Path],
    typer.Option("--python", help="An interpreter with torch and the checkout's dependencies (default: a cached venv)."),
]
FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, json or markdown.")]
OwnTestsOpt = Annotated[
    bool, typer.Option("--own-tests/--no-own-tests", help="Also run the checkout's tests/models/<m> generate tests.")
]
TargetRunOpt = Annotated[
    Optional[str],
    typer.Option("--target", metavar="VERSION",
                 help="Model code outside transformers: the release the new code runs on (default: 4.46.3)."),
]
FromOpt = Annotated[
    Optional[str],
    typer.Option("--from", metavar="VERSION",
                 help="Model code outside transformers: the release the old code was written for (default: the same)."),
]
RequirementOpt = Annotated[
    Optional[list[str]],
    typer.Option("--requirement", "-r", help="A package the model code needs besides transformers (repeatable)."),
]


class _VerifyProgress:
    """A rich progress bar on a terminal (done, current class, elapsed, ETA); plain lines in CI logs."""

    def __init__(self) -> None:
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.started = time.perf_counter()

    def __enter__(self) -> _VerifyProgress:
        if stderr.is_terminal:
            from rich.progress import TimeRemainingColumn

            self.bar = Progress(
                TextColumn("verifying {task.fields[current]}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TimeRemainingColumn(), console=stderr, transient=True,
            )
            self.bar.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self.bar is not None:
            self.bar.__exit__(kind, error, traceback)

    def __call__(self, current: str, verdict: ClassVerdict | None, done: int, total: int) -> None:
        if self.bar is not None:
            if self.task is None:
                self.task = self.bar.add_task("verify", total=total, current=current)
            self.bar.update(self.task, completed=done, current=current)
            return
        if verdict is None:
            return
        elapsed = time.perf_counter() - self.started
        eta = elapsed / done * (total - done) if done else 0
        stderr.print(
            f"[{done}/{total}] {current}: {verdict.verdict} ({len(verdict.compared)} scenarios) "
            f"elapsed {elapsed:.0f}s, ETA {eta:.0f}s",
            highlight=False, soft_wrap=True,
        )


def _emit_verify(report: VerifyReport, fmt: str, output: Path | None) -> None:
    from codemod.report import render_verify_table, verify_document, verify_markdown

    if fmt == "json":
        import json

        text = json.dumps(verify_document(report), indent=2) + "\n"
    elif fmt == "markdown":
        text = verify_markdown(report)
    else:
        render_verify_table(report, stdout)
        return
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _refuse_dirty(checkout: Checkout) -> None:
    """A git tree with uncommitted changes is not rewritten: the edits would mix with the user's. A single
    file is guarded by its own repository, as a directory is."""
    from codemod.checkout import CheckoutKind, git_state

    git = checkout.git
    if git is None and checkout.kind is CheckoutKind.FILE:
        git = git_state(checkout.root)
    if git is not None and git.dirty:
        where = f"the git tree of {checkout.target_file}" if checkout.kind is CheckoutKind.FILE else checkout.root
        raise ToolError(f"{where} has uncommitted changes: commit or stash them, or pass --allow-dirty")


def _check_releases(checkout: Checkout, target: str | None, from_release: str | None) -> None:
    """A transformers checkout runs on itself: releases to run on are for model code outside it."""

    if (target or from_release) and not checkout.is_tree:
        raise ToolError(f"{checkout.root} is a transformers {checkout.kind.value}: its code runs on itself "
                        "(--target and --from are for model code outside transformers)")


@app.command()
def verify(
    path: PathArg = None,
    release: ReleaseOpt = DEFAULT_RELEASE,
    base: Annotated[str, typer.Option("--base", help="The revision the working tree is compared with.")] = "HEAD",
    device: DeviceOpt = "cpu",
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Classes verified in parallel.")] = 1,
    shard: Annotated[Optional[str], typer.Option("--shard", help="I/N: verify every N-th class from the I-th.")] = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    python: PythonOpt = None,
    fmt: FormatOpt = "table",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the report to this file.")] = None,
    own_tests: OwnTestsOpt = True,
    target: TargetRunOpt = None,
    from_release: FromOpt = None,
    requirement: RequirementOpt = None,
) -> None:
    """Compare the working tree with --base for every model class the change touches, on tiny random models.

    Exit 0 when every class is identical, 1 when one differs, crashed or could not be verified."""
    from codemod.checkout import resolve
    from codemod.scan import scan as scan_checkout
    from codemod.git import worktree
    from codemod.verify.session import shard as take_shard
    from codemod.verify.session import targets_from_diff, verify_change

    checkout = _resolve_path(path, release)
    if checkout.git is None:
        raise ToolError(f"{checkout.root} is not a git work tree: verify compares the working tree with a revision")
    _check_releases(checkout, target, from_release)
    # one worktree of the base for the whole run: scanned here, then run by the verification
    with worktree(checkout.root, base, error=ToolError) as old_root, _VerifyProgress() as progress:
        base_result = scan_checkout(resolve(old_root, with_git=False)).select(_split(only), _split(skip))
        base_result = dataclasses.replace(base_result, index=dataclasses.replace(base_result.index, checkout=checkout))
        targets, not_run = targets_from_diff(base_result, base)
        targets = take_shard(targets, shard)
        report = verify_change(checkout, targets, base=base, old_root=old_root, device=device, jobs=jobs,
                               python=python, progress=progress, say=lambda m: stderr.print(m, style="dim"),
                               not_run=not_run, own_tests=own_tests, target=target, from_release=from_release,
                               requirements=_split(requirement))
    _emit_verify(report, fmt, output)
    raise typer.Exit(0 if all(v.verdict is Verdict.IDENTICAL for v in report.verdicts) else 1)


@app.command()
def apply(
    path: PathArg = None,
    release: ReleaseOpt = DEFAULT_RELEASE,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    jobs: JobsOpt = None,
    allow_dirty: Annotated[bool, typer.Option("--allow-dirty", help="Rewrite a git tree with uncommitted changes.")] = False,
    cache: Annotated[bool, typer.Option(help="Use the content-hash cache in the user cache dir.")] = True,
    verify: Annotated[bool, typer.Option("--verify", help="Verify every changed class; revert what is not identical.")] = False,
    device: DeviceOpt = "cpu",
    python: PythonOpt = None,
    keep_unverified: Annotated[
        bool, typer.Option("--keep-unverified", help="Keep changes to classes that could not be verified.")
    ] = False,
    report_file: Annotated[
        Optional[Path], typer.Option("--report", help="With --verify: write the verification report (JSON) here.")
    ] = None,
    own_tests: OwnTestsOpt = True,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
    from_release: FromOpt = None,
    requirement: RequirementOpt = None,
    mark: MarkOpt = False,
    hooks: HooksOpt = False,
) -> None:
    """Rewrite the checkout: delete generic overrides, reduce those with model-specific keys (--mark: mark the rest)."""
    from codemod.apply import compute_changes, write

    if verify and mixin is not None:
        raise ToolError("--verify runs the new code on a release: give --target VERSION instead of --mixin")
    if from_release is not None and not verify:
        raise ToolError("--from says which release the old code runs on: it needs --verify")
    if verify and path is not None and target is None:
        from codemod.checkout import resolve
        from codemod.verify.session import DEFAULT_TREE_TARGET
    
        with contextlib.suppress(CodemodError):  # the scan below says what is wrong with PATH
            if resolve(path, with_git=False).is_tree:
                target = DEFAULT_TREE_TARGET  # classified against the release it is verified on
    result = run_scan(path, release, _split(only), _split(skip), jobs, cache, writable=True, target=target, mixin=mixin)
    checkout = result.index.checkout
    _check_releases(checkout, target, from_release)
    if not allow_dirty:
        _refuse_dirty(checkout)
    if hooks and checkout.mixin_file is None:
        raise ToolError(f"{checkout.root} has no mixin of its own to add hooks to: --hooks needs a transformers checkout")
    if not verify:
        # outside transformers nothing verifies a plain apply: what only verification proves is held back
        changes = compute_changes(result, jobs, mark_kept=mark, hold_unproven=result.index.checkout.is_tree,
                                  hooks=hooks)
        written = write(checkout, changes)
        _print_summary(result, changes, checkout)
        stderr.print(f"wrote {len(written)} files in {checkout.root}", highlight=False)
        _run_tools(checkout, written, python)
        return
    from codemod.migrate import run_migration_on

    if checkout.git is None:
        raise ToolError(f"{checkout.root} is not a git work tree: --verify compares with HEAD")
    with _VerifyProgress() as progress:
        run = run_migration_on(
            checkout, only=_split(only), skip=_split(skip), jobs=jobs or 1, device=device, python=python,
            keep_unverified=keep_unverified, progress=progress, say=lambda m: stderr.print(m, style="dim"),
            own_tests=own_tests, scanned=result, target_release=target, from_release=from_release,
            requirements=_split(requirement), mark_kept=mark, hooks=hooks,
        )
    _emit_verify(run.report, "table", None)
    if report_file is not None:
        _emit_verify(run.report, "json", report_file)
    _print_summary(run.result, run.final, checkout)
    for override_id, why in sorted(run.reverted.items()):
        stderr.print(f"reverted {override_id}: {why}", style="yellow", highlight=False, soft_wrap=True)
    _run_tools(checkout, [r.path for r in run.final.rewrites if r.changed], python)


@app.command()
def fetch(
    version: Annotated[str, typer.Argument(help="A transformers release on PyPI, e.g. 4.45.2.")],
    dest: Annotated[Optional[Path], typer.Argument(help="Where to lay it out (default: the user cache).")] = None,
) -> None:
    """Download a transformers release's sdist from PyPI as a git checkout (one commit on main) and print its path."""
    from codemod.fetch import fetch_release

    root = fetch_release(version, dest, progress=lambda message: stderr.print(message, style="dim"))
    stdout.print(str(root), highlight=False, soft_wrap=True)


@app.command()
def pr(
    path: Annotated[Path, typer.Argument(help="A transformers git checkout; it is never modified (work happens in a temporary worktree).")],
    repo: Annotated[str, typer.Option("--repo", help="The GitHub repository that gets the pull requests: OWNER/NAME.")],
    remote: Annotated[str, typer.Option("--remote", help="The git remote to fetch --base from and push the branches to.")],
    base: Annotated[str, typer.Option("--base", help="The branch the pull requests target.")],
    api_url: Annotated[str, typer.Option("--api-url", help="GitHub's REST API; for GitHub Enterprise: https://HOST/api/v3.")] = "https://api.github.com",
    group_by: Annotated[str, typer.Option("--group-by", help="One pull request per model, per family, or one for all.")] = "model",
    max_open: Annotated[Optional[int], typer.Option("--max-open", min=0, help="Open no new pull request while this many of the bot's are open.")] = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the branches, commits and pull requests it would push and open; write nothing.")] = False,
    label: Annotated[Optional[list[str]], typer.Option("--label", help="A label besides transformers-codemod (comma-separated, repeatable).")] = None,
) -> None:
    """Publish the verified migration as pull requests, one per group (token: $GITHUB_TOKEN)."""
    from codemod.pr import run_pr
    from codemod.pr.plan import GROUP_BY

    if group_by not in GROUP_BY:
        raise typer.BadParameter(f"unknown grouping {group_by!r}: use {', '.join(GROUP_BY)}", param_hint="--group-by")
    run_pr(
        path, repo=repo, remote=remote, base=base, api_url=api_url, group_by=group_by, max_open=max_open,
        only=_split(only), skip=_split(skip), dry_run=dry_run, labels=_split(label),
        echo=lambda line: stdout.print(line, markup=False, highlight=False, soft_wrap=True),
    )


@app.command()
def explain(
    code: Annotated[
        Optional[str],
        typer.Argument(help="A rule's code (PI111) or name (position-ids-from-mask). Without it: every rule.",
                       show_default=False),
    ] = None,
) -> None:
    """Explain a recogniser rule: what it recognises, what the mixins do about it, its cases. Without CODE, list the rules."""
    from rules import doc

    if code is None:
        text = doc.listing()
    elif (rule := doc.find(code)) is not None:
        text = doc.explain(rule)
    else:
        stderr.print(f"error: {doc.unknown(code)}", style="red", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    if stdout.is_terminal:
        from rich.markdown import Markdown

        stdout.print(Markdown(text))
    else:
        typer.echo(text, nl=False)


def _version_callback(value: bool) -> None:
    if value:
        stdout.print(f"transformers-codemod {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Migrate transformers' prepare_inputs_for_generation overrides onto GenerationMixin, and prove nothing changed."""


def main() -> None:
    app(standalone_mode=True)

"""The command line: parse arguments, call :mod:`codemod.api`'s commands, render what they return and choose
the exit code. Nothing else lives here.

Exit codes: 0 success; 1 reserved for "there are changes" (``diff``) and failed verification;
2 usage or tool errors: every ``CodemodError`` is caught once, in ``_Commands.invoke``, and printed as one line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from typer.core import TyperGroup

from codemod import __version__, api
from codemod.contracts import Verdict
from codemod.errors import CodemodError, one_line, redact
from codemod.layout import LOG_WIDTH, lay_out

if TYPE_CHECKING:  # the stages are imported by the commands that render them (``--help`` stays quick)
    from codemod.analyse.index import Progress as ScanProgress
    from codemod.analyse.scan import ScanResult
    from codemod.checkout import Checkout
    from codemod.transform.apply import Changes
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.runner import Progress as VerifyProgress
    from codemod.verify.session import VerifyReport

stdout = Console()
stderr = Console(stderr=True)


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
    Path | None,
    typer.Argument(
        help="A transformers checkout, an installed transformers package, a directory of model code or one file. "
        "Default: the pristine release given by --release (fetched from PyPI and cached).",
        show_default=False,
    ),
]
ReleaseOpt = Annotated[str, typer.Option("--release", help="Release to fetch when PATH is not given.")]
OnlyOpt = Annotated[list[str] | None, typer.Option("--only", help="Only these models (comma-separated, repeatable).")]
SkipOpt = Annotated[list[str] | None, typer.Option("--skip", help="Skip these models (comma-separated, repeatable).")]
MarkOpt = Annotated[
    bool,
    typer.Option(
        "--mark",
        help="Also mark every override that stays as it is with '# Overwritten -- <reason>' "
        "(comment-only edits; off by default: a migration changes code, not comments).",
    ),
]
JobsOpt = Annotated[int | None, typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPU count).")]
TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        help="For a tree or file: judge it against this transformers release (fetched from PyPI "
        "and cached). Default: the built-in generic implementation.",
    ),
]
MixinOpt = Annotated[
    Path | None,
    typer.Option(
        "--mixin",
        help="For a tree or file: judge it against this transformers checkout or installed "
        "package instead of a --target release.",
    ),
]
FormatOpt = Annotated[str, typer.Option("--format", "-f", help="table, json or markdown.")]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to this file.")]
CacheOpt = Annotated[bool, typer.Option(help="Use the content-hash cache in the user cache dir.")]


@contextmanager
def _bar(description: str, *columns: ProgressColumn) -> Iterator[Callable[[int, int, str], None]]:
    """A transient progress bar on stderr: ``update(done, total, current)``, whose first call starts the task."""
    with Progress(*columns, console=stderr, transient=True) as bar:
        task: TaskID | None = None

        def update(done: int, total: int, current: str) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(description, total=total, current=current)
            bar.update(task, completed=done, current=current)

        yield update


class _Screen:
    """What the commands show while they run, on stderr: dim notes, and progress bars on a terminal only."""

    def say(self, message: str) -> None:
        stderr.print(message, style="dim")

    @contextmanager
    def scanning(self) -> Iterator[ScanProgress | None]:
        if not stderr.is_terminal:
            yield None
            return
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with _bar("parsing model files", *columns) as update:
            yield lambda stage, done, total: update(done, total, stage)

    @contextmanager
    def verifying(self) -> Iterator[VerifyProgress]:
        """A bar on a terminal (done, current class, elapsed, ETA); plain lines in CI logs."""
        if stderr.is_terminal:
            columns = (
                TextColumn("verifying {task.fields[current]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            with _bar("verify", *columns) as update:
                yield lambda current, verdict, done, total: update(done, total, current)
            return
        started = time.perf_counter()

        def log(current: str, verdict: ClassVerdict | None, done: int, total: int) -> None:
            if verdict is None:
                return
            elapsed = time.perf_counter() - started
            eta = elapsed / done * (total - done) if done else 0
            stderr.print(
                f"[{done}/{total}] {current}: {verdict.verdict} ({len(verdict.compared)} scenarios) "
                f"elapsed {elapsed:.0f}s, ETA {eta:.0f}s",
                highlight=False,
                soft_wrap=True,
            )

        yield log


screen = _Screen()


def _check_format(fmt: str) -> None:
    if fmt not in ("table", "json", "markdown"):
        raise typer.BadParameter(f"unknown format {fmt!r}: use table, json or markdown", param_hint="--format")


def _write(text: str, output: Path | None) -> None:
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _report(render: Callable[[Console], str | None], fmt: str, output: Path | None) -> None:
    """A report on stdout or in ``output``: a table is drawn on a console (a file's: LOG_WIDTH wide), JSON
    and Markdown come back as text."""
    if output is not None and fmt == "table":
        with output.open("w", encoding="utf-8") as handle:
            render(Console(file=handle, width=LOG_WIDTH))
    elif (text := render(stdout)) is not None:
        _write(text, output)


@app.command()
def scan(
    path: PathArg = None,
    release: ReleaseOpt = api.DEFAULT_RELEASE,
    fmt: FormatOpt = "table",
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    output: OutputOpt = None,
    jobs: JobsOpt = None,
    cache: CacheOpt = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Every reason in the table.")] = False,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
) -> None:
    """Find every prepare_inputs_for_generation override and classify it against what a deletion would reach:
    this checkout's mixin, or for a tree or file the --target / --mixin release (default: the built-in one)."""
    from codemod.publish.report import render

    _check_format(fmt)
    started = time.perf_counter()
    result = api.scan(api.Source(path, release, _split(only), _split(skip), jobs, cache, target, mixin), screen)
    _report(lambda console: render(result, fmt, console, verbose), fmt, output)
    if fmt == "table":
        stderr.print(f"scanned in {time.perf_counter() - started:.2f}s", style="dim")


def _run_tools(applied: api.Applied, python: Path | None) -> None:
    """The checkout's own modular converter and check_copies, when it has them (a git clone)."""
    from codemod.environment import EnvironmentSetupError

    try:
        runs = api.run_tools(applied, python, screen)
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
        f"{s['files']} files, "
        + (
            f"{s['lines_removed']} lines removed"
            if s["lines_removed"] >= 0
            else f"{-s['lines_removed']} more lines than before"
        ),
        highlight=False,
    )
    # nothing is held back silently: the plan's own (a check refused the edit) and what settling dropped
    # each once: a dropped shard's members are in the plan's own list, with the shard's why
    said = {held.subject for held in changes.plan.held}
    for held in (*changes.plan.held, *(h for h in changes.dropped if h.subject not in said)):
        stderr.print(
            f"held back {held.subject}: {held.detail}", style="yellow", markup=False, highlight=False, soft_wrap=True
        )
    from codemod.analyse.scan import unread_line

    if (unread := unread_line(result)) is not None:  # files that do not parse are named, never passed over
        stderr.print(unread, style="yellow", markup=False, highlight=False, soft_wrap=True)
    from codemod.tools import has_converter

    # the same edit in the generated file; the checkout's converter, when it has one, then has the last word
    after = (
        "apply then runs the checkout's converter on it"
        if has_converter(checkout)
        else "this checkout has no utils/modular_model_converter.py to regenerate it"
    )
    for generated, source in changes.mirrored:
        stderr.print(f"{generated}: same edit as its modular source {source} ({after})", style="dim", highlight=False)


HooksOpt = Annotated[
    bool,
    typer.Option(
        "--hooks",
        help="Also add the hooks mined from repeated overrides (see `codemod hooks`) to the mixin "
        "and rewrite their members.",
    ),
]


@app.command()
def hooks(
    path: PathArg = None,
    release: ReleaseOpt = api.DEFAULT_RELEASE,
    fmt: FormatOpt = "table",
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    output: OutputOpt = None,
    jobs: JobsOpt = None,
    cache: CacheOpt = True,
    diffs: Annotated[
        bool, typer.Option("--diffs/--no-diffs", help="The table with each hook's and member's diff.")
    ] = True,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
) -> None:
    """Cluster the model-specific parts of the overrides and, where three or more models share one, propose a hook on
    the mixin: each cluster's members, the lines they save, the mixin change and each member's change as a diff."""
    from codemod.publish.hooks_report import render_hooks

    _check_format(fmt)
    result, changes = api.hooks(
        api.Source(path, release, _split(only), _split(skip), jobs, cache, target, mixin), screen
    )
    _report(lambda console: render_hooks(result, changes, fmt, console, diffs), fmt, output)


@app.command()
def diff(
    path: PathArg = None,
    release: ReleaseOpt = api.DEFAULT_RELEASE,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    jobs: JobsOpt = None,
    cache: CacheOpt = True,
    target: TargetOpt = None,
    mixin: MixinOpt = None,
    mark: MarkOpt = False,
    hooks: HooksOpt = False,
) -> None:
    """Print the unified diff of everything `apply` would change. Exit 1 when there are changes, 0 when none."""
    from rich.syntax import Syntax

    from codemod.transform.apply import unified_diff, unified_diff_bytes

    source = api.Source(path, release, _split(only), _split(skip), jobs, cache, target, mixin)
    result, changes = api.diff(source, screen, mark=mark, hooks=hooks)
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
    Path | None,
    typer.Option(
        "--python", help="An interpreter with torch and the checkout's dependencies (default: a cached venv)."
    ),
]
OwnTestsOpt = Annotated[
    bool, typer.Option("--own-tests/--no-own-tests", help="Also run the checkout's tests/models/<m> generate tests.")
]
TargetRunOpt = Annotated[
    str | None,
    typer.Option(
        "--target",
        metavar="VERSION",
        help="Model code outside transformers: the release the new code runs on (default: 4.46.3).",
    ),
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="VERSION",
        help="Model code outside transformers: the release the old code was written for (default: the same).",
    ),
]
RequirementOpt = Annotated[
    list[str] | None,
    typer.Option("--requirement", "-r", help="A package the model code needs besides transformers (repeatable)."),
]


def _emit_verify(report: VerifyReport, fmt: str, output: Path | None) -> None:
    from codemod.publish.report import render_verify_table, verify_document, verify_markdown

    if fmt == "json":
        import json

        _write(json.dumps(verify_document(report), indent=2) + "\n", output)
    elif fmt == "markdown":
        _write(verify_markdown(report), output)
    else:
        render_verify_table(report, stdout)


@app.command()
def verify(
    path: PathArg = None,
    release: ReleaseOpt = api.DEFAULT_RELEASE,
    base: Annotated[str, typer.Option("--base", help="The revision the working tree is compared with.")] = "HEAD",
    device: DeviceOpt = "cpu",
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Classes verified in parallel.")] = 1,
    shard: Annotated[str | None, typer.Option("--shard", help="I/N: verify every N-th class from the I-th.")] = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    python: PythonOpt = None,
    fmt: FormatOpt = "table",
    output: OutputOpt = None,
    own_tests: OwnTestsOpt = True,
    target: TargetRunOpt = None,
    from_release: FromOpt = None,
    requirement: RequirementOpt = None,
) -> None:
    """Compare the working tree with --base for every model class the change touches, on tiny random models.

    Exit 0 when every class is identical, 1 when one differs, crashed or could not be verified."""
    source = api.Source(path, release, _split(only), _split(skip), jobs, target=target)
    run = api.Run(device, python, own_tests, from_release, _split(requirement))
    report = api.verify(source, run, screen, base=base, shard=shard)
    _emit_verify(report, fmt, output)
    raise typer.Exit(0 if all(v.verdict is Verdict.IDENTICAL for v in report.verdicts) else 1)


@app.command()
def apply(
    path: PathArg = None,
    release: ReleaseOpt = api.DEFAULT_RELEASE,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    jobs: JobsOpt = None,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="Rewrite a git tree with uncommitted changes.")
    ] = False,
    cache: CacheOpt = True,
    verify: Annotated[
        bool, typer.Option("--verify", help="Verify every changed class; revert what is not identical.")
    ] = False,
    device: DeviceOpt = "cpu",
    python: PythonOpt = None,
    keep_unverified: Annotated[
        bool, typer.Option("--keep-unverified", help="Keep changes to classes that could not be verified.")
    ] = False,
    report_file: Annotated[
        Path | None, typer.Option("--report", help="With --verify: write the verification report (JSON) here.")
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
    source = api.Source(path, release, _split(only), _split(skip), jobs, cache, target, mixin)
    run = api.Run(device, python, own_tests, from_release, _split(requirement))
    applied = api.apply(
        source,
        screen,
        run,
        verify=verify,
        keep_unverified=keep_unverified,
        allow_dirty=allow_dirty,
        mark=mark,
        hooks=hooks,
    )
    checkout = applied.result.index.checkout
    if applied.report is None:
        _print_summary(applied.result, applied.changes, checkout)
        stderr.print(f"wrote {len(applied.written)} files in {checkout.root}", highlight=False)
    else:
        _emit_verify(applied.report, "table", None)
        if report_file is not None:
            _emit_verify(applied.report, "json", report_file)
        _print_summary(applied.result, applied.changes, checkout)
        for held in sorted(applied.reverted, key=lambda h: h.subject):
            stderr.print(f"reverted {held.subject}: {held.detail}", style="yellow", highlight=False, soft_wrap=True)
    _run_tools(applied, python)


@app.command()
def fetch(
    version: Annotated[str, typer.Argument(help="A transformers release on PyPI, e.g. 4.45.2.")],
    dest: Annotated[Path | None, typer.Argument(help="Where to lay it out (default: the user cache).")] = None,
) -> None:
    """Download a transformers release's sdist from PyPI as a git checkout (one commit on main) and print its path."""
    from codemod.fetch import fetch_release

    root = fetch_release(version, dest, progress=screen.say)
    stdout.print(str(root), highlight=False, soft_wrap=True)


@app.command()
def pr(
    path: Annotated[
        Path,
        typer.Argument(
            help="A transformers git checkout; it is never modified (work happens in a temporary worktree)."
        ),
    ],
    repo: Annotated[
        str, typer.Option("--repo", help="The GitHub repository that gets the pull requests: OWNER/NAME.")
    ],
    remote: Annotated[
        str, typer.Option("--remote", help="The git remote to fetch --base from and push the branches to.")
    ],
    base: Annotated[str, typer.Option("--base", help="The branch the pull requests target.")],
    api_url: Annotated[
        str, typer.Option("--api-url", help="GitHub's REST API; for GitHub Enterprise: https://HOST/api/v3.")
    ] = "https://api.github.com",
    group_by: Annotated[
        str, typer.Option("--group-by", help="One pull request per model, per family, or one for all.")
    ] = "model",
    max_open: Annotated[
        int | None,
        typer.Option("--max-open", min=0, help="Open no new pull request while this many of the bot's are open."),
    ] = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the branches, commits and pull requests it would push and open; write nothing."
        ),
    ] = False,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="A label besides transformers-codemod (comma-separated, repeatable)."),
    ] = None,
) -> None:
    """Publish the verified migration as pull requests, one per group (token: $GITHUB_TOKEN)."""
    from codemod.publish.pr import PrOptions, PrRuntime, run_pr
    from codemod.publish.pr.plan import GROUP_BY

    if group_by not in GROUP_BY:
        raise typer.BadParameter(f"unknown grouping {group_by!r}: use {', '.join(GROUP_BY)}", param_hint="--group-by")
    options = PrOptions(
        repo, remote, base, api_url, group_by, max_open, _split(only), _split(skip), dry_run, _split(label)
    )
    run_pr(
        path, options, PrRuntime(echo=lambda line: stdout.print(line, markup=False, highlight=False, soft_wrap=True))
    )


@app.command()
def explain(
    code: Annotated[
        str | None,
        typer.Argument(
            help="A rule's code (PI111) or name (position-ids-from-mask). Without it: every rule.", show_default=False
        ),
    ] = None,
) -> None:
    """Explain a recogniser rule: what it recognises, what the mixins do about it, its cases. Without CODE, list the rules."""
    from codemod.analyse import blockers
    from codemod.rules import doc

    if code is None:
        text = doc.listing()
    elif (rule := doc.find(code)) is not None:
        text = doc.explain(rule)
    elif (blocker := blockers.explain(code)) is not None:  # TB001 …: what blocks a tree on its target
        text = blocker
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

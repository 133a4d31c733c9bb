"""The command line: parse arguments, call :mod:`codemod.api`'s commands, render what they return and choose
the exit code. Nothing else lives here: the options are declared in :mod:`codemod.cli_options`, help and
usage errors laid out by :mod:`codemod.cli_help`, progress shown by :mod:`codemod.cli_screen`.

Exit codes: 0 success; 1 reserved for "there are changes" (``diff``) and failed verification;
2 usage or tool errors: every ``CodemodError`` is caught once, in ``_Commands.invoke``, and printed as one line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from codemod import __version__, api, cli_merge
from codemod.cli_help import Command, Group
from codemod.cli_options import (
    OUTPUT,
    VERIFICATION,
    AllowDirtyOpt,
    ApplyJobsOpt,
    ApplyTargetOpt,
    CacheOpt,
    DeviceOpt,
    DiffFormatOpt,
    FromOpt,
    HooksOpt,
    KeepUnverifiedOpt,
    MarkOpt,
    MixinOpt,
    OnlyOpt,
    OutputOpt,
    OwnTestsOpt,
    PathsArg,
    PythonOpt,
    ReleaseOpt,
    ReportFormatOpt,
    RequirementOpt,
    ScanFormatOpt,
    ScanJobsOpt,
    ScanTargetOpt,
    SkipOpt,
    UnsafeOpt,
    VerifyFlagOpt,
    VerifyJobsOpt,
    VerifyTargetOpt,
)
from codemod.cli_screen import screen, stderr
from codemod.contracts import Held
from codemod.errors import CodemodError, one_line, redact
from codemod.layout import LOG_WIDTH, lay_out

if TYPE_CHECKING:  # the stages are imported by the commands that render them (``--help`` stays quick)
    from codemod.analyse.scan import ScanResult
    from codemod.checkout import Checkout
    from codemod.transform.apply import Changes
    from codemod.verify.session import VerifyReport

stdout = Console()


def error_line(error: BaseException) -> str:
    """What the user reads: one line, never a credential. An ``OSError`` (a directory that cannot be
    read or written, a full disk) is the user's to fix like any ``CodemodError``."""
    if isinstance(error, OSError) and error.strerror:
        text = f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    else:
        text = str(error) or type(error).__name__
    return one_line(redact(text))


class _Commands(Group):
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
command = app.command


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def _check_format(fmt: str, formats: tuple[str, ...]) -> None:
    if fmt not in formats:
        raise typer.BadParameter(
            f"unknown format {fmt!r}: use {', '.join(formats[:-1])} or {formats[-1]}", param_hint="--format"
        )


REPORTS = ("table", "json", "markdown")
ANNOTATIONS = ("github", "sarif")


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


def _annotate(fmt: str, annotations: list[Any], output: Path | None) -> None:
    """``--format github`` or ``sarif``: what would change, as code-review annotations."""
    from codemod.publish import annotations as render

    _write(render.github(annotations) if fmt == "github" else render.sarif(annotations), output)


def _source(
    paths: list[Path] | None,
    release: str | None,
    only: list[str] | None,
    skip: list[str] | None,
    jobs: int | None,
    cache: bool = True,
    target: str | None = None,
    mixin: Path | None = None,
) -> api.Source:
    return api.Source(tuple(paths or ()), release, _split(only), _split(skip), jobs, cache, target, mixin)


@command(cls=Command)
def scan(
    paths: PathsArg = None,
    release: ReleaseOpt = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    target: ScanTargetOpt = None,
    mixin: MixinOpt = None,
    fmt: ScanFormatOpt = "table",
    output: OutputOpt = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", metavar="", help="Every reason in the table.", rich_help_panel=OUTPUT)
    ] = False,
    jobs: ScanJobsOpt = None,
    cache: CacheOpt = True,
) -> None:
    """Find every prepare_inputs_for_generation override and say what would become of it.

    A transformers checkout is judged against its own mixin; model code outside transformers against the mixin of
    the release it runs on (--target), or of the --mixin checkout."""
    from codemod.publish.report import render

    _check_format(fmt, (*REPORTS, *ANNOTATIONS))
    started = time.perf_counter()
    result = api.scan(_source(paths, release, only, skip, jobs, cache, target, mixin), screen)
    if fmt in ANNOTATIONS:
        from codemod.publish.annotations import from_scan

        _annotate(fmt, from_scan(result), output)
        return
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


def _print_summary(result: ScanResult, changes: Changes, only: list[str], written: list[str] | None) -> None:
    """What the change does and, grouped by why, the files it writes (``written``: None for ``diff``, which
    writes nothing); then what is held back and each generated file edited as its modular source."""
    from codemod.analyse.scan import unread_line
    from codemod.publish.report import count
    from codemod.publish.summary import group_lines, held_line, totals

    def say(text: str, style: str = "") -> None:
        stderr.print(text, style=style, markup=False, highlight=False, soft_wrap=True)

    say(totals(result, changes))
    groups = group_lines(result, changes, only)
    checkout = result.index.checkout
    if written is not None:
        say(f"wrote {count(len(written), 'file')} in {checkout.root}" + (":" if groups else ""))
    elif groups:
        say(f"would write {count(sum(r.changed for r in changes.rewrites), 'file')}:")
    for line in groups:
        say(line, "dim")
    # nothing is held back silently: the plan's own (a check refused the edit) and what settling dropped
    # each once: a dropped shard's members are in the plan's own list, with the shard's why
    said = {held.subject for held in changes.plan.held}
    for held in (*changes.plan.held, *(h for h in changes.dropped if h.subject not in said)):
        say(held_line(held), "yellow")
    if (unread := unread_line(result)) is not None:  # files that do not parse are named, never passed over
        say(unread, "yellow")
    _print_mirrored(changes, checkout)


def _print_mirrored(changes: Changes, checkout: Checkout) -> None:
    from codemod.tools import has_converter

    # the same edit in the generated file; the checkout's converter, when it has one, then has the last word
    after = (
        "apply then runs the checkout's converter on it"
        if has_converter(checkout)
        else "this checkout has no utils/modular_model_converter.py to regenerate it"
    )
    for generated, source in changes.mirrored:
        stderr.print(f"{generated}: same edit as its modular source {source} ({after})", style="dim", highlight=False)


@command(cls=Command)
def hooks(
    paths: PathsArg = None,
    release: ReleaseOpt = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    target: ScanTargetOpt = None,
    mixin: MixinOpt = None,
    fmt: ReportFormatOpt = "table",
    output: OutputOpt = None,
    diffs: Annotated[
        bool,
        typer.Option(
            "--diffs/--no-diffs",
            metavar="",
            help="The table with each hook's and member's diff.",
            rich_help_panel=OUTPUT,
        ),
    ] = True,
    jobs: ScanJobsOpt = None,
    cache: CacheOpt = True,
) -> None:
    """Propose hooks on the mixin for the model-specific code that three or more overrides share.

    Each cluster's members, the lines they save, the mixin change and each member's change as a diff."""
    from codemod.publish.hooks_report import render_hooks

    _check_format(fmt, REPORTS)
    result, changes = api.hooks(_source(paths, release, only, skip, jobs, cache, target, mixin), screen)
    _report(lambda console: render_hooks(result, changes, fmt, console, diffs), fmt, output)


@command(cls=Command)
def diff(
    paths: PathsArg = None,
    release: ReleaseOpt = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    mark: MarkOpt = False,
    hooks: HooksOpt = False,
    unsafe: UnsafeOpt = False,
    verify: VerifyFlagOpt = False,
    keep_unverified: KeepUnverifiedOpt = False,
    device: DeviceOpt = "cpu",
    python: PythonOpt = None,
    own_tests: OwnTestsOpt = True,
    target: ScanTargetOpt = None,
    mixin: MixinOpt = None,
    from_release: FromOpt = None,
    requirement: RequirementOpt = None,
    fmt: DiffFormatOpt = "patch",
    jobs: ScanJobsOpt = None,
    cache: CacheOpt = True,
) -> None:
    """Print the diff of what apply would write: exit 1 when there is one, 0 when there is none.

    With --verify, the diff apply --verify would write: verified in a throwaway worktree, nothing written here."""
    _check_format(fmt, ("patch", *ANNOTATIONS))
    source = _source(paths, release, only, skip, jobs, cache, target, mixin)
    edits = api.Edits(mark, hooks, unsafe)
    run = _run(verify, api.Run(device, python, own_tests, from_release, _split(requirement), keep_unverified))
    if run is None:
        result, changes = api.diff(source, screen, edits)
    else:
        verified = api.verified_diff(source, screen, edits, run)
        result, changes = verified.result, verified.changes
        if verified.report is not None:  # on stderr: stdout is the patch or the annotations alone
            from codemod.publish.report import render_verify_table

            render_verify_table(verified.report, stderr)
        _print_reverted(verified.reverted)
    if fmt in ANNOTATIONS:
        from codemod.publish.annotations import from_changes

        _annotate(fmt, from_changes(result, changes), None)
    elif stdout.is_terminal:
        from rich.syntax import Syntax

        from codemod.transform.apply import unified_diff

        stdout.print(Syntax(unified_diff(changes), "diff", theme="ansi_dark", background_color="default"))
    else:
        from codemod.transform.apply import unified_diff_bytes

        # a patch to apply: each file's lines as its bytes are (latin-1 stays latin-1)
        sys.stdout.flush()
        sys.stdout.buffer.write(unified_diff_bytes(changes))
        sys.stdout.buffer.flush()
    _print_summary(result, changes, list(source.only), None)
    if changes.changed:
        command = _apply_command(source, edits, run)
        stderr.print(f"to write it: {command}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(1 if changes.changed else 0)


def _apply_command(source: api.Source, edits: api.Edits, run: api.Run | None = None) -> str:
    """The ``codemod apply`` that writes what ``diff`` showed: the same code, models and options; after
    ``diff --verify``, verified as it was (a plain apply would write only the safe edits)."""
    import shlex

    words = ["codemod", "apply", *(str(p) for p in source.path_list)]
    options = [
        ("--release", source.release),
        ("--only", ",".join(source.only)),
        ("--skip", ",".join(source.skip)),
        ("--target", source.target),
        ("--mixin", source.mixin and str(source.mixin)),
    ]
    flags = [("--mark", edits.mark), ("--hooks", edits.hooks), ("--unsafe-fixes", edits.unsafe)]
    if run is not None:
        options += [("--from", run.from_release), *(("--requirement", r) for r in run.requirements)]
        options += [
            ("--device", run.device if run.device != "cpu" else None),
            ("--python", run.python and str(run.python)),
        ]
        flags += [
            ("--verify", True),
            ("--keep-unverified", run.keep_unverified),
            ("--no-own-tests", not run.own_tests),
        ]
    words += [word for option, value in options if value for word in (option, value)]
    words += [flag for flag, on in flags if on]
    return shlex.join(words)


def _emit_verify(report: VerifyReport, fmt: str, output: Path | None, run: dict[str, Any] | None = None) -> None:
    from codemod.publish.report import render_verify_table, verify_document, verify_markdown

    if fmt == "json":
        import json

        _write(json.dumps(verify_document(report, run), indent=2) + "\n", output)
    elif fmt == "markdown":
        _write(verify_markdown(report), output)
    else:
        render_verify_table(report, stdout)


@command(cls=Command)
def verify(
    path: Annotated[
        Path | None,
        typer.Argument(
            metavar="PATH",
            help="A git work tree to compare with --base: a transformers checkout, or a directory or file of model "
            "code. Default: the current directory.",
            show_default=False,
        ),
    ] = None,
    release: ReleaseOpt = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    base: Annotated[
        str,
        typer.Option(
            "--base",
            metavar="REV",
            help="The revision the working tree is compared with.",
            rich_help_panel=VERIFICATION,
        ),
    ] = "HEAD",
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard", metavar="I/N", help="Verify every N-th class from the I-th.", rich_help_panel=VERIFICATION
        ),
    ] = None,
    device: DeviceOpt = "cpu",
    python: PythonOpt = None,
    own_tests: OwnTestsOpt = True,
    target: VerifyTargetOpt = None,
    from_release: FromOpt = None,
    requirement: RequirementOpt = None,
    fmt: ReportFormatOpt = "table",
    output: OutputOpt = None,
    jobs: VerifyJobsOpt = None,
) -> None:
    """Compare the working tree with --base for every model class the change touches, on tiny random models.

    Exit 0 when every class is identical (across releases: or no worse, or repairs), 1 when one differs (tokens
    or scores), generates the same from other prepared inputs (inputs-differ), crashed or could not be verified."""
    _check_format(fmt, REPORTS)
    source = _source([path] if path is not None else None, release, only, skip, jobs, target=target)
    run = api.Run(device, python, own_tests, from_release, _split(requirement))
    report = api.verify(source, run, screen, base=base, shard=shard)
    # a JSON report says which run it is a shard of, for `codemod merge` and `apply --from-report`
    record = None
    if fmt == "json" and source.release is None:
        settings = cli_merge.settings_of(source, run, base, run.requirements)
        record = cli_merge.shard_run(source, report, base=base, shard=shard, settings=settings)
    _emit_verify(report, fmt, output, record)
    from codemod.verify.releases import KEPT  # identical, or across releases no worse than the target

    raise typer.Exit(0 if all(v.verdict in KEPT for v in report.verdicts) else 1)


def _run(verify: bool, run: api.Run) -> api.Run | None:
    """``apply``'s verification run, or None without --verify (where the releases to run on mean nothing)."""
    if verify:
        return run
    if run.from_release is not None or run.requirements:
        raise api.ToolError("--from and --requirement say what the code runs on when verified: they need --verify")
    return None


@command(cls=Command)
def apply(
    paths: PathsArg = None,
    release: ReleaseOpt = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    mark: MarkOpt = False,
    hooks: HooksOpt = False,
    unsafe: UnsafeOpt = False,
    allow_dirty: AllowDirtyOpt = False,
    verify: VerifyFlagOpt = False,
    keep_unverified: KeepUnverifiedOpt = False,
    device: DeviceOpt = "cpu",
    python: PythonOpt = None,
    own_tests: OwnTestsOpt = True,
    report_file: Annotated[
        Path | None,
        typer.Option(
            "--report", metavar="FILE", help="Write the verification report (JSON) here.", rich_help_panel=VERIFICATION
        ),
    ] = None,
    target: ApplyTargetOpt = None,
    mixin: MixinOpt = None,
    from_release: FromOpt = None,
    requirement: RequirementOpt = None,
    jobs: ApplyJobsOpt = None,
    cache: CacheOpt = True,
    from_report: Annotated[
        Path | None,
        typer.Option(
            "--from-report",
            metavar="FILE",
            help="Keep what the merged `verify` report (`codemod merge`) calls identical, revert the rest: "
            "the changes of --unsafe-fixes, verified by shard jobs, not verified again.",
            rich_help_panel=VERIFICATION,
        ),
    ] = None,
) -> None:
    """Rewrite model code: delete the generic overrides and reduce those with model-specific keys.

    An edit only verification proves is held back unless --verify runs every changed class on tiny random models,
    old code against new, and reverts what is not identical (or --unsafe-fixes makes it unverified)."""
    source = _source(paths, release, only, skip, jobs, cache, target, mixin)
    run = _run(verify, api.Run(device, python, own_tests, from_release, _split(requirement), keep_unverified))
    if from_report is not None:
        if run is not None:
            raise api.ToolError("--from-report keeps what a report verified: it takes no --verify")
        edits = api.Edits(mark, hooks, unsafe)
        applied = cli_merge.apply_from_report(
            source, edits, from_report, keep_unverified=keep_unverified, allow_dirty=allow_dirty
        )
    else:
        applied = api.apply(source, screen, api.Edits(mark, hooks, unsafe), run, allow_dirty=allow_dirty)
    if applied.report is not None:
        _emit_verify(applied.report, "table", None)
        if report_file is not None:
            _emit_verify(applied.report, "json", report_file)
    _print_summary(applied.result, applied.changes, list(source.only), list(applied.written))
    _print_reverted(applied.reverted)
    _run_tools(applied, python)


def _print_reverted(reverted: Sequence[Held]) -> None:
    """After verification, a line for each change it reverted, and why."""
    from codemod.publish.summary import held_line

    for held in sorted(reverted, key=lambda h: h.subject):
        stderr.print(held_line(held, "reverted"), style="yellow", markup=False, highlight=False, soft_wrap=True)


command(name="merge", cls=Command)(cli_merge.merge)


@command(cls=Command)
def fetch(
    version: Annotated[str, typer.Argument(metavar="VERSION", help="A transformers release on PyPI, e.g. 4.45.2.")],
    dest: Annotated[
        Path | None, typer.Argument(metavar="DIR", help="Where to lay it out (default: the user cache).")
    ] = None,
) -> None:
    """Download a transformers release from PyPI as a one-commit git checkout and print its path."""
    root = api.fetch(version, dest, screen)
    stdout.print(str(root), highlight=False, soft_wrap=True)


def _not_negative(value: int | None) -> int | None:
    if value is not None and value < 0:
        raise typer.BadParameter(f"{value} is not a number of pull requests (0 or more)")
    return value


@command(cls=Command)
def pr(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="CHECKOUT",
            help="A transformers git checkout; it is never modified (work happens in a temporary worktree).",
        ),
    ],
    repo: Annotated[
        str,
        typer.Option(
            "--repo", metavar="OWNER/NAME", help="The GitHub repository that gets the pull requests: OWNER/NAME."
        ),
    ],
    remote: Annotated[
        str,
        typer.Option(
            "--remote", metavar="REMOTE", help="The git remote to fetch --base from and push the branches to."
        ),
    ],
    base: Annotated[str, typer.Option("--base", metavar="BRANCH", help="The branch the pull requests target.")],
    api_url: Annotated[
        str,
        typer.Option(
            "--api-url", metavar="URL", help="GitHub's REST API; for GitHub Enterprise: https://HOST/api/v3."
        ),
    ] = "https://api.github.com",
    group_by: Annotated[
        str,
        typer.Option("--group-by", metavar="GROUPING", help="One pull request per model, per family, or one for all."),
    ] = "model",
    max_open: Annotated[
        int | None,
        typer.Option(
            "--max-open",
            metavar="N",
            callback=_not_negative,
            help="Open no new pull request while this many of the bot's are open.",
        ),
    ] = None,
    only: OnlyOpt = None,
    skip: SkipOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            metavar="",
            help="Print the branches, commits and pull requests it would push and open; write nothing.",
        ),
    ] = False,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label", metavar="LABELS", help="A label besides transformers-codemod (comma-separated, repeatable)."
        ),
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


@command(cls=Command)
def explain(
    code: Annotated[
        str | None,
        typer.Argument(
            metavar="CODE",
            help="A rule's code (PI111) or name (position-ids-from-mask). Without it: every rule.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Explain a rule: a recogniser's cases and what the mixins do about it, or what a TB rule blocks.

    Without CODE, list the rules (the recognisers, then what blocks a tree on its target)."""
    from codemod.analyse import blockers
    from codemod.rules import doc

    if code is None:
        text = doc.listing() + "\n" + blockers.listing()
    elif (rule := doc.find(code)) is not None:
        text = doc.explain(rule)
    elif (blocker := blockers.explain(code)) is not None:  # TB001 …: what blocks a tree on its target
        text = blocker
    else:
        why = blockers.unknown(code) or doc.unknown(code)
        stderr.print(f"error: {why}", style="red", markup=False, highlight=False, soft_wrap=True)
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
        bool,
        typer.Option(
            "--version", metavar="", callback=_version_callback, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Migrate transformers' prepare_inputs_for_generation overrides onto GenerationMixin, and prove nothing changed."""


def main() -> None:
    app(standalone_mode=True)

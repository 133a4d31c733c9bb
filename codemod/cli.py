"""The command line: parse arguments, call the pipeline's stages, render. Nothing else lives here.

Exit codes: 0 success; 1 reserved for "there are changes" (``diff``) and failed verification;
2 usage or tool errors.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from codemod import __version__

DEFAULT_RELEASE = "4.45.2"

app = typer.Typer(
    name="codemod",
    help="Migrate transformers' prepare_inputs_for_generation overrides onto GenerationMixin, and prove nothing changed.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
stdout = Console()
stderr = Console(stderr=True)


class ToolError(Exception):
    """An error the user can act on; reported in one line, exit status 2."""


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


PathArg = Annotated[
    Optional[Path],
    typer.Argument(
        help="A transformers checkout, an installed transformers package, a directory of model code or one file. "
        f"Default: the pristine release given by --release (fetched from PyPI and cached).",
        show_default=False,
    ),
]
ReleaseOpt = Annotated[str, typer.Option("--release", help="Release to fetch when PATH is not given.")]
OnlyOpt = Annotated[Optional[list[str]], typer.Option("--only", help="Only these models (comma-separated, repeatable).")]
SkipOpt = Annotated[Optional[list[str]], typer.Option("--skip", help="Skip these models (comma-separated, repeatable).")]
JobsOpt = Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Worker processes (default: CPU count).")]


@contextmanager
def _progress(enabled: bool) -> Iterator:
    """A progress display on a terminal for runs that take more than a moment; nothing otherwise."""
    if not enabled or not stderr.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=stderr, transient=True,
    ) as progress:
        yield progress


def _resolve_path(path: Path | None, release: str):
    from codemod.checkout import resolve
    from codemod.fetch import FetchError, fetch_release

    if path is None:
        try:
            path = fetch_release(release, progress=lambda message: stderr.print(message, style="dim"))
        except FetchError as error:
            raise ToolError(str(error)) from error
    try:
        return resolve(path)
    except FileNotFoundError as error:
        raise ToolError(f"no such file or directory: {error}") from error


def run_scan(path: Path | None, release: str, only: list[str], skip: list[str], jobs: int | None, cache: bool):
    """checkout → index → classify; shared by every command that starts with a scan."""
    from codemod.scan import scan as scan_checkout

    checkout = _resolve_path(path, release)
    with _progress(True) as progress:
        task = None

        def report(stage: str, done: int, total: int) -> None:
            nonlocal task
            if progress is None:
                return
            if task is None:
                task = progress.add_task("parsing model files", total=total)
            progress.update(task, completed=done)

        result = scan_checkout(checkout, use_cache=cache, jobs=jobs, progress=report)
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
) -> None:
    """Find every prepare_inputs_for_generation override and classify it against this checkout's mixin."""
    from codemod.report import render

    if fmt not in ("table", "json", "markdown"):
        raise typer.BadParameter(f"unknown format {fmt!r}: use table, json or markdown", param_hint="--format")
    started = time.perf_counter()
    result = run_scan(path, release, _split(only), _split(skip), jobs, cache)
    if output is not None and fmt == "table":
        with output.open("w", encoding="utf-8") as handle:
            render(result, fmt, Console(file=handle, width=160), verbose)
    else:
        text = render(result, fmt, stdout, verbose)
        if text is not None:
            if output is not None:
                output.write_text(text, encoding="utf-8")
            else:
                sys.stdout.write(text)
    if fmt == "table":
        stderr.print(f"scanned in {time.perf_counter() - started:.2f}s", style="dim")


@app.command()
def fetch(
    version: Annotated[str, typer.Argument(help="A transformers release on PyPI, e.g. 4.45.2.")],
    dest: Annotated[Optional[Path], typer.Argument(help="Where to lay it out (default: the user cache).")] = None,
) -> None:
    """Download a transformers release's sdist from PyPI as a git checkout (one commit on main) and print its path."""
    from codemod.fetch import FetchError, fetch_release

    try:
        root = fetch_release(version, dest, progress=lambda message: stderr.print(message, style="dim"))
    except FetchError as error:
        raise ToolError(str(error)) from error
    stdout.print(str(root), highlight=False, soft_wrap=True)


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
    try:
        app(standalone_mode=True)
    except ToolError as error:
        stderr.print(f"error: {error}", style="red", highlight=False)
        raise SystemExit(2) from None

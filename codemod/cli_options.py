"""The command line's options, declared once: each a typed ``Annotated`` alias that the commands of
:mod:`codemod.cli` share, with its metavar, its help and the panel its help lists it in.

An option that means one thing everywhere is one alias; where a default differs by command (``--jobs``,
``--target``, ``--format``), one maker gives each command its own help for the same meaning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def at_least_one(value: int | None) -> int | None:
    if value is not None and value < 1:
        raise typer.BadParameter(f"{value} is not a number of processes (1 or more)")
    return value


# The panels a command's options are grouped in (help on a terminal draws each in a box; off one, under a heading)
SELECTION = "Selection"
EDITS = "What apply writes"
VERIFICATION = "Verification"
OUTSIDE = "Code outside transformers"
OUTPUT = "Output"

PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(
        metavar="PATH",
        help="Files and directories of model code (together: one tree), or one transformers checkout or installed "
        "transformers package. Default: the current directory.",
        show_default=False,
    ),
]
ReleaseOpt = Annotated[
    str | None,
    typer.Option(
        "--release",
        metavar="VERSION",
        help="Work on a pristine copy of this transformers release instead of PATHs (fetched from PyPI and cached).",
        rich_help_panel=SELECTION,
    ),
]
OnlyOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--only", metavar="MODELS", help="Only these models (comma-separated, repeatable).", rich_help_panel=SELECTION
    ),
]
SkipOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--skip", metavar="MODELS", help="Skip these models (comma-separated, repeatable).", rich_help_panel=SELECTION
    ),
]


def _jobs(help: str) -> Any:
    return typer.Option("--jobs", "-j", metavar="N", callback=at_least_one, help=help)


#: what --jobs means where only the scan runs in parallel
PARSING = "Processes that parse model files (default: the CPU count)."
ScanJobsOpt = Annotated[int | None, _jobs(PARSING)]
ApplyJobsOpt = Annotated[
    int | None,
    _jobs(
        "Processes that parse model files (default: the CPU count); with --verify, classes verified at a time (default: 1)."
    ),
]
VerifyJobsOpt = Annotated[int | None, _jobs("Classes verified at a time (default: 1).")]
CacheOpt = Annotated[
    bool, typer.Option("--cache/--no-cache", metavar="", help="Reuse earlier scans of the same files (user cache).")
]
MarkOpt = Annotated[
    bool,
    typer.Option(
        "--mark",
        metavar="",
        help="Also mark every override that stays as it is with '# Overwritten -- <reason>' (comments only).",
        rich_help_panel=EDITS,
    ),
]
HooksOpt = Annotated[
    bool,
    typer.Option(
        "--hooks",
        metavar="",
        help="Also add the hooks mined from repeated overrides (see codemod hooks) to the mixin and rewrite their "
        "members (a transformers checkout).",
        rich_help_panel=EDITS,
    ),
]
AllowDirtyOpt = Annotated[
    bool,
    typer.Option(
        "--allow-dirty", metavar="", help="Rewrite a git tree with uncommitted changes.", rich_help_panel=EDITS
    ),
]
UnsafeOpt = Annotated[
    bool,
    typer.Option(
        "--unsafe-fixes",
        metavar="",
        help="Without --verify, also make the edits only verification proves (they change what the standard generate "
        "flow prepares); by default they are held back and listed.",
        rich_help_panel=EDITS,
    ),
]
VerifyFlagOpt = Annotated[
    bool,
    typer.Option(
        "--verify",
        metavar="",
        help="Verify every changed class on tiny random models; revert what is not identical.",
        rich_help_panel=VERIFICATION,
    ),
]
KeepUnverifiedOpt = Annotated[
    bool,
    typer.Option(
        "--keep-unverified",
        metavar="",
        help="Keep changes to classes that could not be verified.",
        rich_help_panel=VERIFICATION,
    ),
]
#: the release model code outside transformers runs on: one meaning for every command, each with its default
TARGET = (
    "Model code outside transformers: the transformers release it runs on, whose mixin decides what a deletion reaches"
)


def _target(default: str) -> Any:
    return typer.Option("--target", metavar="VERSION", help=f"{TARGET} (default: {default}).", rich_help_panel=OUTSIDE)


#: a tree's target when no option names one (codemod.analyse.target.default_target; verification runs on it too)
_RELEASE_IT_RUNS_WITH = "the release its metadata allows, else the installed one, else the newest"
_RUNS_WITH = f"{_RELEASE_IT_RUNS_WITH}; built-in: the generic implementation this tool ships"
ScanTargetOpt = Annotated[str | None, _target(_RUNS_WITH)]
ApplyTargetOpt = Annotated[str | None, _target(_RUNS_WITH)]
VerifyTargetOpt = Annotated[str | None, _target(_RELEASE_IT_RUNS_WITH)]
MixinOpt = Annotated[
    Path | None,
    typer.Option(
        "--mixin",
        metavar="DIR",
        help="Model code outside transformers: judge it against the mixin of this transformers checkout or "
        "installed package instead of a --target release.",
        rich_help_panel=OUTSIDE,
    ),
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="VERSION",
        help="Model code outside transformers: the release the old code runs on (default: --target's).",
        rich_help_panel=OUTSIDE,
    ),
]
RequirementOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--requirement",
        "-r",
        metavar="PACKAGE",
        help="Model code outside transformers: a package it needs besides transformers (repeatable).",
        rich_help_panel=OUTSIDE,
    ),
]
DeviceOpt = Annotated[
    str,
    typer.Option(
        "--device", metavar="DEVICE", help="cpu or cuda: where the tiny models run.", rich_help_panel=VERIFICATION
    ),
]
PythonOpt = Annotated[
    Path | None,
    typer.Option(
        "--python",
        metavar="PYTHON",
        help="An interpreter with torch and the checkout's dependencies (default: a cached venv).",
        rich_help_panel=VERIFICATION,
    ),
]
OwnTestsOpt = Annotated[
    bool,
    typer.Option(
        "--own-tests/--no-own-tests",
        metavar="",
        help="Also run the checkout's tests/models/<model> generate tests.",
        rich_help_panel=VERIFICATION,
    ),
]


def _format(choices: str) -> Any:
    return typer.Option("--format", "-f", metavar="FORMAT", help=f"{choices}.", rich_help_panel=OUTPUT)


ReportFormatOpt = Annotated[str, _format("table, json or markdown")]
ScanFormatOpt = Annotated[str, _format("table, json, markdown, github (workflow annotations) or sarif")]
DiffFormatOpt = Annotated[str, _format("patch, github (workflow annotations) or sarif")]
OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", metavar="FILE", help="Write the report to this file.", rich_help_panel=OUTPUT),
]

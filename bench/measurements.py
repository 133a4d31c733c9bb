"""The measurements page, ``docs/measurements.md``, generated from the measured runs in ``bench/measurements.json``.

    python -m bench.measurements            # write the page from the latest runs
    python -m bench.measurements --check    # exit 1 when the page is not what the runs give
    python -m bench.measurements record --release 4.45.2 --measure "wall time (make run)" \\
        --value "15 min 11 s" --command "make run"   # add a run (dated today), then write the page

The data file keeps every run recorded; the page shows the latest of each release and measure, with the
command that measured it, so that a number on the page can be measured again. Older numbers are history:
``CHANGELOG.md``. A test fails when the committed page is not the generated one.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from codemod.generated import refresh

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "measurements.json"
PAGE = ROOT / "docs" / "measurements.md"
REFRESH = "python -m bench.measurements"


@dataclasses.dataclass(frozen=True)
class Run:
    """One measured figure: what was measured on which release, its value, the command and the day."""

    release: str
    measure: str
    value: str
    command: str
    date: str

    def __post_init__(self) -> None:
        datetime.date.fromisoformat(self.date)  # a day as YYYY-MM-DD, or ValueError naming it


@dataclasses.dataclass(frozen=True)
class Measurements:
    machine: str
    runs: tuple[Run, ...]


def load(path: Path = DATA) -> Measurements:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Measurements(data["machine"], tuple(Run(**run) for run in data["runs"]))


def dump(measurements: Measurements, path: Path = DATA) -> None:
    data = {"machine": measurements.machine, "runs": [dataclasses.asdict(run) for run in measurements.runs]}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def latest(runs: Iterable[Run]) -> list[Run]:
    """The latest run of each release and measure (a later entry wins a tie), in the order each first appears."""
    chosen: dict[tuple[str, str], Run] = {}
    for run in runs:
        key = (run.release, run.measure)
        if key not in chosen or run.date >= chosen[key].date:
            chosen[key] = run
    return list(chosen.values())


def _release_order(release: str) -> tuple[int, tuple[int, ...], str]:
    """Releases by version (the first version a label names); labels without one after them."""
    found = re.match(r"\d+(\.\d+)*", release)
    if found is None:
        return (1, (), release)
    return (0, tuple(int(part) for part in found.group().split(".")), release)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def page(measurements: Measurements) -> str:
    """``docs/measurements.md``: one table per release, a row per measure with its value, command and date."""
    runs = latest(measurements.runs)
    releases = sorted(dict.fromkeys(run.release for run in runs), key=_release_order)
    lines = [
        "# Measurements",
        "",
        f"<!-- Generated from bench/measurements.json by `{REFRESH}`: do not edit. -->",
        "",
        "The latest measured run of each release and measure, with the command that measured it, on",
        f"{measurements.machine}.",
        "",
        "`make run` is `codemod apply --verify --hooks --release RELEASE --jobs 2` (RELEASE=4.45.2 by default) on a",
        "fresh copy of the release. `<fresh copy>` is a release fetched with `codemod fetch`, `<clone>` a git clone of",
        "transformers at that tag (with its `tests/` and `utils/`). Earlier runs, and what changed between them, are in",
        "[CHANGELOG.md](../CHANGELOG.md). To add a run: `python -m bench.measurements record --help`.",
    ]
    for release in releases:
        lines += ["", f"## {release}", "", "| measure | value | command | date |", "|---|---|---|---|"]
        lines += [
            f"| {_cell(run.measure)} | {_cell(run.value)} | `{_cell(run.command)}` | {run.date} |"
            for run in runs
            if run.release == release
        ]
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=REFRESH, description="Write docs/measurements.md from the measured runs in bench/measurements.json."
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is not current")
    parser.add_argument("--data", type=Path, default=DATA, help="the runs (default: %(default)s)")
    parser.add_argument("-o", "--output", type=Path, default=PAGE, help="the page (default: %(default)s)")
    commands = parser.add_subparsers(dest="action")
    record = commands.add_parser("record", help="add a measured run to the data file, then write the page")
    for name in ("release", "measure", "value", "command"):
        record.add_argument(f"--{name}", required=True)
    record.add_argument("--date", default=None, help="YYYY-MM-DD (default: today, UTC)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    measurements = load(args.data)
    if args.action == "record":
        today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
        run = Run(args.release, args.measure, args.value, args.command, args.date or today)
        measurements = dataclasses.replace(measurements, runs=(*measurements.runs, run))
        dump(measurements, args.data)
    return refresh(args.output, page(measurements), check=args.check, command=REFRESH)


if __name__ == "__main__":
    raise SystemExit(main())

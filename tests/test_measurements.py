"""The measurements page (``docs/measurements.md``) is what ``python -m bench.measurements`` generates.

Like ``docs/rules.md``, the page is generated and committed: these tests fail when it drifts from the
measured runs in ``bench/measurements.json``, and pin what "the latest run" means.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import measurements
from bench.measurements import Measurements, Run

from .conftest import REPO


def run(release: str, measure: str, value: str, date: str) -> Run:
    return Run(release, measure, value, f"codemod something {value}", date)


def test_committed_page_is_the_generated_one() -> None:
    expected = measurements.page(measurements.load())
    assert measurements.PAGE.read_text(encoding="utf-8") == expected, (
        "docs/measurements.md is not current: run `python -m bench.measurements`"
    )


def test_page_and_data_are_where_the_repository_keeps_them() -> None:
    assert measurements.PAGE == REPO / "docs" / "measurements.md"
    assert measurements.DATA == REPO / "bench" / "measurements.json"


def test_module_entry_point_checks_the_committed_page() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.measurements", "--check"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == done.stderr == ""


@pytest.mark.parametrize(
    ("runs", "shown"),
    [
        pytest.param(
            [run("4.45.2", "time", "9 min", "2026-12-01"), run("4.45.2", "time", "8 min", "2026-12-02")],
            ["8 min"],
            id="a-later-run-replaces-an-earlier-one",
        ),
        pytest.param(
            [run("4.45.2", "time", "8 min", "2026-12-02"), run("4.45.2", "time", "9 min", "2026-12-01")],
            ["8 min"],
            id="an-older-run-recorded-later-does-not",
        ),
        pytest.param(
            [run("4.45.2", "time", "9 min", "2026-12-02"), run("4.45.2", "time", "8 min", "2026-12-02")],
            ["8 min"],
            id="the-same-day-the-entry-recorded-last",
        ),
        pytest.param(
            [run("4.45.2", "time", "9 min", "2026-12-01"), run("5.23.0", "time", "2 min", "2026-12-01")],
            ["9 min", "2 min"],
            id="each-release-keeps-its-own",
        ),
        pytest.param(
            [run("4.45.2", "time", "9 min", "2026-12-01"), run("4.45.2", "lines", "1,176", "2026-11-30")],
            ["9 min", "1,176"],
            id="each-measure-keeps-its-own",
        ),
    ],
)
def test_latest_keeps_one_run_per_release_and_measure(runs: list[Run], shown: list[str]) -> None:
    assert [r.value for r in measurements.latest(runs)] == shown


def test_page_orders_releases_by_version_and_shows_the_command() -> None:
    runs = (
        run("built-in", "wheels", "2 deleted", "2026-12-01"),
        run("5.23.0", "time", "2 min", "2026-12-01"),
        run("4.45.2", "time", "9 min", "2026-12-01"),
        run("4.46.3", "time", "3 | 4 min", "2026-12-01"),
    )
    text = measurements.page(Measurements("a test machine", runs))
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## 4.45.2", "## 4.46.3", "## 5.23.0", "## built-in"]
    assert "| time | 9 min | `codemod something 9 min` | 2026-12-01 |" in text
    assert "| time | 3 \\| 4 min |" in text, "a bar in a value would end the cell"
    assert "\na test machine.\n" in text


def test_a_date_that_is_no_day_is_refused() -> None:
    with pytest.raises(ValueError):
        run("4.45.2", "time", "9 min", "6 Dec")


def test_record_adds_a_run_and_check_tells_when_the_page_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, page = tmp_path / "runs.json", tmp_path / "docs" / "measurements.md"
    data.write_text(json.dumps({"machine": "m", "runs": []}), encoding="utf-8")
    files = ["--data", str(data), "-o", str(page)]
    assert measurements.main(["--check", *files]) == 1
    assert "not current" in capsys.readouterr().err and not page.exists()
    assert measurements.main(files) == 0
    assert measurements.main(["--check", *files]) == 0
    record = ["record", "--release", "4.45.2", "--measure", "time", "--value", "8 min", "--command", "make run"]
    assert measurements.main([*files, *record, "--date", "2026-12-07"]) == 0
    assert measurements.load(data).runs == (Run("4.45.2", "time", "8 min", "make run", "2026-12-07"),)
    assert "| time | 8 min | `make run` | 2026-12-07 |" in page.read_text(encoding="utf-8")
    page.write_text(page.read_text(encoding="utf-8") + "an edit by hand\n", encoding="utf-8")
    assert measurements.main(["--check", *files]) == 1

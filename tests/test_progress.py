"""Verification's progress, round by round (``codemod.cli_screen``): a later round's count and estimate are its own."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from codemod import cli_screen
from codemod.cli_screen import Rounds


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


#: (seconds on the clock, done, total, finished) -> (round, seconds into it)
FIRST_ROUND_THEN_REPAIRS = [
    ((10, 0, 3, False), (1, 10)),
    ((20, 1, 3, True), (1, 20)),
    ((20, 1, 3, False), (1, 20)),
    ((30, 2, 3, True), (1, 30)),
    ((40, 3, 3, True), (1, 40)),
    # the repairs round: 2 classes, its clock from the first round's last report
    ((45, 0, 2, False), (2, 5)),
    ((50, 1, 2, True), (2, 10)),
    ((60, 2, 2, True), (2, 20)),
    # a third round of the same size as the second: the count goes back
    ((61, 0, 2, False), (3, 1)),
    ((70, 1, 2, True), (3, 10)),
    # a round of one class after a round of one class: a finished count that does not go up
    ((80, 1, 1, True), (4, 10)),
    ((90, 1, 1, True), (5, 10)),
]


def test_each_round_counts_and_times_its_own_classes() -> None:
    clock = _Clock()
    rounds = Rounds(clock)
    for (now, done, total, finished), expected in FIRST_ROUND_THEN_REPAIRS:
        clock.now = now
        elapsed = rounds.tick(done, total, finished)
        assert (rounds.number, elapsed) == expected, (now, done, total)
    assert rounds.label() == "round 5 "


def test_a_log_line_of_a_later_round_says_its_round_and_estimates_from_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``[1/87] … elapsed 672s, ETA 57804s``, the first round's time counted into the second's estimate."""
    from codemod.contracts import Verdict
    from codemod.verify.compare import ClassVerdict

    out = io.StringIO()
    monkeypatch.setattr(cli_screen, "stderr", Console(file=out, width=200))
    clock = _Clock()
    monkeypatch.setattr(cli_screen.time, "perf_counter", clock)
    verdict = ClassVerdict("m.py::A", Verdict.IDENTICAL)
    with cli_screen.screen.verifying() as progress:
        for now, done, total in ((100, 1, 2), (200, 2, 2), (210, 1, 10), (220, 2, 10)):
            clock.now = now
            progress("A", None, done - 1, total)
            progress("A", verdict, done, total)
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("[2/2] A: identical") and lines[1].endswith("elapsed 200s, ETA 0s")
    assert lines[2].startswith("round 2 [1/10] A: identical") and lines[2].endswith("elapsed 10s, ETA 90s")
    assert lines[3].endswith("elapsed 20s, ETA 80s")


def test_on_a_terminal_a_later_round_gets_a_bar_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: one bar for every round, stuck at the first round's total."""
    from codemod.contracts import Verdict
    from codemod.verify.compare import ClassVerdict

    out = io.StringIO()
    monkeypatch.setattr(cli_screen, "stderr", Console(file=out, width=120, force_terminal=True))
    verdict = ClassVerdict("m.py::A", Verdict.IDENTICAL)
    with cli_screen.screen.verifying() as progress:
        for done, total in ((1, 2), (2, 2), (1, 3)):
            progress("Alpha", None, done - 1, total)
            progress("Alpha", verdict, done, total)
    shown = out.getvalue()
    assert "verifying Alpha" in shown and "verifying round 2 Alpha" in shown and "1/3" in shown

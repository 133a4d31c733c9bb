"""What the commands show while they run, on stderr: dim notes, a progress bar on a terminal, and plain
progress lines in a log (a CI job's), each with its elapsed time and an estimate of what is left."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:  # the stages and rich's progress display are imported where they run (``--help`` stays quick)
    from rich.progress import Progress, ProgressColumn, TaskID

    from codemod.analyse.index import Progress as ScanProgress
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.runner import Progress as VerifyProgress

#: the commands' stderr (laid out for where it goes by ``codemod.cli``)
stderr = Console(stderr=True)


@contextmanager
def _bar(description: str, *columns: ProgressColumn) -> Iterator[Callable[[int, int, str], None]]:
    """A transient progress bar on stderr: ``update(done, total, current)``, whose first call starts the task."""
    from rich.progress import Progress

    with Progress(*columns, console=stderr, transient=True) as bar:
        task: TaskID | None = None

        def update(done: int, total: int, current: str) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task(description, total=total, current=current)
            bar.update(task, completed=done, current=current)

        yield update


class Rounds:
    """Verification runs in rounds (the first pass, then each round of repairs or hooks), and each counts its classes
    from 1: ``tick`` says which round a report belongs to and how long that round has run, so that a later round's
    estimate is not made from the time the earlier ones took. A round begins where the last one's last report was."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self.clock = clock or time.perf_counter
        self.number = 1
        self.began = self.last_at = self.clock()
        self.total: int | None = None
        self.done = 0
        self.finished: int | None = None  # the count of this round's last finished report

    def tick(self, done: int, total: int, finished: bool) -> float:
        """The seconds since the round of this report began (a class started, or ``finished``, ``done`` of
        ``total``): a count that goes back, or a finished count that does not go up, or another total, is a new round."""
        now = self.clock()
        restarted = done < self.done or (finished and self.finished is not None and done <= self.finished)
        if self.total is not None and (total != self.total or restarted):
            self.number, self.began, self.finished = self.number + 1, self.last_at, None
        self.total, self.done, self.last_at = total, done, now
        if finished:
            self.finished = done
        return now - self.began

    def label(self) -> str:
        return f"round {self.number} " if self.number > 1 else ""


class _Screen:
    """What the commands show while they run, on stderr: dim notes, and progress bars on a terminal only."""

    def say(self, message: str) -> None:
        stderr.print(message, style="dim")

    @contextmanager
    def scanning(self) -> Iterator[ScanProgress | None]:
        if not stderr.is_terminal:
            yield None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with _bar("parsing model files", *columns) as update:
            yield lambda stage, done, total: update(done, total, stage)

    @contextmanager
    def verifying(self) -> Iterator[VerifyProgress]:
        """A bar on a terminal (done, current class, elapsed, ETA); plain lines in CI logs."""
        if stderr.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            columns = (
                TextColumn("{task.description} {task.fields[current]}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            from rich.progress import Progress

            with Progress(*columns, console=stderr, transient=True) as bar:
                yield _round_bars(bar)
            return
        rounds = Rounds()

        def log(current: str, verdict: ClassVerdict | None, done: int, total: int) -> None:
            elapsed = rounds.tick(done, total, finished=verdict is not None)
            if verdict is None:
                return
            eta = elapsed / done * (total - done) if done else 0
            stderr.print(
                f"{rounds.label()}[{done}/{total}] {current}: {verdict.verdict} ({len(verdict.compared)} scenarios) "
                f"elapsed {elapsed:.0f}s, ETA {eta:.0f}s",
                highlight=False,
                soft_wrap=True,
            )

        yield log


def _round_bars(bar: Progress) -> VerifyProgress:
    """On a terminal, one bar per round, each from its own count and clock (one task kept across rounds froze at the
    first round's total)."""
    rounds = Rounds()
    task: TaskID | None = None
    number = 0

    def update(current: str, verdict: ClassVerdict | None, done: int, total: int) -> None:
        nonlocal task, number
        rounds.tick(done, total, finished=verdict is not None)
        if task is None or rounds.number != number:
            if task is not None:
                bar.remove_task(task)
            number = rounds.number
            task = bar.add_task(f"verifying {rounds.label()}".strip(), total=total, current=current)
        bar.update(task, completed=done, current=current)

    return update


screen = _Screen()

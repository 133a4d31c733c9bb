"""What the commands show while they run, on stderr: dim notes, a progress bar on a terminal, and plain
progress lines in a log (a CI job's), each with its elapsed time and an estimate of what is left."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:  # the stages and rich's progress display are imported where they run (``--help`` stays quick)
    from rich.progress import ProgressColumn, TaskID

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

"""Progress of long runs (rebuild, verify, export, import): events done, rate, time left.

On a terminal (stderr) a rich progress bar shows them; when stderr is not a terminal nothing is
printed while the run goes, so logs and pipes stay clean.  Either way the run's callback receives
the number of events done so far, and :class:`Meter` keeps the count and the rate for the summary
the command prints at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

#: Called with the number of events done so far.
Callback = Callable[[int], None]


class RateColumn(ProgressColumn):
    """Events per second: rich's moving estimate, or the average until it has one."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None and task.elapsed:
            speed = task.completed / task.elapsed
        return Text("" if speed is None else f"{speed:,.0f} events/s", style="cyan")


def rate(done: int, seconds: float) -> str:
    """``1,234 events in 0.52 s (2,373 events/s)``: the summary line's figures."""
    per_second = done / seconds if seconds > 0 else 0.0
    return f"{done:,} events in {seconds:.2f} s ({per_second:,.0f} events/s)"


class Meter:
    """``with Meter("rebuild", total) as m:`` — pass ``m.update`` as a run's progress callback.

    ``total`` may be None (unknown) or an estimate: the bar is filled at the end either way.
    ``show`` forces the bar on or off; by default it is shown when stderr is a terminal.
    """

    def __init__(self, label: str, total: int | None = None, show: bool | None = None) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.finished: float | None = None
        console = Console(stderr=True)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if console.is_terminal if show is None else show:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(),
                TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                console=console, transient=False,
            )  # fmt: skip

    def __enter__(self) -> Self:
        self.started = time.monotonic()
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=self.total)
        return self

    def update(self, done: int) -> None:
        """The run has done ``done`` events in all."""
        self.done = done
        if self._progress is not None and self._task is not None:
            total = self.total if self.total is None or done <= self.total else done
            self._progress.update(self._task, completed=done, total=total)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finished = time.monotonic()
        if self._progress is not None and self._task is not None:
            if exc_type is None:
                self._progress.update(self._task, completed=self.done, total=self.done)
            self._progress.stop()

    @property
    def seconds(self) -> float:
        return (self.finished or time.monotonic()) - self.started

    def summary(self) -> str:
        return rate(self.done, self.seconds)

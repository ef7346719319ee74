"""How a running scheduler fares: what ``GET /ready`` asks of it.  Apart from the loop
(:mod:`jobledger.scheduler.loop`) so that a server answers ``/ready`` before it has loaded the loop."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any


@dataclass
class SchedulerState:
    """How a running scheduler fares, for ``GET /ready``."""

    #: Why the last round failed; None while rounds succeed.
    problem: str | None = None
    #: Why the scheduler no longer runs; None while it runs.
    stopped: str | None = None
    #: Rounds completed.
    rounds: int = 0

    def ended(self, task: asyncio.Task[Any]) -> None:
        """A done-callback for the scheduler's task."""
        if task.cancelled():
            self.stopped = "cancelled"
        else:
            error = task.exception()
            self.stopped = f"failed: {error!r}" if error is not None else "returned"

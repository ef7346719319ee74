"""Stopping asyncio tasks that talk to Redis: cancel them, and cancel again until they have ended.

On Python 3.11, ``asyncio.wait_for`` returns the inner result when that result arrives together
with a cancellation, and the cancellation is lost.  redis-py sends every command (and opens every
connection) through ``wait_for`` when a socket timeout is set, so a task cancelled at that moment
carries on as if nothing happened: a loop then never ends and a shutdown that awaits it hangs.
:func:`cancel_and_wait` cancels again whatever is still running, so the next await ends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

#: Seconds between two cancellations of a task that has not ended.
RECANCEL = 0.1


async def cancel_and_wait(tasks: Iterable[asyncio.Future[Any]], timeout: float | None = None) -> set[Any]:
    """Cancel ``tasks`` and wait until they have all ended, cancelling again every
    :data:`RECANCEL` seconds those that are still running; give up after ``timeout`` seconds
    (None: never).  The tasks still running when it gave up (empty when all ended)."""
    pending: set[Any] = {task for task in tasks if not task.done()}
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while pending:
        for task in pending:
            task.cancel()
        wait = RECANCEL if deadline is None else min(RECANCEL, max(0.0, deadline - loop.time()))
        _, pending = await asyncio.wait(pending, timeout=wait)
        if deadline is not None and loop.time() >= deadline:
            break
    return pending

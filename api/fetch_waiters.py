"""Long-polling fetches: wait for a job to arrive instead of answering 204 at once.

One task per process follows the ledger's live end (a blocking XREAD) and, for every event that
names a queue, wakes the fetches waiting on that queue; they try again.  The task starts with the
first waiting fetch, so a server nobody long-polls pays nothing, and it never busy-loops: it blocks
in Redis until events come.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict

import redis

from ledger.runner import AsyncLedger
from ledger.stream import newest

log = logging.getLogger("jobledger.api")
BLOCK_MS = 5_000


class FetchWaiters:
    """Per-queue wake-ups driven by the ledger's new events."""

    def __init__(self, ledger: AsyncLedger) -> None:
        self.ledger = ledger
        self._events: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self._task: asyncio.Task[None] | None = None

    def signal(self, queue: str) -> asyncio.Event:
        """The event set when something next happens on ``queue``; start following if needed."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._follow())
        return self._events[queue]

    async def wait(self, queue: str, timeout: float) -> None:
        """Return when something happens on ``queue``, or after ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.signal(queue).wait(), timeout)

    def _wake(self, queues: set[str]) -> None:
        for queue in queues:
            event = self._events.pop(queue, None)
            if event is not None:
                event.set()

    async def _follow(self) -> None:
        """Follow the ledger until a blocking read times out with nobody waiting."""
        position = await self.ledger.read(newest())
        # whoever registered before the position was known tries once more: nothing slips between
        self._wake(set(self._events))
        stream = self.ledger.keys.events
        while True:
            try:
                reply = await self.ledger.client.xread({stream: position}, count=1000, block=BLOCK_MS)
            except redis.RedisError as exc:
                log.warning("fetch waiters: cannot follow the ledger: %s", exc)
                self._wake(set(self._events))  # let the waiters retry and report for themselves
                return
            if not reply and not self._events:
                return
            for _, entries in reply or []:
                position = entries[-1][0]
                self._wake({_queue(fields) for _, fields in entries} - {""})

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _queue(fields: dict[bytes, bytes]) -> str:
    value = fields.get(b"queue", b"")
    return value.decode() if isinstance(value, bytes) else str(value)

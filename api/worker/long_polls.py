"""A worker's long-polls over HTTP on several queues: one open per queue, none given up while it runs.

A long-poll given up (its request cancelled) just as the server fetched for it would leave its jobs
started for nobody, running until their timeout: the server hands back the jobs of a client it saw
leave, but not those of one that left after the answer went out.  So when one queue's poll answers
with jobs, the others stay open: the next wait takes them up again, and one that answers while no
wait holds it (the worker busy with what the first brought) has its jobs handed back at once.  Only
a stopping worker cancels its polls (the server then sees it leave and fetches nothing more).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

log = logging.getLogger("jobledger.worker")


class Job(Protocol):
    @property
    def id(self) -> int: ...


J = TypeVar("J", bound=Job)


class LongPolls(Generic[J]):
    """The open long-polls of one worker, by queue; ``hand_back`` returns the jobs of a poll that
    answered while no wait held it."""

    def __init__(self, hand_back: Callable[[list[J]], Awaitable[None]]) -> None:
        self._hand_back = hand_back
        self._open: dict[str, asyncio.Future[list[J]]] = {}
        self._held: set[asyncio.Future[list[J]]] = set()
        self._returning: set[asyncio.Future[None]] = set()
        self._stop_watch: asyncio.Future[None] | None = None

    def is_open(self, queue: str) -> bool:
        return queue in self._open

    async def first_answers(
        self,
        queues: Sequence[str],
        count: int,
        start: Callable[[str, int], Awaitable[list[J]]],
        stopping: asyncio.Event,
    ) -> list[J]:
        """The jobs of the polls of ``queues`` (a queue's open poll, else one ``start(queue, count)``
        opens) that answered first, in the queues' order, once one answers with jobs, all answered
        empty, or ``stopping`` is set.  Stopping (or this wait cancelled) cancels the polls still
        waiting; otherwise they stay open."""
        polls = [self._hold(queue, count, start) for queue in queues]
        stop = asyncio.ensure_future(stopping.wait())
        pending: set[asyncio.Future[Any]] = {p for p in polls if not p.done()}
        give_up = True  # the polls left, unless one answered with jobs
        try:
            while pending and not stop.done() and not any(_jobs(p) for p in polls):
                _, pending = await asyncio.wait(pending | {stop}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(stop)
            give_up = stop.done()
        finally:
            stop.cancel()
            left = [p for p in polls if not p.done()]
            self._held.difference_update(left)
            if give_up:
                for poll in left:
                    poll.cancel()
                await asyncio.gather(*left, return_exceptions=True)
            elif left and self._stop_watch is None:
                self._stop_watch = asyncio.ensure_future(self._cancel_when(stopping))
        return [job for p in polls if p.done() and not p.cancelled() for job in p.result()]

    def _hold(
        self, queue: str, count: int, start: Callable[[str, int], Awaitable[list[J]]]
    ) -> asyncio.Future[list[J]]:
        poll = self._open.get(queue)
        if poll is None:
            poll = self._open[queue] = asyncio.ensure_future(start(queue, count))
            poll.add_done_callback(partial(self._answered, queue))
        self._held.add(poll)
        return poll

    def _answered(self, queue: str, poll: asyncio.Future[list[J]]) -> None:
        if self._open.get(queue) is poll:
            del self._open[queue]
        if poll in self._held:
            self._held.discard(poll)  # the wait that holds it takes its jobs
            return
        if poll.cancelled():
            return
        if poll.exception() is not None:
            log.error("a long-poll of %s failed", queue, exc_info=poll.exception())
            return
        if jobs := poll.result():
            log.info("handing back job(s) %s: their poll of %s answered after the worker had taken "
                     "others", ", ".join(str(j.id) for j in jobs), queue)  # fmt: skip
            returning = asyncio.ensure_future(self._hand_back(jobs))
            self._returning.add(returning)
            returning.add_done_callback(self._returning.discard)

    async def _cancel_when(self, stopping: asyncio.Event) -> None:
        """Cancel the polls left open once the worker stops (not when it closes, after its grace
        period: a poll left open meanwhile would fetch jobs only to hand them back)."""
        await stopping.wait()
        self._cancel_open()

    def _cancel_open(self) -> list[asyncio.Future[list[J]]]:
        polls = list(self._open.values())
        for poll in polls:
            poll.cancel()
        return polls

    async def close(self) -> None:
        """Cancel the open polls; wait for the hand-backs under way."""
        watch = [self._stop_watch] if self._stop_watch is not None else []
        for task in watch:
            task.cancel()
        await asyncio.gather(*self._cancel_open(), *self._returning, *watch, return_exceptions=True)


def _jobs(poll: asyncio.Future[list[Any]]) -> bool:
    return poll.done() and not poll.cancelled() and poll.exception() is None and bool(poll.result())

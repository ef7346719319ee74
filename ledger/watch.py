"""Waiting on the ledger: one follower of its live end per process wakes whoever waits on what an
event names.

A long-polling fetch waits for an event naming its queue, the Redis worker for events of its queues
and of the jobs it holds, the scheduler for any event (a new deadline may be nearer than its sleep).
None of them polls: one task reads the stream's new entries with a blocking ``XREAD`` and wakes
every subscription a new entry names.  The task starts with the first subscription, so a process
nobody waits in pays nothing, and it stops after any read that finds nobody subscribed (a worker
busy with a long queue, which waits on nothing, does not read every event it causes).

Subscribe *before* looking at the state you wait on, then wait::

    with watch.subscribe([queue_topic("emails")]) as sub:
        while not (jobs := await fetch()):
            await sub.wait(remaining)

so that an event appended between the look and the wait still wakes you.

Live feeds (``/events/stream``, the dashboard's) read the same follower: a subscription that
``takes_events`` (:class:`jobledger.ledger.taps.Tap`) is handed the events of each read of its
partition, is told when the follower may have missed some (it starts, or starts again, at the live
end), and is handed a failure to read the stream, so that no feed holds a connection of its own.

Each read blocks for at most :func:`jobledger.ledger.redis_clients.block_ms` of :data:`BLOCK_MS`, so a quiet
spell of any length never meets the client's socket timeout.  When Redis cannot be read, every
subscription is woken (its owner tries again and reports for itself) and the task reads again after
a pause, logging once per kind of failure rather than once per try.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Hashable, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import redis

from jobledger.ledger.errors import Unavailable
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.redis_clients import block_ms
from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.tasks import cancel_and_wait

if TYPE_CHECKING:
    from jobledger.ledger.events import Event

log = logging.getLogger("jobledger.watch")

#: The longest a read of the stream blocks (ms) before the follower checks whether anyone waits.
BLOCK_MS = 15_000
#: How many entries one read takes at most.
COUNT = 1_000
#: Pause (s) before reading again after Redis could not be read, doubling up to RETRY_MAX.
RETRY_FIRST, RETRY_MAX = 0.1, 2.0
#: Seconds the followers go on reading once nobody is subscribed, before they are stopped: a
#: long-poll that subscribes again at once finds them still reading.
IDLE_STOP = 1.0

#: What a subscription waits on: ("queue", name), ("job", id), or ANY (every event).
Topic = tuple[str, Hashable]
ANY: Topic = ("any", None)


def queue_topic(name: str) -> Topic:
    return ("queue", name)


def job_topic(job_id: int) -> Topic:
    return ("job", int(job_id))


def partition_topic(partition: int) -> Topic:
    """Woken by every event of that partition (of the one partition, on a ledger not split)."""
    return ("partition", partition)


def token_topic(name: str) -> Topic:
    """Woken by the revocation of the token of that name (a feed opened with it ends)."""
    return ("token", name)


#: Events that name a queue yet never let a fetch of it find a job: a queue's topic is not woken by
#: them (a worker busy with its own jobs is not sent to look at an empty queue for each).
NOT_FOR_FETCHERS = frozenset({"job_started", "job_heartbeat", "job_output_set", "job_progressed"})


def entry_topics(fields: dict[Any, Any]) -> set[Topic]:
    """The topics a stream entry wakes: its queue (unless the event is one of
    :data:`NOT_FOR_FETCHERS`), its job, ANY, and for a ``token_revoked`` the token's name."""
    topics = {ANY}
    kind = _text(fields.get(b"type", fields.get("type", b"")))
    if kind == "token_revoked":
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            topics.add(token_topic(str(json.loads(_text(fields.get(b"data", fields.get("data"))))["name"])))
    queue = _text(fields.get(b"queue", fields.get("queue", b"")))
    if queue and kind not in NOT_FOR_FETCHERS:
        topics.add(queue_topic(queue))
    job = _text(fields.get(b"job", fields.get("job", b"")))
    if job:
        topics.add(job_topic(int(job)))
    return topics


class Subscription:
    """Woken when an event names one of its topics; :meth:`wait` consumes a wake-up.  One that
    ``takes_events`` is also handed, for the partition topics it holds, what the follower read."""

    takes_events = False

    def __init__(self, watch: LedgerWatch, topics: Iterable[Topic]) -> None:
        self.watch = watch
        self.topics = frozenset(topics)
        self.woken = asyncio.Event()

    def delivered(self, events: list[Event]) -> None:
        """The events of one read of its partition, in order (for one that ``takes_events``)."""

    def missed(self) -> None:
        """The follower of its partition may have missed events: it (re)started at the live end."""

    def failed(self, exc: Exception) -> None:
        """The follower of its partition could not read the stream."""

    async def wait(self, timeout: float | None) -> bool:
        """Until woken (True) or ``timeout`` seconds pass (False); a wake-up that came since the
        last wait counts at once.  Resets for the next wait."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self.woken.wait()
        woken = self.woken.is_set()
        self.woken.clear()
        return woken

    def close(self) -> None:
        self.watch._remove(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class LedgerWatch:
    """Wakes the subscriptions of the topics each new event names (see the module).  On a ledger split
    into partitions, one follower per partition a subscription's topics concern (a queue's, a job's,
    the home partition for a token, every partition for ANY)."""

    def __init__(self, ledger: AsyncLedger | AsyncPartitioned | OpeningLedger, block: int = BLOCK_MS) -> None:
        self.ledger = ledger
        self.block = block
        self._subscribers: dict[Topic, set[Subscription]] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._opening: asyncio.Task[None] | None = None
        self._idle: asyncio.TimerHandle | None = None
        self._stopping: set[asyncio.Task[Any]] = set()  # followers stopped for idleness, ending
        self._locating: set[asyncio.Task[None]] = set()  # placements looked up before following

    def _router(self) -> AsyncPartitioned | None:
        """The router of the ledger (None: one runner, or a ledger opened on first use not open yet)."""
        if isinstance(self.ledger, OpeningLedger):
            return self.ledger.router
        return self.ledger if isinstance(self.ledger, AsyncPartitioned) else None

    def _runners(self) -> list[AsyncLedger]:
        if isinstance(self.ledger, AsyncLedger):
            return [self.ledger]
        router = self._router()
        assert router is not None
        return router.runners

    def _partitions_of(self, topics: Iterable[Topic]) -> set[int]:
        router = self._router()
        if router is None or router.partitioning.count == 1:
            return {0}
        partitioning, found = router.partitioning, set()
        for kind, value in topics:
            if kind == "queue":
                found.update(partitioning.placed_or_every(str(value)))
            elif kind == "job":
                found.add(partitioning.of_id(int(value)))  # type: ignore[call-overload]
            elif kind == "token":
                found.add(0)
            elif kind == "partition":
                found.add(int(value))  # type: ignore[call-overload]
            else:
                return set(range(partitioning.count))
        return found

    def _unplaced(self, topics: Iterable[Topic]) -> list[str]:
        """The queues of ``topics`` whose partition this process has not looked up (on a split ledger)."""
        router = self._router()
        if router is None or router.partitioning.count == 1:
            return []
        placed = router.partitioning.placed
        return [str(value) for kind, value in topics if kind == "queue" and str(value) not in placed]

    def subscribe(self, topics: Iterable[Topic]) -> Subscription:
        """A subscription to ``topics``, following the ledger (the partitions they concern) if nobody
        did; close it when done."""
        return self.add(Subscription(self, topics))

    def add(self, sub: Subscription) -> Subscription:
        """Subscribe ``sub`` (made for this watch), as :meth:`subscribe` does; close it when done."""
        for topic in sub.topics:
            self._subscribers.setdefault(topic, set()).add(sub)
        if isinstance(self.ledger, OpeningLedger) and self.ledger.router is None:
            if self._opening is None or self._opening.done():
                self._opening = asyncio.create_task(self._open_then_follow(), name="ledger-watch-opening")
            return sub
        if unplaced := self._unplaced(sub.topics):
            task = asyncio.create_task(self._locate_then_follow(unplaced), name="ledger-watch-locating")
            self._locating.add(task)
            task.add_done_callback(self._locating.discard)
            return sub
        self._follow_partitions(self._partitions_of(sub.topics))
        return sub

    async def _locate_then_follow(self, queues: list[str]) -> None:
        """Look up where ``queues`` live, then follow what the subscriptions concern: a queue's own
        partition rather than every one, each of whose followers, starting, would wake its waiters
        once more (a queue placed nowhere, or a failed look-up: every partition, as before)."""
        router = self._router()
        assert router is not None
        with contextlib.suppress(redis.RedisError, OSError, Unavailable):
            await router.locate(queues)
        if self._subscribers:
            self._follow_partitions(self._partitions_of(self._subscribers))

    def _follow_partitions(self, partitions: Iterable[int]) -> None:
        runners = self._runners()
        for partition in partitions:
            task = self._tasks.get(partition)
            if task is None or task.done():
                follow = self._follow(runners[partition], partition)
                self._tasks[partition] = asyncio.create_task(follow, name=f"ledger-watch-{partition}")

    async def _open_then_follow(self) -> None:
        """Open the ledger (again while Redis is away, each try waking every subscription: its owner
        tries on its own), then follow what the subscriptions made meanwhile concern."""
        assert isinstance(self.ledger, OpeningLedger)
        pause = RETRY_FIRST
        while True:
            try:
                await self.ledger.opened()
                break
            except Unavailable as exc:
                log.warning("cannot follow the ledger yet (waiters try on their own): %s", exc)
                self._wake()
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX)
        if unplaced := self._unplaced(self._subscribers):
            await self._locate_then_follow(unplaced)
        elif self._subscribers:
            self._follow_partitions(self._partitions_of(self._subscribers))

    async def wait(self, topics: Iterable[Topic], timeout: float | None) -> bool:
        """Wait once for an event on ``topics`` (subscribing only now: see the module)."""
        with self.subscribe(topics) as sub:
            return await sub.wait(timeout)

    def _remove(self, sub: Subscription) -> None:
        for topic in sub.topics:
            subs = self._subscribers.get(topic)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subscribers[topic]
        if not self._subscribers and self._tasks and self._idle is None:
            with contextlib.suppress(RuntimeError):  # no loop: nothing runs to stop
                self._idle = asyncio.get_running_loop().call_later(IDLE_STOP, self._stop_if_idle)

    def _stop_if_idle(self) -> None:
        """Stop the followers if still nobody is subscribed (the connection of a cancelled read is
        closed).  They leave ``_tasks`` at once, so a subscription that comes while they are ending
        starts followers of its own rather than wait on ones that will never read again; they are
        cancelled until they have ended (a cancellation can be lost mid-read)."""
        self._idle = None
        if self._subscribers or not self._tasks:
            return
        stopping = list(self._tasks.values())
        self._tasks.clear()
        task = asyncio.ensure_future(cancel_and_wait(stopping))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    def _wake(self, topics: Iterable[Topic] | None = None) -> None:
        """Wake the subscriptions of ``topics`` (of every topic when None)."""
        chosen = self._subscribers.keys() if topics is None else topics
        for topic in list(chosen):
            for sub in self._subscribers.get(topic, ()):
                sub.woken.set()

    async def _follow(self, ledger: AsyncLedger, partition: int) -> None:
        """Follow one partition of the ledger until a read finds nobody subscribed."""
        from jobledger.ledger.stream import newest  # with the event models, by the first follower

        position: str | None = None
        pause = RETRY_FIRST
        failing: str | None = None
        client = ledger.client
        while True:
            try:
                if position is None:
                    position = await ledger.read(newest())
                    self._wake()  # whoever subscribed before the position was known looks once more
                    for sub in self._of_partition(partition):
                        sub.missed()
                reply = await client.xread(
                    {ledger.keys.events: position}, count=COUNT, block=block_ms(client, self.block)
                )
            except (redis.RedisError, OSError, Unavailable) as exc:  # Unavailable: from ledger.read
                kind = type(exc).__name__
                if kind != failing:
                    log.warning("cannot follow the ledger (waiters try on their own): %s", exc)
                failing = kind
                for sub in self._of_partition(partition):
                    sub.failed(exc)
                self._wake()
                await asyncio.sleep(pause)
                pause = min(pause * 2, RETRY_MAX)
                continue
            if failing is not None:
                log.info("following the ledger again")
                failing, pause = None, RETRY_FIRST
            if not self._subscribers:
                return
            for _, entries in reply or []:
                position = _text(entries[-1][0])
                topics: set[Topic] = {partition_topic(partition)}
                for _, fields in entries:
                    topics |= entry_topics(fields)
                self._deliver(partition, reply)
                self._wake(topics)

    def _of_partition(self, partition: int) -> list[Subscription]:
        """The subscriptions to the partition's topic."""
        return list(self._subscribers.get(partition_topic(partition), ()))

    def _deliver(self, partition: int, reply: Any) -> None:
        """Hand the events of a read to the subscriptions that take them, decoded once for all."""
        takers = [s for s in self._of_partition(partition) if s.takes_events]
        if not takers:
            return
        from jobledger.ledger.stream import decode_entries

        try:
            events = decode_entries(reply)
        except (KeyError, ValueError) as exc:  # an entry no model reads: its feeds end, the follower goes on
            for sub in takers:
                sub.failed(exc)
            return
        for sub in takers:
            sub.delivered(events)

    async def close(self) -> None:
        # a plain cancel can be lost mid-read (jobledger.ledger.tasks)
        if self._idle is not None:
            self._idle.cancel()
        opening = [] if self._opening is None else [self._opening]
        await cancel_and_wait([*opening, *self._locating])
        await cancel_and_wait(list(self._tasks.values()))
        await asyncio.gather(*self._stopping)  # those stopped for idleness: their stop runs to its end


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

"""A live feed's share of the process's one follower of a partition: the events read for everyone,
kept for this feed in a buffer of bounded size.

The follower (:class:`jobledger.ledger.watch.LedgerWatch`) reads each partition with one blocking
``XREAD`` for the whole process and hands the events of each read to every tap of the partition,
decoded once: every tap holds the same event objects, so taps cost a reference per event each.  A
tap that would hold more than its ``capacity`` drops what it holds and is marked ``behind``, and
so is every tap when the follower may have missed events (it starts, or starts again, at the live
end): its feed then reads the stream by itself, in pages of plain non-blocking ``XRANGE`` from its
own position, and takes from the tap again once a page comes back short.  A tap starts behind (its
feed reads from where it stands first).  Call :meth:`Tap.restart` *before* such a read, so that
what arrives during it is kept; the feed drops what it read twice by its id.  A failure to read
the stream is kept in ``failure``: the feed ends with it.
"""

from __future__ import annotations

import asyncio
from collections import deque

from jobledger.ledger.events import Event
from jobledger.ledger.watch import LedgerWatch, Subscription, partition_topic

#: Events a tap holds at most: twice what the follower reads at once, so one read never overflows
#: a tap its feed has just emptied.
CAPACITY = 2_000


class Tap(Subscription):
    """One feed's buffer of one partition's new events (see the module); close it when done."""

    takes_events = True

    def __init__(self, watch: LedgerWatch, partition: int, capacity: int = CAPACITY) -> None:
        super().__init__(watch, [partition_topic(partition)])
        self.partition, self.capacity = partition, capacity
        self.events: deque[Event] = deque()
        self.behind = True
        self.failure: Exception | None = None

    @property
    def pending(self) -> bool:
        """Whether its feed has something to do: events to take, a read of its own, a failure."""
        return self.behind or self.failure is not None or bool(self.events)

    def delivered(self, events: list[Event]) -> None:
        if self.behind:
            return  # its feed reads them itself
        if len(self.events) + len(events) > self.capacity:
            self.missed()
            return
        self.events.extend(events)

    def missed(self) -> None:
        self.events.clear()
        self.behind = True
        self.woken.set()

    def failed(self, exc: Exception) -> None:
        self.failure = exc
        self.woken.set()

    def restart(self) -> None:
        """Keep what comes from now on: its feed reads the stream by itself up to here."""
        self.events.clear()
        self.behind = False

    def take(self) -> list[Event]:
        """The events it holds, oldest first, and holds them no more."""
        taken = list(self.events)
        self.events.clear()
        return taken


def open_tap(watch: LedgerWatch, partition: int, capacity: int = CAPACITY) -> Tap:
    """A tap of ``partition``, the watch following it from now on; close it when done."""
    tap = Tap(watch, partition, capacity)
    watch.add(tap)
    return tap


async def any_pending(taps: list[Tap], timeout: float) -> bool:
    """Whether one of ``taps`` has something pending now or within ``timeout`` seconds."""
    for tap in taps:
        tap.woken.clear()
    if any(tap.pending for tap in taps):
        return True
    waits = [asyncio.ensure_future(tap.woken.wait()) for tap in taps]
    try:
        done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
    return bool(done)

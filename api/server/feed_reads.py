"""How a live feed reads a partition of the ledger without a connection of its own: from its tap of
the process's follower (:mod:`jobledger.ledger.taps`) while it keeps up, else by itself in pages
of plain non-blocking ``XRANGE`` from its position, at most
:data:`jobledger.server.feeds.READS` feeds of the process at
once, so that feeds falling behind together take a few connections of the request pool, not one
each."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

from starlette.requests import Request

from jobledger.ledger.errors import Unavailable
from jobledger.ledger.events import Event
from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.stream import decode_entries
from jobledger.ledger.taps import Tap, open_tap
from jobledger.ledger.watch import LedgerWatch
from jobledger.projections.archive import ArchiveRecord, archive_key, parse_record

#: Events one read of a feed's own takes at most.
PAGE = 500


async def page_after(ledger: AsyncLedger, position: str) -> tuple[list[Event], ArchiveRecord | None]:
    """The stream's next events after ``position`` (at most :data:`PAGE`, at once), and the archive
    record read just after them: if retention trimmed events this read skipped, the record says so."""
    pipe = ledger.client.pipeline(transaction=False)
    pipe.xrange(ledger.keys.events, min="(" + position, count=PAGE)
    pipe.hgetall(archive_key(ledger.keys))
    entries, raw = await pipe.execute()
    return decode_entries([(ledger.keys.events, entries)] if entries else []), parse_record(raw)


class PartitionReader:
    """One partition as one feed reads it: ``ledger`` the request pool's runner of the partition,
    ``tap`` its share of the follower, ``reads`` what limits the reads of the feeds' own."""

    def __init__(self, ledger: AsyncLedger, tap: Tap, reads: asyncio.Semaphore) -> None:
        self.ledger, self.tap, self.reads = ledger, tap, reads

    async def take(self, position: str) -> tuple[list[Event], ArchiveRecord | None]:
        """What came after ``position`` as far as known now (perhaps events it had already), with
        the archive record when it read the stream itself; raises what the follower could not read."""
        tap = self.tap
        if isinstance(tap.failure, OSError):
            raise Unavailable(f"Redis is unreachable: {tap.failure}") from tap.failure
        if tap.failure is not None:
            raise tap.failure
        if not tap.behind:
            return tap.take(), None
        tap.restart()
        async with self.reads:
            events, rec = await page_after(self.ledger, position)
        if len(events) == PAGE:
            tap.missed()  # more to read: by itself again
        return events, rec


@contextlib.contextmanager
def partition_readers(
    request: Request, ledgers: dict[int, AsyncLedger]
) -> Iterator[dict[int, PartitionReader]]:
    """Within: a reader of each partition of ``ledgers`` (partition -> its runner), each tapped
    from now on."""
    watch: LedgerWatch = request.state.watch
    reads: asyncio.Semaphore = request.state.feeds.reads
    with contextlib.ExitStack() as stack:
        readers = {}
        for partition, ledger in ledgers.items():
            tap = stack.enter_context(open_tap(watch, partition))
            readers[partition] = PartitionReader(ledger, tap, reads)
        yield readers

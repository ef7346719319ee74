"""The ledger's history as the live reads see it, archived events included: the pages of ``GET
/events`` and ``GET /events/stream``, and a job's events (``GET /job/{id}/history``, the dashboard's
job page), which read the archived events first, then the stream, as if retention had never moved them.

The functions that take an :class:`ArchiveRecord` read the archive through the
:class:`ArchiveSource` the server hands in: from the server's event loop, call them in a thread
(``asyncio.to_thread``); the record (:func:`jobledger.projections.archive.record`) is read from
Redis first and passed in.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jobledger.ledger.errors import NotFound
from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.stream import DEFAULT_SCAN_BUDGET, EventFilter, Page, id_key, scan
from jobledger.ledger.stream_merge import Cursor, MergedPage, concerned, merge_pages
from jobledger.projections.archive import (
    ArchiveRecord,
    ArchiveSource,
    archived_entries,
    archived_history_ids,
    events_by_id,
    find_entries,
    record,
)
from jobledger.projections.readers import history_ids, stream_entries

if TYPE_CHECKING:
    from jobledger.ledger.runner import AsyncLedger


def reaches_archive(rec: ArchiveRecord | None, after: str | None) -> bool:
    """Whether a read that starts after ``after`` (from the beginning when None) starts in the archive."""
    return rec is not None and (after is None or id_key(after) < id_key(rec.last_id))


def archive_page(
    source: ArchiveSource | None,
    rec: ArchiveRecord,
    after: str | None,
    limit: int,
    flt: EventFilter,
    budget: int = DEFAULT_SCAN_BUDGET,
) -> Page:
    """A page of archived events after ``after`` matching ``flt``, as :func:`jobledger.ledger.stream.scan`
    pages the stream: at most ``limit`` events and ``budget`` scanned.  Its ``next`` is never None
    (the stream comes after the archive): the archive's last id when the archive was read to its end.
    """
    found: list[Event] = []
    scanned = 0
    last_at = None
    for entries in archived_entries(source, rec, after, None, batch=500):
        for entry_id, fields in entries:
            scanned += 1
            event = decode_entry(entry_id, fields)
            if flt.matches(event):
                found.append(event)
                if len(found) == limit:
                    return Page(found, event.id, last_at=event.at)
            if scanned >= budget:
                return Page(found, event.id, last_at=event.at)
            last_at = event.at
    return Page(found, rec.last_id, last_at=last_at)


def fill_missing(source: ArchiveSource | None, rec: ArchiveRecord, page: Page, flt: EventFilter) -> Page:
    """A job page (:func:`jobledger.ledger.stream.scan` with a ``job`` filter) with the events it found only
    in the archive put back in their places."""
    archived = [e for e in events_by_id(source, rec, page.missing).values() if flt.matches(e)]
    merged = sorted([*page.events, *archived], key=lambda e: id_key(e.id))
    return replace(page, events=merged, missing=())


def archived_after(
    source: ArchiveSource | None, rec: ArchiveRecord, after: str | None, limit: int = 500
) -> list[Event]:
    """Up to ``limit`` archived events after ``after``, oldest first (empty past the archive's end)."""
    for entries in archived_entries(source, rec, after, None, batch=limit):
        return [decode_entry(entry_id, fields) for entry_id, fields in entries]
    return []


async def events_page(
    ledger: AsyncLedger,
    after: str | None,
    limit: int,
    flt: EventFilter,
    budget: int = DEFAULT_SCAN_BUDGET,
    archive: ArchiveSource | None = None,
) -> Page:
    """A page of one ledger's (one partition's) events after ``after``: archived ones while
    ``after`` is in the archive, then the stream's (a job's page with its archived events put back)."""
    rec = await ledger.read(record())
    if flt.job is None and rec is not None and reaches_archive(rec, after):
        return await asyncio.to_thread(archive_page, archive, rec, after, limit, flt, budget)
    page = await ledger.read(scan(after, limit, flt, budget))
    if page.missing and rec is not None:
        page = await asyncio.to_thread(fill_missing, archive, rec, page, flt)
    return page


async def merged_page(
    router: AsyncPartitioned,
    cursor: Cursor,
    limit: int,
    flt: EventFilter,
    budget: int = DEFAULT_SCAN_BUDGET,
    archive: ArchiveSource | None = None,
) -> MergedPage:
    """A page of the events of every partition ``flt`` concerns after ``cursor``, merged in time order
    (:func:`jobledger.ledger.stream_merge.merge_pages`), archived ones included.  The partitions
    are read at once, each scanning its share of ``budget``."""
    where = concerned(router.partitioning, flt)
    share = max(1, budget // len(where))
    pages = await asyncio.gather(
        *(events_page(router.runners[p], cursor.after(p), limit, flt, share, archive) for p in where)
    )
    return merge_pages(cursor, dict(zip(where, pages, strict=True)), limit)


async def job_entries(
    ledger: AsyncLedger | OpeningLedger, job_id: int, archive: ArchiveSource | None = None
) -> list[RawEntry]:
    """Every event of the job as stored, oldest first, archived ones included; NotFound for an id
    never used.  Read in the job's partition.  A job that retention removed from Redis (forgotten,
    and every event archived) has its event ids in the archive's job index: one folder listed and
    the few indexes in it read, then the segments that hold its events."""
    if isinstance(ledger, OpeningLedger):
        ledger = (await ledger.opened()).for_id(job_id)
    try:
        ids = await ledger.read(history_ids(job_id))
    except NotFound:
        rec = await ledger.read(record())
        if rec is None or not (ids := await asyncio.to_thread(archived_history_ids, archive, rec, job_id)):
            raise
    found = await ledger.read(stream_entries(ids))
    missing = [i for i in ids if i not in found]
    if missing and (rec := await ledger.read(record())) is not None:
        found.update(await asyncio.to_thread(find_entries, archive, rec, missing))
    return [found[i] for i in ids if i in found]


async def job_history(
    ledger: AsyncLedger | OpeningLedger, job_id: int, archive: ArchiveSource | None = None
) -> list[dict[str, Any]]:
    """Every event of the job, oldest first, as API event items, archived ones included;
    NotFound for an id never used (``GET /job/{id}/history``).  Read in the job's partition."""
    return [decode_entry(*entry).item() for entry in await job_entries(ledger, job_id, archive)]

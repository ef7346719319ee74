"""Retention: move events older than ``[ledger] archive_after`` from the stream into the archive.

A round (:func:`archive_once`) takes the oldest events of the stream whose ``at`` is before the
cut-off, at most ``segment_events`` at a time, and for each such run of events:

1. writes them as a segment into the archive (:class:`ArchiveSink`: the blob store's, shared by
   every server of the ledger), then the segment's manifest entry, each durable when written;
2. finds the jobs of the segment that are forgotten (expired or deleted: their hash gone) and whose
   every event is archived once the segment is (the newest id of their history list in it), and
   writes their history lists into the archive's job index;
3. only then runs ``archive_trim``, which records the new archived position in ``{NS}:archive``,
   trims those events from the stream (XTRIM MINID) and deletes those jobs' history lists, in one
   atomic step: once retention has a job's every event and the job has expired, nothing of it stays
   in Redis, and ``GET /job/{id}/history`` finds its events through the job index.

A crash between 1 and 3 leaves the events in both places; the next round finds the manifest entry
that follows the recorded position and finishes its steps 2 and 3.  On a sealed ledger (``sealed``) no
event after the last one sealed (the sealer's record, ``{NS}:seal``) is archived, and the trim
script refuses one: the sealer reads the stream, and the log files it wrote serve the trimmed
events' proofs.  Nothing is lost at any point.
Rounds of several schedulers exclude each other with a lock (``{NS}:archive:lock``), and the trim
script refuses to move a record another archiver moved meanwhile, or one kept in another store.
A ledger still archived in a directory, as before the archive went to the blob store, is moved
there first (:mod:`jobledger.replay.archive.legacy`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import redis
import redis.asyncio

from jobledger.ledger.durations import format_ms
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.event_lines import RawEntry, entry_line
from jobledger.ledger.keys import Keys
from jobledger.ledger.scripts import source
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import (
    ArchiveError,
    ArchiveRecord,
    ArchiveSource,
    Segment,
    archive_key,
    archived_segments,
    parse_record,
    segment_entries,
    segment_name,
)
from jobledger.replay.archive.legacy import move_directory

if TYPE_CHECKING:
    from jobledger.ledger.runner import AsyncLedger
    from jobledger.runtime.config import Config

log = logging.getLogger("jobledger.archive")

SEGMENT_EVENTS = 50_000
READ_BATCH = 2000
LOCK_MS = 10 * 60_000


class ArchiveSink(ArchiveSource, Protocol):
    """Where the archiver writes: a ledger's location, a segment with its manifest entry, and the
    job index of the jobs its round removes from Redis."""

    def location_for(self, namespace: str) -> str:
        """The location the record of ledger ``namespace`` names."""
        ...

    def write_segment(self, location: str, segment: Segment, data: bytes) -> None:
        """Store the segment's bytes, then its manifest entry, durably."""
        ...

    def write_jobs(self, location: str, segment: Segment, jobs: dict[int, list[str]]) -> None:
        """Store the job index of ``jobs`` (job id -> its history's event ids) for the segment, durably."""
        ...


@dataclass(frozen=True)
class ArchiveSettings:
    """``[ledger]``: archive events older than ``after_ms`` into ``archive`` every ``interval_ms``."""

    after_ms: int
    interval_ms: int
    archive: ArchiveSink
    segment_events: int = SEGMENT_EVENTS


def archive_settings(config: Config, archive: ArchiveSink) -> ArchiveSettings | None:
    """The configured retention into ``archive``, None when events are kept in the stream forever."""
    ledger = config.ledger
    if ledger.archive_after <= 0:
        return None
    return ArchiveSettings(ledger.archive_after, ledger.archive_check_interval, archive)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def segment_of(entries: list[RawEntry], after: str | None) -> tuple[Segment, bytes]:
    """Entries as a segment's bytes (the ``events export`` format) and its manifest entry, which
    names ``after``, the last id of the segment before it."""
    first, last = _s(entries[0][0]), _s(entries[-1][0])
    data = b"".join((entry_line(entry_id, fields) + "\n").encode() for entry_id, fields in entries)
    segment = Segment(segment_name(first, last), first, last, len(entries), int(entries[0][1][b"at"]),
                      int(entries[-1][1][b"at"]), hashlib.sha256(data).hexdigest(), after or "")  # fmt: skip
    return segment, data


def write_segment(archive: ArchiveSink, location: str, entries: list[RawEntry], after: str | None) -> Segment:
    """Write entries into the archive at ``location`` as the segment after ``after``; the segment."""
    segment, data = segment_of(entries, after)
    archive.write_segment(location, segment, data)
    return segment


def _after(event_id: str) -> str:
    """XTRIM MINID's threshold that removes ``event_id`` and everything before it."""
    ms, seq = id_key(event_id)
    return f"{ms}-{seq + 1}"


class Archiver:
    """Archives one ledger's old events into ``archive`` (see the module docstring)."""

    def __init__(self, client: redis.asyncio.Redis, keys: Keys, archive: ArchiveSink,
                 segment_events: int = SEGMENT_EVENTS, sealed: bool = False) -> None:  # fmt: skip
        self.client, self.keys, self.archive = client, keys, archive
        self.location = archive.location_for(keys.namespace)
        self.segment_events = segment_events
        self.sealed = sealed
        self.trim_script = client.register_script(source("archive_trim"))
        self.relocate_script = client.register_script(source("archive_relocate"))
        self.forgotten_script = client.register_script(source("archive_forgotten"))
        self.drop_script = client.register_script(source("drop_archived_histories"))

    async def _sealed_up_to(self) -> str:
        """XRANGE's end for what may be archived: the last sealed event on a sealed ledger."""
        if not self.sealed:
            return "+"
        return _s(await self.client.hget(self.keys.build("seal"), "last") or b"") or "0-0"

    async def _old_entries(self, after: str | None, cutoff_ms: int) -> list[RawEntry]:
        """The oldest stream entries after ``after`` whose ``at`` is before the cut-off (at most a
        segment's worth), on a sealed ledger none after the last sealed one."""
        out: list[RawEntry] = []
        start = "-" if after is None else "(" + after
        end = await self._sealed_up_to()
        if end == "0-0":
            return out
        while len(out) < self.segment_events:
            count = min(READ_BATCH, self.segment_events - len(out))
            entries = cast(
                list[RawEntry], await self.client.xrange(self.keys.events, start, end, count=count)
            )
            for entry in entries:
                if int(entry[1][b"at"]) >= cutoff_ms:
                    return out
                out.append(entry)
            if len(entries) < count:
                return out
            start = "(" + _s(entries[-1][0])
        return out

    async def _forgotten(self, entries: list[RawEntry], last: str) -> dict[int, list[str]]:
        """The jobs of ``entries`` whose history lists the trim up to ``last`` deletes (see
        ``drop_archived_history.lua``), each with its list."""
        jobs = sorted({int(j) for _, fields in entries if (j := fields.get(b"job"))})
        if not jobs:
            return {}
        reply = await self.forgotten_script(keys=[self.keys.ledger_prefix], args=[last, *jobs])
        return {int(job): [_s(i) for i in ids] for job, ids in zip(reply[::2], reply[1::2], strict=True)}

    async def _index_and_trim(self, previous: str | None, segment: Segment, entries: list[RawEntry]) -> None:
        """Steps 2 and 3 of a round for a segment written (see the module)."""
        jobs = await self._forgotten(entries, segment.last)
        if jobs:
            await asyncio.to_thread(self.archive.write_jobs, self.location, segment, jobs)
        await self._trim(previous, segment, list(jobs))

    async def _trim(self, previous: str | None, segment: Segment, jobs: list[int]) -> None:
        """Record the segment as archived, trim its events from the stream and delete the history
        lists of ``jobs`` (one script)."""
        keys = [self.keys.ledger_prefix, archive_key(self.keys)]
        args: list[str | int] = [
            previous or "",
            self.location,
            segment.last,
            segment.count,
            _after(segment.last),
            "1" if self.sealed else "0",
            *jobs,
        ]
        try:
            trimmed = await self.trim_script(keys=keys, args=args)
        except redis.ResponseError as exc:
            raise ArchiveError(str(exc)) from exc
        if int(trimmed) != segment.count:
            log.warning("archived %d events in %s but trimmed %d", segment.count, segment.file, trimmed)

    async def _finish_pending(self, position: str | None) -> str | None:
        """Complete the rounds that wrote a segment but stopped before trimming it: the manifest
        entries that follow the recorded position, one after the other."""
        following = {s.after: s for s in await asyncio.to_thread(self.archive.manifest, self.location, True)}
        while (segment := following.get(position or "")) is not None:
            log.info("finishing the archive of %s", segment.file)
            entries = await asyncio.to_thread(self._entries_of, segment)
            await self._index_and_trim(position, segment, entries)
            position = segment.last
        return position

    def _entries_of(self, segment: Segment) -> list[RawEntry]:
        return list(segment_entries(self.archive.segment_file(self.location, segment), None, None))

    async def _relocate(self, rec: ArchiveRecord) -> ArchiveRecord:
        """Move a ledger archived in a directory (as before the blob store) into the archive."""
        write = functools.partial(self.archive.write_segment, self.location)
        await asyncio.to_thread(move_directory, rec, write)
        keys = [self.keys.ledger_prefix, archive_key(self.keys)]
        try:
            await self.relocate_script(keys=keys, args=[rec.last_id, rec.location, self.location])
        except redis.ResponseError as exc:
            raise ArchiveError(str(exc)) from exc
        log.info("moved the archive of %s from %s into %s", self.keys.namespace, rec.location, self.location)
        moved = ArchiveRecord(self.location, rec.last_id, rec.count)
        for segment in await asyncio.to_thread(archived_segments, self.archive, moved):
            entries = await asyncio.to_thread(self._entries_of, segment)
            jobs = await self._forgotten(entries, rec.last_id)
            if jobs:
                await asyncio.to_thread(self.archive.write_jobs, self.location, segment, jobs)
                await self.drop_script(keys=[self.keys.ledger_prefix], args=[rec.last_id, *jobs])
        return moved

    async def _round(self, cutoff_ms: int) -> int:
        rec = parse_record(await self.client.hgetall(archive_key(self.keys)))
        if rec is not None and rec.legacy:
            rec = await self._relocate(rec)
        if rec is not None and rec.location != self.location:
            raise ArchiveError(f"this ledger archives to {rec.location}, not {self.location}")
        position = await self._finish_pending(rec.last_id if rec else None)
        archived = 0
        while entries := await self._old_entries(position, cutoff_ms):
            segment = await asyncio.to_thread(write_segment, self.archive, self.location, entries, position)
            await self._index_and_trim(position, segment, entries)
            position = segment.last
            archived += segment.count
            log.info("archived %d events to %s", segment.count, segment.file)
            if len(entries) < self.segment_events:
                break
        return archived

    async def archive_once(self, cutoff_ms: int) -> int:
        """Archive every event whose ``at`` is before ``cutoff_ms``; how many.  0 without doing
        anything while another archiver holds the lock."""
        lock = self.keys.build("archive_lock")
        token = uuid.uuid4().hex
        if not await self.client.set(lock, token, nx=True, px=LOCK_MS):
            return 0
        try:
            return await self._round(cutoff_ms)
        finally:
            if _s(await self.client.get(lock) or b"") == token:
                await self.client.delete(lock)


async def archive_loop(ledger: AsyncLedger, settings: ArchiveSettings, sealed: bool = False) -> None:
    """The scheduler's retention task: a round every ``interval_ms``, until cancelled; with
    ``sealed``, archiving only what the sealer has sealed."""
    archiver = Archiver(ledger.client, ledger.keys, settings.archive, settings.segment_events, sealed)
    log.info("archiving events older than %s into %s, every %s", format_ms(settings.after_ms),
             archiver.location, format_ms(settings.interval_ms))  # fmt: skip
    while True:
        try:
            await archiver.archive_once(ledger.clock() - settings.after_ms)
        except (Unavailable, redis.RedisError, OSError, ArchiveError) as exc:
            log.warning("archive round skipped: %s", exc)
        await asyncio.sleep(max(settings.interval_ms, 10) / 1000)

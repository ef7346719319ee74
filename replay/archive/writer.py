"""Retention: move events older than ``[ledger] archive_after`` from the stream into segment files.

A round (:func:`archive_once`) takes the oldest events of the stream whose ``at`` is before the
cut-off, at most ``segment_events`` at a time, and for each such run of events:

1. writes them to a segment file (the ``events export`` format), flushes it to disk and renames it
   into place, then appends the segment to ``manifest.jsonl`` and flushes that;
2. only then runs ``archive_trim``, which records the new archived position in ``{NS}:archive``
   and trims those events from the stream (XTRIM MINID) in one atomic step.

A crash between 1 and 2 leaves the events in both places; the next round finds the segment in the
manifest beyond the recorded position and finishes its step 2.  Nothing is lost at any point.
Rounds of several schedulers exclude each other with a lock (``{NS}:archive:lock``), and the trim
script refuses to move a record another archiver moved meanwhile, or one kept in another directory.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import redis
import redis.asyncio

from jobledger.ledger.durations import format_ms
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.event_lines import RawEntry, entry_line
from jobledger.ledger.keys import Keys
from jobledger.ledger.scripts import source
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import (
    MANIFEST,
    ArchiveError,
    Segment,
    archive_key,
    parse_record,
    read_manifest,
    segment_name,
)
from jobledger.runtime.private import private_dir, private_opener

if TYPE_CHECKING:
    from jobledger.ledger.runner import AsyncLedger
    from jobledger.runtime.config import Config

log = logging.getLogger("jobledger.archive")

SEGMENT_EVENTS = 50_000
READ_BATCH = 2000
LOCK_MS = 10 * 60_000


@dataclass(frozen=True)
class ArchiveSettings:
    """``[ledger]``: archive events older than ``after_ms`` into ``directory`` every ``interval_ms``."""

    after_ms: int
    directory: Path
    interval_ms: int
    segment_events: int = SEGMENT_EVENTS

    def directory_for(self, namespace: str) -> Path:
        """Each ledger archives into its own subdirectory, named after its namespace."""
        return (self.directory / namespace).resolve()


def archive_settings(config: Config) -> ArchiveSettings | None:
    """The configured retention, None when events are kept in the stream forever."""
    ledger = config.ledger
    if ledger.archive_after <= 0:
        return None
    return ArchiveSettings(ledger.archive_after, ledger.archive_dir, ledger.archive_check_interval)


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _append_manifest(directory: Path, segment: Segment) -> None:
    """Add a segment to the manifest, durably; a torn last line (a crash mid-write) is cut first."""
    path = directory / MANIFEST
    with open(path, "ab+", opener=private_opener) as handle:
        size = handle.seek(0, os.SEEK_END)
        if size:
            handle.seek(max(0, size - 1))
            if handle.read(1) != b"\n":
                handle.seek(0)
                keep = handle.read().rfind(b"\n") + 1
                handle.truncate(keep)
        handle.write((segment.line() + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())
    _fsync_dir(directory)


def write_segment(directory: Path, entries: list[RawEntry]) -> Segment:
    """Write entries to a new segment file, flushed to disk, and add it to the manifest; the
    directory and its files private (0700, 0600: they hold the events)."""
    private_dir(directory)
    first, last = _s(entries[0][0]), _s(entries[-1][0])
    name = segment_name(first, last)
    partial = directory / (name + ".partial")
    digest = hashlib.sha256()
    with open(partial, "wb", opener=private_opener) as handle:
        for entry_id, fields in entries:
            line = (entry_line(entry_id, fields) + "\n").encode()
            digest.update(line)
            handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(directory / name)
    _fsync_dir(directory)
    segment = Segment(name, first, last, len(entries), int(entries[0][1][b"at"]),
                      int(entries[-1][1][b"at"]), digest.hexdigest())  # fmt: skip
    _append_manifest(directory, segment)
    return segment


def _after(event_id: str) -> str:
    """XTRIM MINID's threshold that removes ``event_id`` and everything before it."""
    ms, seq = id_key(event_id)
    return f"{ms}-{seq + 1}"


class Archiver:
    """Archives one ledger's old events into ``directory`` (see the module docstring)."""

    def __init__(self, client: redis.asyncio.Redis, keys: Keys, directory: Path,
                 segment_events: int = SEGMENT_EVENTS) -> None:  # fmt: skip
        self.client, self.keys, self.directory = client, keys, directory.resolve()
        self.segment_events = segment_events
        self.trim_script = client.register_script(source("archive_trim"))

    async def _old_entries(self, after: str | None, cutoff_ms: int) -> list[RawEntry]:
        """The oldest stream entries after ``after`` whose ``at`` is before the cut-off (at most a
        segment's worth)."""
        out: list[RawEntry] = []
        start = "-" if after is None else "(" + after
        while len(out) < self.segment_events:
            count = min(READ_BATCH, self.segment_events - len(out))
            entries = cast(
                list[RawEntry], await self.client.xrange(self.keys.events, start, "+", count=count)
            )
            for entry in entries:
                if int(entry[1][b"at"]) >= cutoff_ms:
                    return out
                out.append(entry)
            if len(entries) < count:
                return out
            start = "(" + _s(entries[-1][0])
        return out

    async def _trim(self, previous: str | None, segment: Segment) -> None:
        """Record the segment as archived and trim its events from the stream (one script)."""
        keys = [self.keys.ledger_prefix, archive_key(self.keys)]
        args: list[str | int] = [
            previous or "",
            str(self.directory),
            segment.last,
            segment.count,
            _after(segment.last),
        ]
        try:
            trimmed = await self.trim_script(keys=keys, args=args)
        except redis.ResponseError as exc:
            raise ArchiveError(str(exc)) from exc
        if int(trimmed) != segment.count:
            log.warning("archived %d events in %s but trimmed %d", segment.count, segment.file, trimmed)

    async def _finish_pending(self, position: str | None) -> str | None:
        """Complete the rounds that wrote a segment but stopped before trimming it."""
        for segment in await asyncio.to_thread(read_manifest, self.directory):
            if position is None or id_key(segment.last) > id_key(position):
                log.info("finishing the archive of %s", segment.file)
                await self._trim(position, segment)
                position = segment.last
        return position

    async def _round(self, cutoff_ms: int) -> int:
        rec = parse_record(await self.client.hgetall(archive_key(self.keys)))
        if rec is not None and rec.directory.resolve() != self.directory:
            raise ArchiveError(f"this ledger archives to {rec.directory}, not {self.directory}")
        position = await self._finish_pending(rec.last_id if rec else None)
        archived = 0
        while entries := await self._old_entries(position, cutoff_ms):
            segment = await asyncio.to_thread(write_segment, self.directory, entries)
            await self._trim(position, segment)
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


async def archive_loop(ledger: AsyncLedger, settings: ArchiveSettings) -> None:
    """The scheduler's retention task: a round every ``interval_ms``, until cancelled."""
    archiver = Archiver(ledger.client, ledger.keys, settings.directory_for(ledger.keys.namespace),
                        settings.segment_events)  # fmt: skip
    log.info("archiving events older than %s into %s, every %s", format_ms(settings.after_ms),
             archiver.directory, format_ms(settings.interval_ms))  # fmt: skip
    while True:
        try:
            await archiver.archive_once(ledger.clock() - settings.after_ms)
        except (Unavailable, redis.RedisError, OSError, ArchiveError) as exc:
            log.warning("archive round skipped: %s", exc)
        await asyncio.sleep(max(settings.interval_ms, 10) / 1000)

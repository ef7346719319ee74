"""The archive: events trimmed from the stream, kept in JSON-lines segments, and read back.

Retention moves the oldest events of a ledger into segments (``jobledger.replay.archive.writer``)
and trims them from the stream.  What was archived is recorded in two places, written in this order:

- in the archive (the blob store's, :mod:`jobledger.blobs.archive`): each segment, its events in
  the format of ``events export`` (:mod:`jobledger.ledger.event_lines`), then its manifest entry
  (:class:`Segment`), which names the segment before it (``after``), so the entries chain;
- in Redis, the hash ``{NS}:archive`` (:class:`ArchiveRecord`): where the archive is and
  ``last_id``, the newest archived event.  It is set in the same script that trims the stream, so
  every event with an id up to ``last_id`` is in a segment, and every later one is in the stream:
  the two never overlap and nothing falls between them.

Readers (replay, verify, export, and on every request the feed and job history) read events up to
``last_id`` from the segments and the rest from the stream.  They reach the archive through an
:class:`ArchiveSource` their caller hands in (the server, the scheduler, the command line make it
over the blob store): this layer knows no store.  A reader whose source cannot read the place the
record names raises :class:`ArchiveError`, so replay stops rather than replay half a ledger.
This module reads; :mod:`jobledger.replay.archive.writer` writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import redis

from jobledger.ledger.event_lines import RawEntry, parse_line
from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.reads import Read
from jobledger.ledger.stream import id_key

EventId = tuple[int, int]


class ArchiveError(Exception):
    """The archive a ledger's record points to cannot be read, or does not hold what it should."""


def archive_key(keys: Keys) -> str:
    """``{NS}:archive``: the hash recording where the ledger's archived events are."""
    return keys.build("archive")


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class ArchiveRecord:
    """What a ledger has archived: every event up to ``last_id``, ``count`` of them, at ``location``
    (an :class:`ArchiveSource`'s name for one ledger's archive).  ``legacy`` when ``location`` is
    a directory of the archive as it was before it went to the blob store, not yet moved there."""

    location: str
    last_id: str
    count: int
    legacy: bool = False

    def holds(self, event_id: str) -> bool:
        """Whether the event with this id (if there is one) is in the archive, not in the stream."""
        return id_key(event_id) <= id_key(self.last_id)


def parse_record(reply: Any) -> ArchiveRecord | None:
    """An HGETALL reply of the record (a dict, or a flat list) as an :class:`ArchiveRecord`."""
    if isinstance(reply, list):
        reply = dict(zip(reply[::2], reply[1::2], strict=True))
    fields = {_s(k): _s(v) for k, v in (reply or {}).items()}
    if not fields.get("last_id"):
        return None
    legacy = "store" not in fields
    location = fields["dir"] if legacy else fields["store"]
    return ArchiveRecord(location, fields["last_id"], int(fields.get("count", 0)), legacy)


def record() -> Read[ArchiveRecord | None]:
    """The ledger's archive record, None when nothing was ever archived (sync or async runner)."""

    return Read(lambda k: [("HGETALL", archive_key(k))], lambda r: parse_record(r[0]))


def load_record(client: redis.Redis, keys: Keys) -> ArchiveRecord | None:
    """:func:`record`, read with a plain synchronous client."""
    return parse_record(client.hgetall(archive_key(keys)))


@dataclass(frozen=True)
class Segment:
    """One segment and the events it holds: ids ``first`` to ``last``, ``count`` of them; ``after``
    the last id of the segment before it ('' for the first)."""

    file: str
    first: str
    last: str
    count: int
    first_at: int
    last_at: int
    sha256: str
    after: str = ""

    def line(self) -> str:
        return json.dumps(self.__dict__, separators=(",", ":"))

    @classmethod
    def parse(cls, text: str | bytes) -> Segment:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class JobIndex:
    """The jobs one segment's round removed from Redis (forgotten, every event archived: see
    :mod:`jobledger.replay.archive.writer`), of one bucket of job ids: each job's id and every event
    id of its history, oldest first.  ``first`` and ``last`` name the segment."""

    first: str
    last: str
    jobs: dict[int, list[str]]

    def data(self) -> bytes:
        jobs = {str(job): ids for job, ids in sorted(self.jobs.items())}
        return json.dumps(
            {"first": self.first, "last": self.last, "jobs": jobs}, separators=(",", ":")
        ).encode()

    @classmethod
    def parse(cls, data: bytes) -> JobIndex:
        raw = json.loads(data)
        return cls(raw["first"], raw["last"], {int(job): list(ids) for job, ids in raw["jobs"].items()})


def segment_name(first: str, last: str) -> str:
    """The name of a segment: it says which events it holds."""
    return f"events-{first}_{last}.jsonl"


class ArchiveSource(Protocol):
    """Where a process reads archives: a ledger's record names a ``location``, and the source reads
    the manifest and segments there, or raises :class:`ArchiveError` when it cannot reach that place.
    Called from threads (its reads block)."""

    def manifest(self, location: str, fresh: bool = False) -> list[Segment]:
        """Every manifest entry at ``location`` (some may be left over from archivers that stopped
        or lost a race: :func:`archived_segments` picks the chain); ``fresh`` lists them again
        rather than trusting what was listed before."""
        ...

    def segment_file(self, location: str, segment: Segment) -> Path:
        """A file on this machine holding the segment's bytes (fetched and checked if need be)."""
        ...

    def job_indexes(self, location: str, job: int) -> list[JobIndex]:
        """The job indexes at ``location`` that may name ``job`` (of segments not in the chain too)."""
        ...


def chain(entries: Iterable[Segment], last_id: str) -> list[Segment] | None:
    """The segments that end at ``last_id`` and, each naming the one before, go back to the first:
    oldest first.  None when the entries hold no such chain."""
    by_last: dict[str, list[Segment]] = {}
    for seg in entries:
        by_last.setdefault(seg.last, []).append(seg)
    found: list[Segment] = []
    target = last_id
    while True:
        candidates = by_last.get(target, [])
        linked = [c for c in candidates if not c.after or c.after in by_last]
        if not linked:
            return None
        seg = linked[0]
        found.append(seg)
        if not seg.after:
            return found[::-1]
        if id_key(seg.after) >= id_key(seg.first):
            return None
        target = seg.after


def readable(source: ArchiveSource | None, rec: ArchiveRecord) -> ArchiveSource:
    """``source``, when it can read the archive ``rec`` names; :class:`ArchiveError` saying why not."""
    if rec.legacy:
        raise ArchiveError(
            f"events up to {rec.last_id} are archived in the directory {rec.location}, not yet moved"
            " into the blob store: run the scheduler (jobledger serve or jobledger scheduler) on the"
            " machine that holds it, and its next archive round moves them"
        )
    if source is None:
        raise ArchiveError(
            f"events up to {rec.last_id} are archived in {rec.location}, which cannot be read here"
        )
    return source


def archived_segments(source: ArchiveSource | None, rec: ArchiveRecord) -> list[Segment]:
    """The segments that hold the record's events, oldest first: the chain of manifest entries that
    ends at ``last_id``.  A segment beyond it (written, but its events not yet trimmed when an
    archiver stopped) is left out: those events are still in the stream."""
    source = readable(source, rec)
    found = chain(source.manifest(rec.location), rec.last_id)
    if found is None:
        found = chain(source.manifest(rec.location, fresh=True), rec.last_id)
    if found is None:
        raise ArchiveError(
            f"the archive in {rec.location} holds no whole chain of segments up to {rec.last_id},"
            " which the ledger archived"
        )
    return found


def _line_id(line: bytes) -> EventId:
    return id_key(str(json.loads(line)["id"]))


def _first_line_from(handle: IO[bytes], size: int, target: EventId) -> int:
    """Byte offset of the first line whose id is ``target`` or later (``size`` if none): a binary
    search over the file, whose lines are in id order."""
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi) // 2
        if mid > 0:
            handle.seek(mid - 1)
            handle.readline()  # on to the first line that starts at or after mid
        else:
            handle.seek(0)
        start = handle.tell()
        if start >= hi:  # no line starts in [mid, hi): decide on the line at lo
            start = lo
            handle.seek(lo)
        line = handle.readline()
        if _line_id(line) >= target:
            hi = start
        else:
            lo = handle.tell()
    return lo


def _next_id(event_id: str) -> EventId:
    ms, seq = id_key(event_id)
    return ms, seq + 1


def segment_entries(path: Path, after: str | None, until: str | None) -> Iterator[RawEntry]:
    """The entries of one segment with ids after ``after`` up to ``until`` (both optional)."""
    last = None if until is None else id_key(until)
    with path.open("rb") as handle:
        if after is not None:
            handle.seek(_first_line_from(handle, path.stat().st_size, _next_id(after)))
        for line in handle:
            if not line.strip():
                continue
            entry = parse_line(line.decode("utf-8"), str(path))
            if last is not None and id_key(entry[0].decode()) > last:
                return
            yield entry


def archived_entries(
    source: ArchiveSource | None,
    rec: ArchiveRecord,
    after: str | None = None,
    until: str | None = None,
    batch: int = 2000,
) -> Iterator[list[RawEntry]]:
    """The archived entries after ``after`` up to ``until`` (and at most ``rec.last_id``), in order."""
    stop = rec.last_id if until is None or id_key(until) > id_key(rec.last_id) else until
    out: list[RawEntry] = []
    for seg in archived_segments(source, rec):
        if after is not None and id_key(seg.last) <= id_key(after):
            continue
        if id_key(seg.first) > id_key(stop):
            break
        for entry in segment_entries(readable(source, rec).segment_file(rec.location, seg), after, stop):
            out.append(entry)
            if len(out) == batch:
                yield out
                out = []
    if out:
        yield out


def find_entries(source: ArchiveSource | None, rec: ArchiveRecord, ids: Iterable[str]) -> dict[str, RawEntry]:
    """The archived entries with these ids (those not archived are left out), by id."""
    wanted = sorted({i for i in ids if rec.holds(i)}, key=id_key)
    found: dict[str, RawEntry] = {}
    if not wanted:
        return found
    for seg in archived_segments(source, rec):
        mine = [i for i in wanted if id_key(seg.first) <= id_key(i) <= id_key(seg.last)]
        if not mine:
            continue
        path = readable(source, rec).segment_file(rec.location, seg)
        with path.open("rb") as handle:
            size = path.stat().st_size
            for event_id in mine:
                handle.seek(_first_line_from(handle, size, id_key(event_id)))
                line = handle.readline()
                if line.strip() and _line_id(line) == id_key(event_id):
                    found[event_id] = parse_line(line.decode("utf-8"), str(path))
    return found


def archived_history_ids(source: ArchiveSource | None, rec: ArchiveRecord, job: int) -> list[str]:
    """Every event id of a job that retention removed from Redis (its history list gone with it),
    from the job index of the segment whose round removed it: [] for a job no index of the archive's
    chain names.  Reads one folder's listing and the few indexes in it (see
    :mod:`jobledger.blobs.archive`)."""
    indexes = readable(source, rec).job_indexes(rec.location, job)
    if not indexes:
        return []
    segments = {(seg.first, seg.last) for seg in archived_segments(source, rec)}
    for index in indexes:
        if job in index.jobs and (index.first, index.last) in segments:
            return index.jobs[job]
    return []


def events_by_id(source: ArchiveSource | None, rec: ArchiveRecord, ids: Iterable[str]) -> dict[str, Event]:
    """The archived events with these ids, decoded (and upcast) as the stream's are, by id.

    For readers that find an id in a job's history but not in the stream, e.g. ``GET
    /job/{id}/history``: ``events_by_id(source, rec, missing)`` with ``rec`` from :func:`record`.
    It reads files: from async code, call it in a thread (``asyncio.to_thread``).
    """
    return {i: decode_entry(*entry) for i, entry in find_entries(source, rec, ids).items()}

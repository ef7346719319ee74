"""The archive: events trimmed from the stream, kept in JSON-lines segment files, and read back.

Retention moves the oldest events of a ledger into segment files (``jobledger.replay.archive.writer``)
and trims them from the stream.  What was archived is recorded in two places, written in this order:

- on disk, in the ledger's archive directory (``<archive_dir>/<namespace>/``): the segment files,
  ``events-<first id>_<last id>.jsonl`` in the format of ``events export``
  (:mod:`jobledger.ledger.event_lines`), and ``manifest.jsonl``, one line per segment;
- in Redis, the hash ``{NS}:archive`` (:class:`ArchiveRecord`): the directory and ``last_id``, the
  newest archived event.  It is set in the same script that trims the stream, so every event with an
  id up to ``last_id`` is in a segment, and every later one is in the stream: the two never overlap
  and nothing falls between them.

Readers (replay, verify, export, and on every request the feed and job history) read events up to
``last_id`` from the segments and the rest from the stream.  This module reads, and is a live read of
the server's as much as replay's; :mod:`jobledger.replay.archive.writer` writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import redis

from jobledger.ledger.event_lines import RawEntry, parse_line
from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.reads import Read
from jobledger.ledger.stream import id_key

MANIFEST = "manifest.jsonl"

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
    """What a ledger has archived: every event up to ``last_id``, ``count`` of them, in ``directory``."""

    directory: Path
    last_id: str
    count: int

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
    return ArchiveRecord(Path(fields["dir"]), fields["last_id"], int(fields.get("count", 0)))


def record() -> Read[ArchiveRecord | None]:
    """The ledger's archive record, None when nothing was ever archived (sync or async runner)."""

    return Read(lambda k: [("HGETALL", archive_key(k))], lambda r: parse_record(r[0]))


def load_record(client: redis.Redis, keys: Keys) -> ArchiveRecord | None:
    """:func:`record`, read with a plain synchronous client."""
    return parse_record(client.hgetall(archive_key(keys)))


@dataclass(frozen=True)
class Segment:
    """One segment file and the events it holds: ids ``first`` to ``last``, ``count`` of them."""

    file: str
    first: str
    last: str
    count: int
    first_at: int
    last_at: int
    sha256: str

    def line(self) -> str:
        return json.dumps(self.__dict__, separators=(",", ":"))


def segment_name(first: str, last: str) -> str:
    """The file name of a segment: it says which events it holds."""
    return f"events-{first}_{last}.jsonl"


def read_manifest(directory: Path) -> list[Segment]:
    """The segments of an archive directory, oldest first; empty when there is no manifest yet."""
    path = directory / MANIFEST
    if not path.exists():
        return []
    segments = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                segments.append(Segment(**json.loads(line)))
    return segments


def archived_segments(rec: ArchiveRecord) -> list[Segment]:
    """The segments that hold the record's events, checked to exist and to follow each other.

    A segment beyond ``last_id`` (written, but its events not yet trimmed when an archiver
    stopped) is left out: those events are still in the stream.
    """
    if not rec.directory.is_dir():
        raise ArchiveError(
            f"events up to {rec.last_id} are archived in {rec.directory}, which cannot be read here"
        )
    segments = [s for s in read_manifest(rec.directory) if id_key(s.first) <= id_key(rec.last_id)]
    previous: str | None = None
    for seg in segments:
        if previous is not None and id_key(seg.first) <= id_key(previous):
            raise ArchiveError(f"{rec.directory / MANIFEST}: segment {seg.file} overlaps the one before")
        if not (rec.directory / seg.file).exists():
            raise ArchiveError(f"archive segment {rec.directory / seg.file} is missing")
        previous = seg.last
    if previous != rec.last_id:
        raise ArchiveError(
            f"the archive in {rec.directory} ends at {previous}, but the ledger archived up to {rec.last_id}"
        )
    return segments


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
    rec: ArchiveRecord, after: str | None = None, until: str | None = None, batch: int = 2000
) -> Iterator[list[RawEntry]]:
    """The archived entries after ``after`` up to ``until`` (and at most ``rec.last_id``), in order."""
    stop = rec.last_id if until is None or id_key(until) > id_key(rec.last_id) else until
    out: list[RawEntry] = []
    for seg in archived_segments(rec):
        if after is not None and id_key(seg.last) <= id_key(after):
            continue
        if id_key(seg.first) > id_key(stop):
            break
        for entry in segment_entries(rec.directory / seg.file, after, stop):
            out.append(entry)
            if len(out) == batch:
                yield out
                out = []
    if out:
        yield out


def find_entries(rec: ArchiveRecord, ids: Iterable[str]) -> dict[str, RawEntry]:
    """The archived entries with these ids (those not archived are left out), by id."""
    wanted = sorted({i for i in ids if rec.holds(i)}, key=id_key)
    found: dict[str, RawEntry] = {}
    if not wanted:
        return found
    for seg in archived_segments(rec):
        mine = [i for i in wanted if id_key(seg.first) <= id_key(i) <= id_key(seg.last)]
        if not mine:
            continue
        path = rec.directory / seg.file
        with path.open("rb") as handle:
            size = path.stat().st_size
            for event_id in mine:
                handle.seek(_first_line_from(handle, size, id_key(event_id)))
                line = handle.readline()
                if line.strip() and _line_id(line) == id_key(event_id):
                    found[event_id] = parse_line(line.decode("utf-8"), str(path))
    return found


def events_by_id(rec: ArchiveRecord, ids: Iterable[str]) -> dict[str, Event]:
    """The archived events with these ids, decoded (and upcast) as the stream's are, by id.

    For readers that find an id in a job's history but not in the stream, e.g. ``GET
    /job/{id}/history``: ``events_by_id(rec, missing)`` with ``rec`` from :func:`record`.
    It reads files: from async code, call it in a thread (``asyncio.to_thread``).
    """
    return {i: decode_entry(*entry) for i, entry in find_entries(rec, ids).items()}

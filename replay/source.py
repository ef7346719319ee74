"""Reading a whole ledger in order: its archived events, then its stream, as one sequence.

Replay, verify and export read through :func:`read_ledger`, so none of them can miss the events
that retention moved out of the stream.  ``--until`` points (an event id, or a time) become an
event id here (:func:`resolve_until`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast

import redis

from jobledger.ledger.durations import parse_time
from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.keys import Keys
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import (
    ArchiveRecord,
    ArchiveSource,
    archive_key,
    archived_entries,
    archived_segments,
    load_record,
    parse_record,
    readable,
    segment_entries,
)

EVENT_ID = re.compile(r"^[0-9]+(-[0-9]+)?$")


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def xrange(
    client: redis.Redis, key: str, start: str = "-", end: str = "+", count: int | None = None
) -> list[RawEntry]:
    """XRANGE, typed: the raw entries (ids and fields as bytes)."""
    return cast(list[RawEntry], client.xrange(key, start, end, count=count))


def xrevrange(
    client: redis.Redis, key: str, end: str = "+", start: str = "-", count: int | None = None
) -> list[RawEntry]:
    """XREVRANGE, typed: the raw entries, newest first."""
    return cast(list[RawEntry], client.xrevrange(key, end, start, count=count))


def read_ledger(
    client: redis.Redis,
    keys: Keys,
    after: str | None = None,
    until: str | None = None,
    batch: int = 2000,
    archive: ArchiveSource | None = None,
) -> Iterator[list[RawEntry]]:
    """Every event after ``after`` (exclusive) up to ``until`` (inclusive), oldest first, ``batch``
    at a time: from the archive (read through ``archive``) while the ids are archived ones, then
    from the stream.  :class:`ArchiveError` when archived events cannot be read.

    The archive record is read after each XRANGE, in the same pipeline: the archiver records and
    trims in one script, so if it trimmed events this read was about to get, the record read after
    it already says so, and those events are read from the archive instead.  Nothing is skipped and
    nothing is read twice, while an archiver runs.
    """
    pos = after
    end = until or "+"
    while True:
        pipe = client.pipeline(transaction=False)
        pipe.xrange(keys.events, "-" if pos is None else "(" + pos, end, count=batch)
        pipe.hgetall(archive_key(keys))
        entries, raw_record = pipe.execute()
        full = len(entries) == batch
        rec = parse_record(raw_record)
        if rec is not None and (pos is None or id_key(pos) < id_key(rec.last_id)):
            yield from archived_entries(archive, rec, pos, until, batch)
            if until is not None and rec.holds(until):
                return
            pos = rec.last_id
            entries = [e for e in entries if not rec.holds(_s(e[0]))]
        if entries:
            yield entries
            pos = _s(entries[-1][0])
        if not full:
            return


def ledger_length(client: redis.Redis, keys: Keys) -> int:
    """How many events the ledger holds, archived ones included."""
    rec = load_record(client, keys)
    return int(client.xlen(keys.events)) + (rec.count if rec else 0)


def _last_archived(
    archive: ArchiveSource | None, rec: ArchiveRecord, until_key: tuple[int, int]
) -> str | None:
    """The id of the newest archived event at or before ``until_key``."""
    found = None
    for seg in archived_segments(archive, rec):
        if id_key(seg.first) > until_key:
            break
        if id_key(seg.last) <= until_key:
            found = seg.last
            continue
        for entry_id, _ in segment_entries(
            readable(archive, rec).segment_file(rec.location, seg), None, None
        ):
            if id_key(_s(entry_id)) > until_key:
                break
            found = _s(entry_id)
    return found


def last_id_at_or_before(
    client: redis.Redis, keys: Keys, event_id: str, archive: ArchiveSource | None = None
) -> str | None:
    """The id of the newest event whose id is ``event_id`` or earlier; None if there is none.
    A bare ``MS`` stands for every event of that millisecond, as in XRANGE."""
    bound = id_key(event_id) if "-" in event_id else (int(event_id), 2**64 - 1)
    found = xrevrange(client, keys.events, f"{bound[0]}-{bound[1]}", count=1)
    if found:
        return _s(found[0][0])
    rec = load_record(client, keys)
    return _last_archived(archive, rec, bound) if rec else None


def _at(entry: RawEntry) -> int:
    return int(entry[1][b"at"])


def _first_from(client: redis.Redis, keys: Keys, ms: int) -> RawEntry | None:
    found = xrange(client, keys.events, f"{ms}-0", count=1)
    return found[0] if found else None


def last_id_at_or_before_time(
    client: redis.Redis, keys: Keys, at_ms: int, archive: ArchiveSource | None = None
) -> str | None:
    """The id of the newest event whose ``at`` is ``at_ms`` or earlier; None if there is none.

    A binary search over the stream, probing by id (server milliseconds) and reading the ``at``
    (our clock) of the event found, so it takes about 40 round trips whatever the stream's length;
    then, if the point is older than the stream, the archive's manifest and one segment.  It relies
    on ``at`` not decreasing along the stream, which the commands' scripts guarantee (the ledger's
    clock, :mod:`jobledger.ledger.scripts`): the events up to the answer are exactly those whose
    ``at`` is ``at_ms`` or earlier, a prefix of the stream.
    """
    first = xrange(client, keys.events, count=1)
    if first and _at(first[0]) <= at_ms:
        lo, hi = id_key(_s(first[0][0]))[0], id_key(_s(xrevrange(client, keys.events, count=1)[0][0]))[0] + 1
        while lo < hi:  # the first ms whose first event is after at_ms (or there is none)
            mid = (lo + hi) // 2
            probe = _first_from(client, keys, mid)
            if probe is None or _at(probe) > at_ms:
                hi = mid
            else:
                lo = mid + 1
        boundary = _first_from(client, keys, lo)
        return _walk_back(client, keys, "(" + _s(boundary[0]) if boundary is not None else "+", at_ms)
    rec = load_record(client, keys)
    return _last_archived_at(archive, rec, at_ms) if rec else None


def _walk_back(client: redis.Redis, keys: Keys, start: str, at_ms: int) -> str | None:
    """From ``start`` back, the id of the first event whose ``at`` is ``at_ms`` or earlier (the
    events of the boundary's millisecond may straddle ``at_ms``)."""
    while True:
        entries = xrevrange(client, keys.events, start, count=100)
        for entry in entries:
            if _at(entry) <= at_ms:
                return _s(entry[0])
        if len(entries) < 100:
            return None
        start = "(" + _s(entries[-1][0])


def _last_archived_at(archive: ArchiveSource | None, rec: ArchiveRecord, at_ms: int) -> str | None:
    found = None
    for seg in archived_segments(archive, rec):
        if seg.first_at > at_ms:
            break
        if seg.last_at <= at_ms:
            found = seg.last
            continue
        for entry in segment_entries(readable(archive, rec).segment_file(rec.location, seg), None, None):
            if _at(entry) > at_ms:
                return found
            found = _s(entry[0])
    return found


class UntilError(ValueError):
    """An ``--until`` that is neither an event id nor an RFC 3339 time."""


def resolve_until(
    client: redis.Redis, keys: Keys, text: str, archive: ArchiveSource | None = None
) -> str | None:
    """``--until`` as the id of the last event it includes: an event id (inclusive) or an RFC 3339
    time (every event whose ``at`` is at or before it).  None when no event is that old."""
    text = text.strip()
    if EVENT_ID.match(text):
        return last_id_at_or_before(client, keys, text, archive)
    try:
        at_ms = parse_time(text)
    except ValueError:
        raise UntilError(
            f"--until must be an event id such as 1795322898701-0 or an RFC 3339 time such as "
            f"2026-11-20T18:52:42Z, not {text!r}"
        ) from None
    return last_id_at_or_before_time(client, keys, at_ms, archive)

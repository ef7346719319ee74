"""The streams of a ledger split into partitions read as one: merged in time order, behind a cursor.

Each partition's stream is in order of its events' ``at`` (which never decreases along a stream), so
the partitions' streams merge into one order: ``at``, then the partition, then the stream id.  A
position in that merged order is a position in every partition, a :class:`Cursor`; it travels as one
opaque, URL-safe token (``GET /events``' ``next`` and ``after``, the event feed's SSE ``id`` and
``Last-Event-ID``).  With one partition the cursor is that partition's stream id, exactly as before
partitions existed.  A plain stream id given to a split ledger stands for that id in every partition
(an event id printed by ``events tail`` is one): stream ids are times, so it is a point in time.

:func:`merge_pages` makes one page of the merged order out of one page read from each partition
(:class:`jobledger.ledger.stream.Page`, each with its ``last_at``): it keeps only the events no
partition's unread part can come before, so following its cursor visits every matching event of
every partition exactly once, in time order as far as each page could see.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from jobledger.ledger.errors import BadRequest
from jobledger.ledger.events import Event
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.stream import EventFilter, Page, id_key

#: The position before every event of a stream.
START = "0-0"
_EVENT_ID = re.compile(r"^[0-9]+(-[0-9]+)?$")
#: The largest part of a stream id a client may name: Redis takes 64-bit ones, and reads after a
#: position add one to it, so a little less.
MAX_ID_PART = 2**63 - 1


def valid_event_id(raw: str) -> bool:
    """Whether ``raw`` is a stream id (``MS`` or ``MS-SEQ``) whose parts Redis can take."""
    return bool(_EVENT_ID.match(raw)) and all(
        len(part) <= 30 and int(part) <= MAX_ID_PART for part in raw.split("-", 1)
    )


#: What starts a token of several partitions (a plain stream id starts with a digit).
_TOKEN = "p"

#: Where an event stands in the merged order: its ``at``, its partition, its stream id.
Key = tuple[int, int, tuple[int, int]]


def merge_key(partition: int, event: Event) -> Key:
    return event.at, partition, id_key(event.id)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _varints(data: bytes) -> list[int]:
    values, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise ValueError("a number runs on")
        if not byte & 0x80:
            values.append(value)
            value, shift = 0, 0
    if shift:
        raise ValueError("a number is cut short")
    return values


@dataclass(frozen=True)
class Cursor:
    """A position in every partition: ``positions[p]`` is the last stream id of partition ``p``
    passed (``START``: none yet)."""

    positions: tuple[str, ...]

    @classmethod
    def start(cls, count: int) -> Cursor:
        return cls((START,) * count)

    def moved(self, partition: int, position: str) -> Cursor:
        return Cursor(tuple(position if p == partition else old for p, old in enumerate(self.positions)))

    def after(self, partition: int) -> str | None:
        """Partition ``partition``'s position as the stream reads take it (None: from the start)."""
        position = self.positions[partition]
        return None if position == START else position

    def token(self) -> str:
        """The cursor as clients see it: the stream id itself with one partition; with several, ``p``
        and the URL-safe base64 of the count and each partition's id (its time as a difference
        from the partition before's, so ids of the same moment take a few bytes each)."""
        if len(self.positions) == 1:
            return self.positions[0]
        data, previous = bytearray(_varint(len(self.positions))), 0
        for position in self.positions:
            ms, seq = id_key(position)
            delta = ms - previous
            data += _varint(delta * 2 if delta >= 0 else -delta * 2 - 1) + _varint(seq)
            previous = ms
        return _TOKEN + base64.urlsafe_b64encode(bytes(data)).rstrip(b"=").decode()


def parse_cursor(raw: str | None, count: int, name: str) -> Cursor | None:
    """The cursor a client sent as ``name`` (None when it sent none) on a ledger of ``count``
    partitions; BadRequest when it is not one this ledger gave out."""
    if raw is None or raw == "":
        return None
    if _EVENT_ID.match(raw):
        if not valid_event_id(raw):
            raise BadRequest(f"{name} is out of range: an event id's parts are at most {MAX_ID_PART}")
        return Cursor((raw,) * count)
    if count == 1:
        raise BadRequest(f"{name} must be an event id such as 1795322898701-0, not {raw!r}")
    problem = (
        f"{name} must be a position given by this ledger (a page's next, an event's id), not {raw[:100]!r}"
    )
    if not raw.startswith(_TOKEN):
        raise BadRequest(problem)
    try:
        encoded = raw[len(_TOKEN) :]
        numbers = _varints(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except ValueError:
        raise BadRequest(problem) from None
    if not numbers or numbers[0] != count or len(numbers) != 1 + 2 * count:
        got = numbers[0] if numbers else 0
        raise BadRequest(f"{name} is a position in a ledger of {got} partitions; this one has {count}")
    positions, ms = [], 0
    for zigzag, seq in zip(numbers[1::2], numbers[2::2], strict=True):
        ms += zigzag // 2 if zigzag % 2 == 0 else -(zigzag + 1) // 2
        if not 0 <= ms <= MAX_ID_PART or seq > MAX_ID_PART:
            raise BadRequest(problem)
        positions.append(f"{ms}-{seq}")
    return Cursor(tuple(positions))


@dataclass(frozen=True)
class MergedPage:
    """Events of several partitions in merged order, each with its partition; ``cursor`` is the
    position after them, ``done`` whether every partition read was read to its end."""

    events: list[tuple[int, Event]]
    cursor: Cursor
    done: bool

    def positions(self, start: Cursor) -> Iterable[tuple[int, Event, Cursor]]:
        """Each event with the cursor just after it (the position to resume from having shown it)."""
        cursor = start
        for partition, event in self.events:
            cursor = cursor.moved(partition, event.id)
            yield partition, event, cursor


def _frontier(partition: int, page: Page) -> Key:
    """Where the partition's unread part begins: every event not yet read comes after this."""
    assert page.next is not None
    return (page.last_at if page.last_at is not None else -1), partition, id_key(page.next)


def merge_pages(cursor: Cursor, pages: Mapping[int, Page], limit: int) -> MergedPage:
    """One page of the merged order after ``cursor``, of at most ``limit`` events, from a page read
    after ``cursor`` in each of the partitions named in ``pages`` (the others are left where they
    are).  An event is kept only when no other partition, read only partly, could still hold an
    earlier one; a partition whose whole page is kept moves to that page's ``next``."""
    frontiers = {p: _frontier(p, page) for p, page in pages.items() if page.next is not None}
    keyed = sorted((merge_key(p, e), p, e) for p, page in pages.items() for e in page.events)

    def settled(key: Key, partition: int) -> bool:
        return all(key <= bound for p, bound in frontiers.items() if p != partition)

    ready = [(key, p, e) for key, p, e in keyed if settled(key, p)]
    taken, cut = ready[:limit], len(ready) > limit
    until: Key | None = taken[-1][0] if cut else min(frontiers.values(), default=None)
    moved = cursor
    for _, p, e in taken:
        moved = moved.moved(p, e.id)
    for p, bound in frontiers.items():
        if until is not None and bound <= until:
            page_next = pages[p].next
            assert page_next is not None
            moved = moved.moved(p, page_next)
    return MergedPage([(p, e) for _, p, e in taken], moved, not cut and not frontiers)


def newest_first(found: Mapping[int, list[Event]], limit: int) -> list[tuple[int, Event]]:
    """The newest ``limit`` events of several partitions' newest-first lists, newest first."""
    keyed = sorted(((merge_key(p, e), p, e) for p, events in found.items() for e in events), reverse=True)
    return [(p, e) for _, p, e in keyed[:limit]]


def concerned(partitioning: Partitioning, flt: EventFilter) -> list[int]:
    """The partitions that can hold events matching ``flt``: the job's (filtered by job), the
    queue's (by queue; every one while this process has not looked the queue up), else every one."""
    if flt.job is not None:
        return [partitioning.of_id(flt.job)]
    if flt.queue is not None:
        return partitioning.placed_or_every(flt.queue)
    return list(range(partitioning.count))

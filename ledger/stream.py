"""Reading the ledger: the stream, in order, in pages, with filters; and following its live end.

A page scans forward from a cursor (exclusive) and returns the events that match, at most
``limit``.  It stops scanning after ``scan_budget`` entries so that a rare filter cannot make one
request read the whole stream; ``next`` is then the last id scanned, and following ``next`` until it
is ``None`` visits every matching event exactly once, in order.  The ``job`` filter reads the job's
own event index instead of scanning, and names the ids of the page that are no longer in the stream
(archived: see ``jobledger.projections.history``, which reads them and the archive's pages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jobledger.ledger import job_history
from jobledger.ledger.events import LOCAL, Event, decode_entry
from jobledger.ledger.reads import Read

SCAN_BATCH = 500
DEFAULT_SCAN_BUDGET = 10_000


@dataclass(frozen=True)
class EventFilter:
    type: str | None = None
    queue: str | None = None
    job: int | None = None
    actor: str | None = None
    #: a bulk operation's id: its start (the event of that id), its jobs' events, its end
    operation: str | None = None

    def matches(self, event: Event) -> bool:
        return (
            (self.type is None or event.type == self.type)
            and (self.queue is None or event.queue == self.queue)
            and (self.job is None or event.job == self.job)
            and (self.actor is None or event.actor == self.actor)
            and (self.operation is None or _of_operation(event, self.operation))
        )


def _of_operation(event: Event, operation: str) -> bool:
    started = event.type == "bulk_started" and event.id == operation
    return started or getattr(event.data, "operation", None) == operation


@dataclass(frozen=True)
class Page:
    events: list[Event]
    next: str | None  # pass back as ``after``; None when the stream was read to its end
    #: ids of the job's events in this page's range that the stream no longer holds (archived)
    missing: tuple[str, ...] = ()
    #: the ``at`` of the entry ``next`` names, when the page read it (the merge of partitions needs it)
    last_at: int | None = None


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _exclusive(after: str | None) -> str:
    return "-" if not after else "(" + after


def id_key(event_id: str) -> tuple[int, int]:
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq or 0)


def scan(after: str | None, limit: int, flt: EventFilter, budget: int = DEFAULT_SCAN_BUDGET) -> Read[Page]:
    """The next page of matching events after ``after`` (exclusive)."""
    if flt.job is not None:
        return _job_page(after, limit, flt)

    def step(start: str, found: list[Event], scanned: int) -> Read[Page]:
        count = min(SCAN_BATCH, budget - scanned)

        def parse(r: list[Any]) -> Page | Read[Page]:
            entries = r[0]
            last, last_at = start, None
            for entry_id, fields in entries:
                last = _s(entry_id)
                event = decode_entry(entry_id, fields)
                last_at = event.at
                if flt.matches(event):
                    found.append(event)
                    if len(found) == limit:
                        return Page(found, last, last_at=last_at)
            if len(entries) < count:
                return Page(found, None)
            if scanned + len(entries) >= budget:
                return Page(found, last, last_at=last_at)
            return step(last, found, scanned + len(entries))

        return Read(lambda k: [("XRANGE", k.events, _exclusive(start), "+", "COUNT", count)], parse)

    return step(after or "", [], 0)


def _job_page(after: str | None, limit: int, flt: EventFilter) -> Read[Page]:
    """The job's events after ``after``, from its own index (no scan of the stream)."""
    job = flt.job
    assert job is not None

    def fetch(ids: list[str]) -> Read[Page]:
        def parse(r: list[Any]) -> Page:
            page_ids = ids[:limit]
            found = [decode_entry(*entry[0]) for entry in r[:limit] if entry]
            missing = tuple(i for i, entry in zip(page_ids, r, strict=False) if not entry)
            more = len(ids) > limit
            last_at = found[-1].at if found else None
            return Page(
                [e for e in found if flt.matches(e)], ids[limit - 1] if more else None, missing, last_at
            )

        return Read(lambda k: [("XRANGE", k.events, i, i) for i in ids[: limit + 1]], parse)

    def parse(r: list[Any]) -> Page | Read[Page]:
        ids = job_history.ids(r)
        if after:
            ids = [i for i in ids if id_key(i) > id_key(after)]
        return fetch(ids) if ids else Page([], None)

    return Read(lambda k: job_history.commands(k, job), parse)


def newest() -> Read[str]:
    """The id of the newest event ("0-0" when the stream is empty): the live end."""
    return Read(
        lambda k: [("XREVRANGE", k.events, "+", "-", "COUNT", 1)],
        lambda r: _s(r[0][0][0]) if r[0] else "0-0",
    )


#: How many entries a look back along the stream reads per round trip once a filter skips some.
RECENT_CHUNK = 500
_FILTERED = ("type", "queue", "job", "actor")


def _may_match(flt: EventFilter, fields: dict[Any, Any]) -> bool:
    """``flt`` against an entry's raw fields, before the entry is decoded (most are skipped)."""
    got = {name: _s(v) for k, v in fields.items() if (name := _s(k)) in _FILTERED}
    wanted = {"type": flt.type, "queue": flt.queue, "job": None if flt.job is None else str(flt.job),
              "actor": flt.actor}  # fmt: skip
    return all(w is None or got.get(n, LOCAL if n == "actor" else None) == w for n, w in wanted.items())


def recent(limit: int, flt: EventFilter, budget: int = 2_000) -> Read[list[Event]]:
    """Up to ``limit`` of the newest events matching ``flt``, newest first, looking at no more than
    the newest ``budget`` events of the stream (filtered by job: at the job's newest ``limit``)."""
    job = flt.job
    if job is not None:
        return Read(
            lambda k: job_history.commands(k, job),
            lambda r: _by_ids(list(reversed(job_history.ids(r)[-limit:])), limit, flt),
        )

    def step(end: str, found: list[Event], seen: int) -> Read[list[Event]]:
        count = min(limit if not found and not seen else RECENT_CHUNK, budget - seen)

        def parse(r: list[Any]) -> Read[list[Event]] | list[Event]:
            entries = r[0]
            kept = found + [decode_entry(i, fields) for i, fields in entries if _may_match(flt, fields)]
            looked = seen + len(entries)
            if len(kept) >= limit or len(entries) < count or looked >= budget:
                return kept[:limit]
            return step("(" + _s(entries[-1][0]), kept, looked)

        return Read(lambda k: [("XREVRANGE", k.events, end, "-", "COUNT", count)], parse)

    return step("+", [], 0)


def _by_ids(ids: list[str], limit: int, flt: EventFilter) -> Read[list[Event]]:
    """The events of ``ids`` the stream still holds that match ``flt``, in the order given."""

    def parse(r: list[Any]) -> list[Event]:
        found = [decode_entry(*entry[0]) for entry in r if entry]
        return [e for e in found if flt.matches(e)][:limit]

    return Read(lambda k: [("XRANGE", k.events, i, i) for i in ids], parse)


@dataclass(frozen=True)
class Extent:
    """How many events the stream holds, and the ids of its oldest and newest (None: empty)."""

    length: int
    first: str | None
    last: str | None


def extent() -> Read[Extent]:
    def parse(r: list[Any]) -> Extent:
        return Extent(int(r[0]), _s(r[1][0][0]) if r[1] else None, _s(r[2][0][0]) if r[2] else None)

    return Read(
        lambda k: [
            ("XLEN", k.events),
            ("XRANGE", k.events, "-", "+", "COUNT", 1),
            ("XREVRANGE", k.events, "+", "-", "COUNT", 1),
        ],
        parse,
    )


def decode_entries(reply: Any) -> list[Event]:
    """The events of an XREAD reply for one stream (empty on a timeout)."""
    if not reply:
        return []
    _stream, entries = reply[0]
    return [decode_entry(entry_id, fields) for entry_id, fields in entries]

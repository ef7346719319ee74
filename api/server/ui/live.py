"""The dashboard's live feeds: the ledger's events as HTML over Server-Sent Events, for htmx's SSE
extension to put into the page.  They follow the ledger exactly as ``GET /events/stream`` does (the
same followers of :mod:`jobledger.server.event_handlers`: archive first, then the process's one
follower of the ledger, no Redis connection held while they wait, ended by a revoked token; on a
ledger split into partitions the ledger page's feed merges them, a job's timeline reads its job's
partition alone); only each event's block is HTML instead of JSON.  They count against the same
caps as ``/events/stream`` (:mod:`jobledger.server.feeds`: one more is 429)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from jobledger.ledger.errors import BadRequest
from jobledger.ledger.events import Event
from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.stream import EventFilter, id_key
from jobledger.ledger.stream_merge import parse_cursor, valid_event_id
from jobledger.projections import readers
from jobledger.server.auth import READ, READ_JOB
from jobledger.server.event_handlers import (
    Feed,
    Follower,
    Render,
    event_filter,
    feed_ledger,
    feed_response,
    follower,
    live_cursor,
    live_end,
)
from jobledger.server.inputs import in_range, job_id
from jobledger.server.ui.render import answered, fragment
from jobledger.server.ui.session import admit


def sse_block(position: str, html: str) -> str:
    """One SSE message: the position after its event as its id, and the HTML as data (a ``data:``
    line per line)."""
    data = "".join(f"data: {line}\n" for line in html.strip().splitlines())
    return f"id: {position}\n{data}\n"


def timeline_item(previous_at: int | None) -> Render:
    """Renders each event as an item of a job's timeline, timed from the one before it."""
    last = [previous_at]

    def render(event: Event, position: str) -> str:
        since = event.at - last[0] if last[0] is not None else None
        last[0] = event.at
        return sse_block(position, fragment("_timeline_item.html", item=event.item(), since=since))

    return render


def ledger_item(event: Event, position: str) -> str:
    return sse_block(position, fragment("_event_item.html", item=event.item()))


def _position(request: Request, name: str) -> str | None:
    """An event id from the query's ``after``, or the ``Last-Event-ID`` header; None without."""
    raw = (request.headers.get(name) if name == "last-event-id" else request.query_params.get(name)) or None
    if raw is not None and not valid_event_id(raw):
        raise BadRequest(f"{name} must be an event id such as 1795322898701-0, not {raw[:100]!r}")
    return raw


def _streamed(feed: Feed, request: Request) -> Response:
    return feed_response(request, feed)


async def _resumed_at(ledger: AsyncLedger, jid: int, position: str) -> int | None:
    """The time of the job's last event at or before ``position`` (None: none the stream holds)."""
    ids = [i for i in await ledger.read(readers.history_ids(jid)) if id_key(i) <= id_key(position)]
    found = await ledger.read(readers.stream_events(ids[-1:]))
    return found[ids[-1]].at if ids and ids[-1] in found else None


@answered
async def job_timeline(request: Request) -> Response:
    """The job's events after ``?after=`` (its timeline's last), each timed from the one before
    (``?prev=``: the last one's time in ms).  A browser reconnecting sends ``Last-Event-ID``: the
    feed goes on from there, timed from the job's event before it.  It reads only the job's
    partition, so its positions are that partition's event ids."""
    jid = job_id(request)
    await admit(request, READ_JOB, job=jid)
    router = await feed_ledger(request)
    ledger, partition = router.for_id(jid), router.partitioning.of_id(jid)
    prev = request.query_params.get("prev")
    if prev is not None and not (prev.isascii() and prev.isdigit() and in_range(prev)):
        raise BadRequest(f"prev must be a time in milliseconds, not {prev[:30]!r}")
    previous_at = int(prev) if prev is not None else None
    position = _position(request, "last-event-id")
    if position is not None:
        previous_at = await _resumed_at(ledger, jid, position)
    position = position or _position(request, "after") or await live_end(ledger)
    feed = Follower(ledger, EventFilter(job=jid), position, timeline_item(previous_at), partition)
    return _streamed(feed, request)


@answered
async def ledger_events(request: Request) -> Response:
    """The ledger's new events matching the page's filters (after ``Last-Event-ID`` on a reconnect),
    of every partition the filters concern, merged."""
    await admit(request, READ)
    flt = event_filter(request)
    router = await feed_ledger(request)
    count = router.partitioning.count
    cursor = parse_cursor(request.headers.get("last-event-id"), count, "last-event-id") or parse_cursor(
        request.query_params.get("after"), count, "after"
    )
    return _streamed(follower(router, flt, cursor or await live_cursor(router), ledger_item), request)

"""Handlers of ``/events`` (the ledger, paged) and ``/events/stream`` (Server-Sent Events, live).

The stream follows the ledger with its own blocking XREAD per client, so a slow client slows only
its own loop, and a vanished one ends it: nothing is buffered for anyone.  Besides the events, it
sends its position as an SSE ``id`` with no data when it starts and at each keep-alive, so a client
that reconnects with ``Last-Event-ID`` resumes after everything it was shown or that was skipped
by its filters.  Each blocking read ends before the Redis client's socket timeout
(:func:`jobledger.ledger.redis_clients.block_ms`), so keep-alives come through any quiet spell; a failure to
read the ledger ends the feed with ``event: error`` and data ``{"error": ..., "status": ...}``.
A feed opened with a token ends the same way (status 401) within a moment of that token's
revocation (:func:`jobledger.server.auth.revocation`).

Both read the archive (events retention moved out of the stream) before the stream, when the point
they start from is older than the stream: :mod:`jobledger.replay.archive.feed`, in a thread.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from jobledger.ledger.errors import BadRequest, JobLedgerError, Unavailable
from jobledger.ledger.events import EVENT_TYPES, MAX_ACTOR, Event, valid_actor
from jobledger.ledger.keys import valid_queue_name
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.redis_clients import block_ms
from jobledger.ledger.runner import AsyncLedger, translate
from jobledger.ledger.stream import EventFilter, decode_entries, id_key, newest, scan
from jobledger.replay.archive.feed import archive_page, archived_after, fill_missing, reaches_archive
from jobledger.replay.archive.records import ArchiveError, ArchiveRecord, archive_key, parse_record, record
from jobledger.server.auth import revocation
from jobledger.server.inputs import positive_int, valid_job_id

T = TypeVar("T")

MAX_PAGE = 1000
BLOCK_MS = 15_000
_EVENT_ID = re.compile(r"^[0-9]+(-[0-9]+)?$")


async def feed_ledger(request: Request) -> AsyncLedger:
    """The ledger whose stream the feed reads: the one partition."""
    opening: OpeningLedger = request.state.ledger
    router = await opening.opened()
    if router.partitioning.count > 1:
        raise Unavailable("the event feed of a ledger split into partitions is not served yet")
    return router.home


def _cursor(raw: str | None, name: str) -> str | None:
    if raw is None or raw == "":
        return None
    if not _EVENT_ID.match(raw):
        raise BadRequest(f"{name} must be an event id such as 1795322898701-0, not {raw!r}")
    return raw


def event_filter(request: Request) -> EventFilter:
    """The ``type``, ``queue``, ``job`` and ``actor`` filters of the query, checked (400 if bad).
    An empty one (``type=``, as a form sends a field left blank) is no filter, as ``after=`` is no cursor."""
    q = request.query_params
    type_, queue, job, actor = (q.get(name) or None for name in ("type", "queue", "job", "actor"))
    if type_ is not None and type_ not in EVENT_TYPES:
        raise BadRequest(f"unknown event type {type_!r}; known: {', '.join(EVENT_TYPES)}")
    if queue is not None and not valid_queue_name(queue):
        raise BadRequest(f"invalid queue name {queue!r}")
    if job is not None and valid_job_id(job) is None:
        raise BadRequest(f"job must be a positive integer, not {job!r}")
    if actor is not None and not valid_actor(actor):
        raise BadRequest(
            f"actor must be 1 to {MAX_ACTOR} printable characters, not {actor[: MAX_ACTOR + 1]!r}"
        )
    return EventFilter(type_, queue, int(job) if job is not None else None, actor)


async def list_events(request: Request) -> Response:
    after = _cursor(request.query_params.get("after"), "after")
    limit = positive_int(request, "limit", 100, MAX_PAGE)
    flt = event_filter(request)
    ledger = await feed_ledger(request)
    rec = await ledger.read(record())
    if flt.job is None and rec is not None and reaches_archive(rec, after):
        page = await asyncio.to_thread(archive_page, rec, after, limit, flt)
    else:
        page = await ledger.read(scan(after, limit, flt))
        if page.missing and rec is not None:
            page = await asyncio.to_thread(fill_missing, rec, page, flt)
    return JSONResponse({"events": [e.item() for e in page.events], "next": page.next})


def _sse(event: Event) -> str:
    return f"id: {event.id}\ndata: {json.dumps(event.item(), separators=(',', ':'))}\n\n"


def _position(position: str) -> str:
    """An SSE block with an id and no data: it moves the client's Last-Event-ID, shows nothing."""
    return f"id: {position}\n\n"


class Follower:
    """One client's walk along the ledger: archived events while its position is archived, then
    blocking XREADs of the stream.  ``render`` makes an event's SSE block (JSON by default; the
    dashboard's feeds send HTML)."""

    def __init__(
        self, ledger: AsyncLedger, flt: EventFilter, position: str, render: Callable[[Event], str] = _sse
    ) -> None:
        self.ledger, self.flt, self.position, self.render = ledger, flt, position, render

    async def archived(self, rec: ArchiveRecord | None) -> AsyncIterator[str]:
        """The archived events after the position (none when the position is in the stream)."""
        while rec is not None and id_key(self.position) < id_key(rec.last_id):
            events = await asyncio.to_thread(archived_after, rec, self.position)
            if not events:
                self.position = rec.last_id
                break
            for event in events:
                self.position = event.id
                if self.flt.matches(event):
                    yield self.render(event)

    async def next_batch(self) -> tuple[list[Event], ArchiveRecord | None]:
        """The stream's next events (empty after BLOCK_MS), and the archive record read just after
        them: if retention trimmed events this read skipped, the record says so."""
        client = self.ledger.client
        pipe = client.pipeline(transaction=False)
        pipe.xread({self.ledger.keys.events: self.position}, count=500, block=block_ms(client, BLOCK_MS))
        pipe.hgetall(archive_key(self.ledger.keys))
        reply, raw = await pipe.execute()
        return decode_entries(reply), parse_record(raw)

    async def events(self, request: Request) -> AsyncIterator[str]:
        """The feed; a failure to read the ledger, or the revocation of the token it was opened
        with, ends it with an ``event: error`` block."""
        with revocation(request) as revoked:
            ended = asyncio.ensure_future(revoked.wait()) if revoked is not None else None
            try:
                async for chunk in self._follow(request, ended):
                    yield chunk
            except redis.RedisError as exc:
                yield _error(translate(exc))
            except (JobLedgerError, ArchiveError) as exc:
                yield _error(exc)
            finally:
                if ended is not None:
                    ended.cancel()
            if revoked is not None and revoked.revoked:
                yield _error_block("the token was revoked", 401)

    async def _follow(self, request: Request, ended: asyncio.Future[None] | None) -> AsyncIterator[str]:
        yield ": following the ledger\n" + _position(self.position)
        async for chunk in self.archived(await self.ledger.read(record())):
            yield chunk
        stopping: asyncio.Event = request.app.state.stopping
        while not await request.is_disconnected():
            batch = await _unless(stopping, self.next_batch(), ended)
            if batch is None:
                return  # stopping (the client resumes elsewhere with Last-Event-ID), or revoked
            events, rec = batch
            async for chunk in self.archived(rec):
                yield chunk
            shown = False
            for event in events:
                if id_key(event.id) <= id_key(self.position):
                    continue  # read from the archive already
                self.position = event.id
                if self.flt.matches(event):
                    shown = True
                    yield self.render(event)
            if not events:
                yield ": keep-alive\n" + _position(self.position)
            elif not shown:
                yield _position(self.position)


async def _unless(
    stopping: asyncio.Event, read: Coroutine[Any, Any, T], ended: asyncio.Future[None] | None = None
) -> T | None:
    """What ``read`` gives, or None as soon as ``stopping`` is set or ``ended`` is done (the read
    is then cancelled; ``ended`` is left running)."""
    reading = asyncio.ensure_future(read)
    stop = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({reading, stop, *([ended] if ended else [])}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not reading.done():  # stopping, or this feed itself cancelled (its client hung up)
            reading.add_done_callback(_retrieved)  # its end (a closed connection) is nobody's concern
            reading.cancel()
    return reading.result() if reading.done() and not reading.cancelled() else None


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _error(exc: Exception) -> str:
    """The block that ends a feed: ``event: error`` with ``{"error", "status"}``, the status an
    HTTP answer would have had (503 while Redis is unreachable: a client may try again)."""
    return _error_block(str(exc), exc.status if isinstance(exc, JobLedgerError) else 500)


def _error_block(message: str, status: int) -> str:
    body = {"error": message, "status": status}
    return f"event: error\ndata: {json.dumps(body, separators=(',', ':'))}\n\n"


async def live_end(ledger: AsyncLedger) -> str:
    """The newest event's id: in the stream, or the archive's last when retention emptied the stream."""
    position = await ledger.read(newest())
    rec = await ledger.read(record())
    return rec.last_id if rec is not None and id_key(position) < id_key(rec.last_id) else position


async def stream_events(request: Request) -> Response:
    """Live events after ``?after=`` or the ``Last-Event-ID`` header; from the live end without."""
    ledger = await feed_ledger(request)
    flt = event_filter(request)
    position = _cursor(request.query_params.get("after"), "after") or _cursor(
        request.headers.get("last-event-id"), "Last-Event-ID"
    )
    if position is None:
        position = await live_end(ledger)
    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    follower = Follower(ledger, flt, position)
    return StreamingResponse(follower.events(request), media_type="text/event-stream", headers=headers)

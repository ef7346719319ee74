"""Handlers of ``/events`` (the ledger, paged) and ``/events/stream`` (Server-Sent Events, live).

The stream takes no Redis connection of its own while it waits: every feed of the process reads
the new events of a partition from the process's one follower of it (:mod:`jobledger.ledger.taps`),
each feed with a buffer of bounded size.  A feed whose client reads too slowly for its buffer, or
that starts behind the live end, reads the stream by itself in pages of non-blocking ``XRANGE``
from its own position (:mod:`jobledger.server.feed_reads`) until it has caught up: it is never
ended for being slow, only late.  Feeds are counted and capped per token and per process
(:mod:`jobledger.server.feeds`: one more is 429).  Besides the events, it sends its position as
an SSE ``id`` with no data when it starts and at each keep-alive, so a client that reconnects
with ``Last-Event-ID`` resumes after everything it was shown or that was skipped by its filters.
A keep-alive comes after each quiet spell as long as a blocking read on the Redis client would
block (:func:`jobledger.ledger.redis_clients.block_ms`); a failure to read the ledger ends the
feed with ``event: error`` and data ``{"error": ..., "status": ...}``.
A feed opened with a token ends the same way (status 401) within a moment of that token's
revocation (:func:`jobledger.server.auth.revocation`).

Both read the archive (events retention moved out of the stream) before the stream, when the point
they start from is older than the stream: :mod:`jobledger.projections.history`, in a thread; like
every read of a feed's own, these are non-blocking reads on the request pool.

On a ledger split into partitions both read every partition a filter concerns (a job's or a queue's
only: their partition) and merge them in time order (:mod:`jobledger.ledger.stream_merge`): the
page's ``next``, ``after``, the SSE ``id`` and ``Last-Event-ID`` are then a cursor naming a position in
every partition, an opaque token; with one partition they are the stream's event ids, as always.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger.errors import BadRequest, JobLedgerError
from jobledger.ledger.events import EVENT_TYPES, LOCAL, MAX_ACTOR, Event, valid_actor
from jobledger.ledger.keys import valid_queue_name
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.redis_clients import block_ms
from jobledger.ledger.runner import AsyncLedger, translate
from jobledger.ledger.stream import EventFilter, id_key, newest
from jobledger.ledger.stream_merge import Cursor, MergedPage, concerned, merge_key, parse_cursor
from jobledger.ledger.taps import any_pending
from jobledger.projections.archive import ArchiveError, ArchiveRecord, ArchiveSource, record
from jobledger.projections.history import archived_after, events_page, merged_page
from jobledger.server.auth import revocation
from jobledger.server.feed_reads import partition_readers
from jobledger.server.feeds import FeedResponse, FeedSlots
from jobledger.server.inputs import positive_int, valid_job_id

T = TypeVar("T")

MAX_PAGE = 1000
BLOCK_MS = 15_000


_EVENT_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")


async def feed_ledger(request: Request) -> AsyncPartitioned:
    """The ledger whose streams the feed reads: every partition, through the router."""
    opening: OpeningLedger = request.state.ledger
    return await opening.opened()


def event_filter(request: Request) -> EventFilter:
    """The ``type``, ``queue``, ``job``, ``actor`` and ``operation`` filters of the query, checked
    (400 if bad).
    An empty one (``type=``, as a form sends a field left blank) is no filter, as ``after=`` is no cursor."""
    q = request.query_params
    type_, queue, job, actor = (q.get(name) or None for name in ("type", "queue", "job", "actor"))
    if type_ is not None and type_ not in EVENT_TYPES:
        raise BadRequest(f"unknown event type {type_!r}; known: {', '.join(EVENT_TYPES)}")
    if queue is not None and not valid_queue_name(queue):
        raise BadRequest(f"invalid queue name {queue!r}")
    if job is not None and valid_job_id(job, "job") is None:
        raise BadRequest(f"job must be a positive integer, not {job!r}")
    if actor is not None and not valid_actor(actor):
        raise BadRequest(
            f"actor must be 1 to {MAX_ACTOR} printable characters, not {actor[: MAX_ACTOR + 1]!r}"
        )
    operation = q.get("operation") or None
    if operation is not None and not _EVENT_ID.fullmatch(operation):
        raise BadRequest(
            f"operation must be a bulk operation's id, such as 1795322898701-0, not {operation[:40]!r}"
        )
    return EventFilter(type_, queue, int(job) if job is not None else None, actor, operation)


async def list_events(request: Request) -> Response:
    limit = positive_int(request, "limit", 100, MAX_PAGE)
    flt = event_filter(request)
    router = await feed_ledger(request)
    count = router.partitioning.count
    after = parse_cursor(request.query_params.get("after"), count, "after")
    archive = request.state.parts.archive
    if count == 1:
        page = await events_page(
            router.home, after.positions[0] if after else None, limit, flt, archive=archive
        )
        return JSONResponse({"events": [e.item() for e in page.events], "next": page.next})
    merged = await merged_page(router, after or Cursor.start(count), limit, flt, archive=archive)
    return JSONResponse(
        {
            "events": [e.item() for _, e in merged.events],
            "next": None if merged.done else merged.cursor.token(),
        }
    )


def _sse(event: Event, position: str) -> str:
    return f"id: {position}\ndata: {json.dumps(event.item(), separators=(',', ':'))}\n\n"


def _position(position: str) -> str:
    """An SSE block with an id and no data: it moves the client's Last-Event-ID, shows nothing."""
    return f"id: {position}\n\n"


Render = Callable[[Event, str], str]


async def _archived(
    archive: ArchiveSource | None, rec: ArchiveRecord | None, position: str
) -> AsyncIterator[Event | str]:
    """The archived events after ``position`` (none when it is in the stream), oldest first; when the
    archive holds none after it though its record goes further, the record's last id instead: the
    position to move to."""
    while rec is not None and id_key(position) < id_key(rec.last_id):
        events = await asyncio.to_thread(archived_after, archive, rec, position)
        if not events:
            yield rec.last_id
            return
        for event in events:
            yield event
        position = events[-1].id


def quiet_spell(ledger: AsyncLedger) -> float:
    """Seconds a feed waits for events before it sends a keep-alive."""
    return block_ms(ledger.client, BLOCK_MS) / 1000


class Feed:
    """What every follower of the ledger does around its walk: a failure to read the ledger, or the
    revocation of the token it was opened with, ends it with an ``event: error`` block."""

    async def events(self, request: Request) -> AsyncIterator[str]:
        """The feed, each chunk an SSE block (or a comment and a block)."""
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

    def _follow(self, request: Request, ended: asyncio.Future[None] | None) -> AsyncIterator[str]:
        raise NotImplementedError


class Follower(Feed):
    """One client's walk along a ledger of one partition (or partition ``partition`` of a split
    ledger, its position that partition's stream id): archived events while its position is
    archived, then the stream's, from the process's follower.  ``render`` makes an event's SSE
    block from the event and the position after it (JSON by default; the dashboard's feeds send HTML)."""

    def __init__(
        self, ledger: AsyncLedger, flt: EventFilter, position: str, render: Render = _sse, partition: int = 0
    ) -> None:
        self.ledger, self.flt, self.position, self.render = ledger, flt, position, render
        self.partition = partition

    async def archived(self, archive: ArchiveSource | None, rec: ArchiveRecord | None) -> AsyncIterator[str]:
        """The archived events after the position (none when the position is in the stream)."""
        async for got in _archived(archive, rec, self.position):
            if isinstance(got, str):
                self.position = got
                continue
            self.position = got.id
            if self.flt.matches(got):
                yield self.render(got, got.id)

    async def _follow(self, request: Request, ended: asyncio.Future[None] | None) -> AsyncIterator[str]:
        yield ": following the ledger\n" + _position(self.position)
        archive = request.state.parts.archive
        async for chunk in self.archived(archive, await self.ledger.read(record())):
            yield chunk
        stopping: asyncio.Event = request.app.state.stopping
        with partition_readers(request, {self.partition: self.ledger}) as readers:
            reader = readers[self.partition]
            while not await request.is_disconnected():
                woken = await _unless(stopping, any_pending([reader.tap], quiet_spell(self.ledger)), ended)
                if woken is None:
                    return  # stopping (the client resumes elsewhere with Last-Event-ID), or revoked
                events, rec = await reader.take(self.position)
                async for chunk in self.archived(archive, rec):
                    yield chunk
                for chunk in self._walked(events, woken):
                    yield chunk

    def _walked(self, events: list[Event], woken: bool) -> Iterator[str]:
        """The blocks of ``events`` past the position (a bare position when none is shown; a
        keep-alive when nothing came in a quiet spell)."""
        shown = moved = False
        for event in events:
            if id_key(event.id) <= id_key(self.position):
                continue  # read already (from the archive, or by itself)
            self.position, moved = event.id, True
            if self.flt.matches(event):
                shown = True
                yield self.render(event, event.id)
        if not woken:
            yield ": keep-alive\n" + _position(self.position)
        elif moved and not shown:
            yield _position(self.position)


#: How many events a merged feed catches up by at a time, before it follows the live ends.
CATCH_UP = 500


class MergedFollower(Feed):
    """One client's walk along a ledger split into partitions, its position a
    :class:`~jobledger.ledger.stream_merge.Cursor` (the SSE id of each block): it catches up to the
    live end in merged pages (archived events included), as ``GET /events`` reads them, then follows
    every partition the filter concerns from the process's followers, showing the events that
    came together in time order."""

    def __init__(
        self, router: AsyncPartitioned, flt: EventFilter, cursor: Cursor, render: Render = _sse
    ) -> None:
        self.router, self.flt, self.cursor, self.render = router, flt, cursor, render
        self.where = concerned(router.partitioning, flt)

    def _shown(self, page: MergedPage, idle: bool = False) -> Iterator[str]:
        """The page's events, each with the cursor after it; the cursor alone when none is shown
        (a keep-alive when ``idle``: every read ended with nothing)."""
        for _, event, cursor in page.positions(self.cursor):
            yield self.render(event, cursor.token())
        self.cursor = page.cursor
        if not page.events:
            yield (": keep-alive\n" if idle else "") + _position(self.cursor.token())

    async def _arrived(
        self, archive: ArchiveSource | None, partition: int, events: list[Event], rec: ArchiveRecord | None
    ) -> tuple[list[Event], str]:
        """A partition's events after its position (archived ones first, when retention moved some
        past it), and the position after them."""
        position, found = self.cursor.positions[partition], []
        async for got in _archived(archive, rec, position):
            position = got if isinstance(got, str) else got.id
            if not isinstance(got, str):
                found.append(got)
        for event in events:
            if id_key(event.id) > id_key(position):
                found.append(event)
                position = event.id
        return found, position

    async def _follow(self, request: Request, ended: asyncio.Future[None] | None) -> AsyncIterator[str]:
        yield ": following the ledger\n" + _position(self.cursor.token())
        stopping: asyncio.Event = request.app.state.stopping
        archive = request.state.parts.archive
        ledgers = {p: self.router.runners[p] for p in self.where}
        with partition_readers(request, ledgers) as readers:  # tapped before the catch-up: none lost
            done = False
            while not done:
                page = await _unless(
                    stopping,
                    merged_page(self.router, self.cursor, CATCH_UP, self.flt, archive=archive),
                    ended,
                )
                if page is None or await request.is_disconnected():
                    return
                for chunk in self._shown(page):
                    yield chunk
                done = page.done
            taps = [reader.tap for reader in readers.values()]
            while not await request.is_disconnected():
                woken = await _unless(stopping, any_pending(taps, quiet_spell(self.router.home)), ended)
                if woken is None:
                    return
                shown: list[tuple[int, Event]] = []
                moved = self.cursor
                for p, reader in readers.items():
                    if reader.tap.pending:
                        events, rec = await reader.take(self.cursor.positions[p])
                        found, position = await self._arrived(archive, p, events, rec)
                        shown += [(p, e) for e in found if self.flt.matches(e)]
                        moved = moved.moved(p, position)
                if woken and not shown and moved == self.cursor:
                    continue
                shown.sort(key=lambda pe: merge_key(*pe))
                for chunk in self._shown(MergedPage(shown, moved, True), idle=not woken):
                    yield chunk


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


async def live_cursor(router: AsyncPartitioned) -> Cursor:
    """The live end of every partition."""
    return Cursor(tuple(await asyncio.gather(*(live_end(runner) for runner in router.runners))))


def follower(router: AsyncPartitioned, flt: EventFilter, cursor: Cursor, render: Render = _sse) -> Feed:
    """The walk along the ledger from ``cursor``: of its one partition, or of every partition merged."""
    if router.partitioning.count == 1:
        return Follower(router.home, flt, cursor.positions[0], render)
    return MergedFollower(router, flt, cursor, render)


def feed_response(request: Request, feed: Feed) -> Response:
    """The feed's answer, counted against the caps of the request's token (429 past them)."""
    slots: FeedSlots = request.state.feeds
    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    return FeedResponse(feed.events(request), slots, getattr(request.state, "token", LOCAL), headers)


async def stream_events(request: Request) -> Response:
    """Live events after ``?after=`` or the ``Last-Event-ID`` header; from the live end without."""
    router = await feed_ledger(request)
    flt = event_filter(request)
    count = router.partitioning.count
    cursor = parse_cursor(request.query_params.get("after"), count, "after") or parse_cursor(
        request.headers.get("last-event-id"), count, "Last-Event-ID"
    )
    if cursor is None:
        cursor = await live_cursor(router)
    return feed_response(request, follower(router, flt, cursor))

"""Handlers of ``/events`` (the ledger, paged) and ``/events/stream`` (Server-Sent Events, live).

The stream follows the ledger with its own blocking XREAD per client, so a slow client slows only
its own loop, and a vanished one ends it: nothing is buffered for anyone.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from api.body import positive_int, valid_job_id
from ledger.errors import BadRequest
from ledger.events import EVENT_TYPES, Event
from ledger.keys import valid_queue_name
from ledger.runner import AsyncLedger, translate
from ledger.stream import EventFilter, decode_entries, newest, scan

MAX_PAGE = 1000
BLOCK_MS = 15_000
_EVENT_ID = re.compile(r"^[0-9]+(-[0-9]+)?$")


def _ledger(request: Request) -> AsyncLedger:
    ledger: AsyncLedger = request.state.ledger
    return ledger


def _cursor(raw: str | None, name: str) -> str | None:
    if raw is None or raw == "":
        return None
    if not _EVENT_ID.match(raw):
        raise BadRequest(f"{name} must be an event id such as 1795322898701-0, not {raw!r}")
    return raw


def _filter(request: Request) -> EventFilter:
    q = request.query_params
    type_, queue, job = q.get("type"), q.get("queue"), q.get("job")
    if type_ is not None and type_ not in EVENT_TYPES:
        raise BadRequest(f"unknown event type {type_!r}; known: {', '.join(EVENT_TYPES)}")
    if queue is not None and not valid_queue_name(queue):
        raise BadRequest(f"invalid queue name {queue!r}")
    if job is not None and valid_job_id(job) is None:
        raise BadRequest(f"job must be a positive integer, not {job!r}")
    return EventFilter(type_, queue, int(job) if job is not None else None)


async def list_events(request: Request) -> Response:
    after = _cursor(request.query_params.get("after"), "after")
    limit = positive_int(request, "limit", 100, MAX_PAGE)
    page = await _ledger(request).read(scan(after, limit, _filter(request)))
    return JSONResponse({"events": [e.item() for e in page.events], "next": page.next})


def _sse(event: Event) -> str:
    return f"id: {event.id}\ndata: {json.dumps(event.item(), separators=(',', ':'))}\n\n"


async def stream_events(request: Request) -> Response:
    """Live events after ``?after=`` or the ``Last-Event-ID`` header; from the live end without."""
    ledger = _ledger(request)
    flt = _filter(request)
    position = _cursor(request.query_params.get("after"), "after") or _cursor(
        request.headers.get("last-event-id"), "Last-Event-ID"
    )
    if position is None:
        position = await ledger.read(newest())

    async def follow(position: str) -> AsyncIterator[str]:
        yield ": following the ledger\n\n"
        while not await request.is_disconnected():
            try:
                reply = await ledger.client.xread({ledger.keys.events: position}, count=500, block=BLOCK_MS)
            except redis.RedisError as exc:
                yield f"event: error\ndata: {json.dumps({'error': str(translate(exc))})}\n\n"
                return
            events = decode_entries(reply)
            if not events:
                yield ": keep-alive\n\n"
            for event in events:
                position = event.id
                if flt.matches(event):
                    yield _sse(event)

    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    return StreamingResponse(follow(position), media_type="text/event-stream", headers=headers)

"""Handlers of ``/queue``: queue settings, size, job ids, creating and fetching jobs."""

from __future__ import annotations

import asyncio
from typing import Any, Literal, get_args

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger import commands
from jobledger.ledger.durations import format_ms, parse_ms, parse_time
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.reads import Read
from jobledger.ledger.requests import JOB_STATUSES, JobOptions, QueueSettings
from jobledger.ledger.watch import queue_topic
from jobledger.projections import job_search, listing, readers
from jobledger.server.auth import remember_jobs, revocation, revoked_response
from jobledger.server.inputs import (
    checked_tag,
    field_names,
    idempotency,
    in_range,
    parse_model,
    positive_int,
    queue_name,
    read_json,
    read_model,
    read_model_and_body,
    replayed,
    traceparent,
)
from jobledger.server.long_poll import long_poll
from jobledger.server.upload_handlers import is_multipart, job_from_form, queue_settings, with_stored_files

MAX_FETCH = 1000
MAX_PAGE = 1000
MAX_BATCH = 10_000
MAX_WAIT_MS = 300_000


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


async def list_queues(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.queue_names()))


async def put_queue(request: Request) -> Response:
    name = queue_name(request)
    settings = await read_model(request, QueueSettings, empty_ok=True, lenient=True)
    created = await _ledger(request).run(commands.put_queue(name, settings))
    return Response(status_code=201 if created else 204, headers={"location": f"/queue/{name}"})


async def get_queue(request: Request) -> Response:
    settings = await _ledger(request).read(readers.queue(queue_name(request)))
    return JSONResponse(settings.view())


async def delete_queue(request: Request) -> Response:
    await _ledger(request).run(commands.delete_queue(queue_name(request)))
    return Response(status_code=204)


async def queue_size(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.queue_size(queue_name(request))))


async def queue_job_ids(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.queue_job_ids(queue_name(request))))


async def create_job(request: Request) -> Response:
    """A JSON job body, or ``multipart/form-data`` with the job's files
    (:mod:`jobledger.server.upload_handlers`)."""
    name = queue_name(request)
    if is_multipart(request):
        settings = await queue_settings(request, name)  # before the body: 404 with nothing stored
        options, body = await job_from_form(request, name, settings)
    else:
        options, body = await read_model_and_body(request, JobOptions, empty_ok=True, lenient=True)
        [options] = await with_stored_files(request, name, [options])
    key = idempotency(request, name, body)
    call = commands.create_job(name, options, idempotency=key, traceparent=traceparent(request))
    made = await _ledger(request).run(call)
    remember_jobs(request, name, [made.id])
    # 200 with the existing job's id when a live job of the queue already holds the unique_key
    headers = {"location": f"/job/{made.id}", **replayed(made.again)}
    return JSONResponse(made.id, status_code=201 if made.created else 200, headers=headers)


async def pause_queue(request: Request) -> Response:
    await _ledger(request).run(commands.pause_queue(queue_name(request), True))
    return Response(status_code=204)


async def resume_queue(request: Request) -> Response:
    await _ledger(request).run(commands.pause_queue(queue_name(request), False))
    return Response(status_code=204)


async def fetch_job(request: Request) -> Response:
    """Ocypod's ``{"id", "input"}`` plus ``attempt`` (and ``files``, when the job has some);
    ``?count=N`` answers a list of up to N, ``?worker=ID`` records the worker, ``?wait=DURATION``
    waits up to that long for a job to come, ``?fields=heartbeat_timeout`` adds each job's
    ``heartbeat_timeout`` (read with it: a worker need not ask for it job by job).  With none: 204,
    after ``next_job_delay`` (Ocypod's setting, default 0s) unless it waited."""
    name = queue_name(request)
    count = positive_int(request, "count", 0, MAX_FETCH)
    wait = wait_seconds(request)
    beat = field_names(request, FETCH_FIELDS, "fetch") is not None  # heartbeat_timeout, the one field it adds
    call = commands.fetch_jobs(name, count or 1, request.query_params.get("worker"))
    ledger = _ledger(request)
    if wait:
        with (
            request.state.watch.subscribe([queue_topic(name)]) as woken,  # before trying: no lost wake-up
            revocation(request) as revoked,
        ):
            jobs = await long_poll(request, ledger, call, woken, wait, revoked)  # ends if the client hangs up
        if revoked is not None and revoked.revoked:
            return revoked_response()
    else:
        jobs = await ledger.run(call)
    if not jobs:
        if not wait:  # Ocypod's next_job_delay: slow down workers polling an empty queue
            await asyncio.sleep(request.app.state.next_job_delay / 1000)
        return Response(status_code=204)
    remember_jobs(request, name, (j.id for j in jobs))
    items = [fetched_json(j, beat) for j in jobs]
    body = f"[{','.join(items)}]" if count else items[0]
    return Response(body, media_type="application/json")


#: The fields a fetch can add to each job it hands out (what the fetch reads anyway).
FetchField = Literal["heartbeat_timeout"]
FETCH_FIELDS: tuple[str, ...] = get_args(FetchField)


def fetched_json(job: commands.Fetched, heartbeat_timeout: bool) -> str:
    """A job handed out, as JSON text: ``{"id", "input", "attempt"}``, its ``files`` when it has
    some (references to fetch from /job/{id}/files/{name}), the ``traceparent`` it was created
    with, if any, and its ``heartbeat_timeout`` when asked.  The input is stored as JSON text:
    spliced in rather than decoded and encoded again (and a traceparent is hex and dashes)."""
    files = f',"files":{job.files_text}' if job.files_text and job.files_text != "[]" else ""
    trace = f',"traceparent":"{job.traceparent}"' if job.traceparent else ""
    beat = f',"heartbeat_timeout":"{format_ms(job.heartbeat_timeout_ms)}"' if heartbeat_timeout else ""
    return f'{{"id":{job.id},"input":{job.input_text or "null"},"attempt":{job.attempt}{files}{trace}{beat}}}'


def wait_seconds(request: Request) -> float:
    """``?wait=`` in seconds (a duration such as "30s", or seconds), at most MAX_WAIT."""
    raw = request.query_params.get("wait")
    if raw is None:
        return 0.0
    try:
        ms = parse_ms(_number_or_text(raw))
    except ValueError as exc:
        raise BadRequest(f"wait: {exc}") from None
    if ms > MAX_WAIT_MS:
        raise BadRequest(f"wait can be at most {format_ms(MAX_WAIT_MS)}")
    return ms / 1000


def _number_or_text(raw: str) -> float | str:
    """A bare number is seconds (as in a JSON body); anything else a duration string."""
    try:
        return float(raw)
    except ValueError:
        return raw


async def list_jobs(request: Request) -> Response:
    """Job summaries of the queue, paged by id: ``{"jobs": [...], "next": cursor or null}``."""
    q = request.query_params
    status, tag, cursor = q.get("status"), q.get("tag"), q.get("cursor", "0")
    if status is not None and status not in JOB_STATUSES:
        raise BadRequest(f"unknown status {status!r}; known: {', '.join(JOB_STATUSES)}")
    if tag is not None:
        checked_tag(tag)
    if not (cursor.isascii() and cursor.isdigit() and in_range(cursor)):
        raise BadRequest(f"cursor must be the next value of a previous page, not {cursor[:30]!r}")
    limit = positive_int(request, "limit", 100, MAX_PAGE)
    text = q.get("search")
    if text is not None:
        found = _searched(request, text, status, tag, limit, int(cursor))
        return JSONResponse(await _ledger(request).read(found))
    page = listing.page(queue_name(request), status, tag, limit, int(cursor))
    return JSONResponse(await _ledger(request).read(page))


def _searched(
    request: Request, text: str, status: str | None, tag: str | None, limit: int, cursor: int
) -> Read[dict[str, Any]]:
    """``?search=`` (with ``since`` / ``until``): a bounded scan (:mod:`jobledger.projections.job_search`)."""
    job_search.checked_text(text, tag)
    window = []
    for name in ("since", "until"):
        raw = request.query_params.get(name)
        try:
            window.append(None if raw is None else parse_time(raw))
        except ValueError:
            raise BadRequest(f"{name} must be an RFC 3339 time, e.g. 2026-11-20T18:52:42Z") from None
    return job_search.search(queue_name(request), text, status, limit, cursor, *window)


async def create_jobs(request: Request) -> Response:
    """Many jobs in one request and one round trip: a JSON list of job bodies -> their ids."""
    name = queue_name(request)
    raw = await read_json(request)
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_BATCH:
        raise BadRequest(f"request body must be a JSON list of 1 to {MAX_BATCH} job bodies")
    jobs = await with_stored_files(request, name, [_job_body(request, i, item) for i, item in enumerate(raw)])
    key = idempotency(request, name, raw)
    call = commands.create_jobs(name, jobs, idempotency=key, traceparent=traceparent(request))
    made = await _ledger(request).run(call)
    return JSONResponse([m.id for m in made], status_code=201, headers=replayed(any(m.again for m in made)))


def _job_body(request: Request, index: int, item: object) -> JobOptions:
    if not isinstance(item, dict):
        raise BadRequest(f"job {index} of the list must be a JSON object")
    return parse_model(request, JobOptions, item, f"{index}.")

"""Handlers of ``/queue``: queue settings, size, job ids, creating and fetching jobs."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from api.body import positive_int, queue_name, read_model
from ledger import commands
from ledger.requests import JobOptions, QueueSettings
from ledger.runner import AsyncLedger
from projections import readers

MAX_FETCH = 1000


def _ledger(request: Request) -> AsyncLedger:
    ledger: AsyncLedger = request.state.ledger
    return ledger


async def list_queues(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.queue_names()))


async def put_queue(request: Request) -> Response:
    name = queue_name(request)
    settings = await read_model(request, QueueSettings, empty_ok=True)
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
    name = queue_name(request)
    options = await read_model(request, JobOptions, empty_ok=True)
    made = await _ledger(request).run(commands.create_job(name, options))
    # 200 with the existing job's id when a live job of the queue already holds the unique_key
    return JSONResponse(
        made.id, status_code=201 if made.created else 200, headers={"location": f"/job/{made.id}"}
    )


async def pause_queue(request: Request) -> Response:
    await _ledger(request).run(commands.pause_queue(queue_name(request), True))
    return Response(status_code=204)


async def resume_queue(request: Request) -> Response:
    await _ledger(request).run(commands.pause_queue(queue_name(request), False))
    return Response(status_code=204)


async def fetch_job(request: Request) -> Response:
    """Ocypod's ``{"id", "input"}`` plus ``attempt``; ``?count=N`` answers a list of up to N.
    With none queued: 204, after ``next_job_delay`` (Ocypod's setting, default 0s)."""
    name = queue_name(request)
    count = positive_int(request, "count", 0, MAX_FETCH)
    worker = request.query_params.get("worker")
    jobs = await _ledger(request).run(commands.fetch_jobs(name, count or 1, worker))
    if not jobs:
        # Ocypod's next_job_delay: slow down workers polling an empty queue
        await asyncio.sleep(request.app.state.next_job_delay / 1000)
        return Response(status_code=204)
    # input is stored as JSON text: splice it in rather than decode and encode it again
    items = [f'{{"id":{j.id},"input":{j.input_text or "null"},"attempt":{j.attempt}}}' for j in jobs]
    body = f"[{','.join(items)}]" if count else items[0]
    return Response(body, media_type="application/json")

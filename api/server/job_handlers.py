"""Handlers of ``/job/{id}`` and ``/tag/{tag}``: read, update, heartbeat, output, delete."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger import commands
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobUpdate
from jobledger.projections import readers
from jobledger.projections.history import job_history
from jobledger.projections.views import JOB_FIELDS
from jobledger.server.inputs import (
    attempt,
    checked_tag,
    field_names,
    ignore_keys,
    job_id,
    read_json,
    read_model,
)


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


async def get_job(request: Request) -> Response:
    return JSONResponse(
        await _ledger(request).read(
            readers.job(job_id(request), field_names(request, JOB_FIELDS, "job") or JOB_FIELDS)
        )
    )


async def get_status(request: Request) -> Response:
    """Ocypod's ``GET /job/{id}/status``: the status as a JSON string, e.g. ``"queued"``."""
    return JSONResponse(await _ledger(request).read(readers.job_status(job_id(request))))


async def update_job(request: Request) -> Response:
    jid = job_id(request)
    update = await read_model(request, JobUpdate, lenient=True)
    update = update.model_copy(update={"attempt": attempt(request, update.attempt)})
    await _ledger(request).run(commands.update_job(jid, update))
    return Response(status_code=204)


async def delete_job(request: Request) -> Response:
    await _ledger(request).run(commands.delete_job(job_id(request)))
    return Response(status_code=204)


async def heartbeat(request: Request) -> Response:
    jid = job_id(request)
    body = await read_json(request, default=None)
    body_attempt = body.get("attempt") if isinstance(body, dict) else None
    if isinstance(body, dict):
        ignore_keys(request, [key for key in body if key != "attempt"])
    valid = isinstance(body_attempt, int) and not isinstance(body_attempt, bool) and body_attempt >= 1
    if body_attempt is not None and not valid:
        raise BadRequest("attempt must be a positive integer")
    await _ledger(request).run(commands.heartbeat(jid, attempt(request, body_attempt)))
    return Response(status_code=204)


async def get_output(request: Request) -> Response:
    text = await _ledger(request).read(readers.job_field_raw(job_id(request), "output"))
    return Response(text or "null", media_type="application/json")


async def put_output(request: Request) -> Response:
    jid = job_id(request)
    output = await read_json(request)
    await _ledger(request).run(commands.set_output(jid, output, attempt(request)))
    return Response(status_code=204)


async def history(request: Request) -> Response:
    """Every event of the job, oldest first, those retention moved to the archive included."""
    return JSONResponse(await job_history(_ledger(request), job_id(request), request.state.parts.archive))


async def tagged(request: Request) -> Response:
    tag = checked_tag(request.path_params["tag"])
    return JSONResponse(await _ledger(request).read(readers.tagged(tag)))

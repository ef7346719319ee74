"""Handlers of ``/launcher``: create, list, read and delete launchers (cozy-stack's @cron, @interval,
@at and @event).  A launcher's first firing time is computed from the ledger's clock, as the
scheduler computes the next ones (:mod:`jobledger.ledger.launchers`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger import commands, launchers
from jobledger.ledger.errors import NotFound
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.projections import launchers as readers
from jobledger.server.inputs import idempotency, read_model_and_body, replayed, valid_job_id


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


def launcher_id(request: Request) -> int:
    """The path's launcher id; one that is not a positive integer names no launcher (404)."""
    raw: str = request.path_params["launcher_id"]
    found = valid_job_id(raw, "launcher id")
    if found is None:
        raise NotFound(f"launcher {raw!r} does not exist")
    return found


async def create_launcher(request: Request) -> Response:
    spec, body = await read_model_and_body(request, LauncherSpec)
    key = idempotency(request, "", body)
    ledger = _ledger(request)
    data = launchers.created_data(spec, ledger.clock())
    made = await ledger.run(commands.create_launcher(spec.queue, data, key))
    headers = {"location": f"/launcher/{made.id}", **replayed(made.again)}
    return JSONResponse({"id": made.id}, status_code=201, headers=headers)


async def list_launchers(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.launchers()))


async def get_launcher(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.launcher(launcher_id(request))))


async def delete_launcher(request: Request) -> Response:
    await _ledger(request).run(commands.delete_launcher(launcher_id(request)))
    return Response(status_code=204)

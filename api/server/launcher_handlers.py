"""Handlers of ``/launcher``: create, declare by name, list, read, pause, resume, fire and delete
launchers (cozy-stack's @cron, @interval, @at and @event).  A launcher's firing times are computed from
the ledger's clock, as the scheduler computes the next ones (:mod:`jobledger.ledger.launchers`).

A launcher in a path is its id (digits) or its name (which starts with a letter).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger import commands, launchers
from jobledger.ledger.errors import BadRequest, Conflict, NotFound
from jobledger.ledger.launcher_declarations import check_name, put, resume
from jobledger.ledger.launchers import LauncherSpec
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.projections import launchers as readers
from jobledger.server.inputs import idempotency, read_model, read_model_and_body, replayed, valid_job_id


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


async def launcher_id(request: Request) -> int:
    """The path's launcher: its id, or the id of the launcher of that name; 404 when there is none."""
    raw: str = request.path_params["launcher"]
    if raw[:1].isalpha():
        found = await _ledger(request).read(readers.launcher_named(raw)) if len(raw) <= 255 else None
    else:
        found = valid_job_id(raw, "launcher id")
    if found is None:
        raise NotFound(f"launcher {raw[:80]!r} does not exist")
    return found


async def create_launcher(request: Request) -> Response:
    spec, body = await read_model_and_body(request, LauncherSpec)
    key = idempotency(request, "", body)
    ledger = _ledger(request)
    data = launchers.created_data(spec, ledger.clock())
    made = await ledger.run(commands.create_launcher(spec.queue, data, key))
    headers = {"location": f"/launcher/{made.id}", **replayed(made.again)}
    return JSONResponse({"id": made.id}, status_code=201, headers=headers)


async def _partition_kept(ledger: OpeningLedger, name: str, spec: LauncherSpec) -> None:
    """On a ledger split into partitions a launcher lives in its queue's: a named one cannot move to a
    queue of another partition (409: delete it, then declare it)."""
    router = await ledger.opened()
    partitioning = router.partitioning
    if partitioning.count == 1:
        return
    found = await ledger.read(readers.launcher_named(name))
    if found is not None and partitioning.of_id(found) != (await router.locate([spec.queue]))[spec.queue]:
        raise Conflict(
            f"launcher {name!r} lives with its queue's partition; queue {spec.queue!r} is in another: "
            "delete the launcher, then declare it again"
        )


async def put_launcher(request: Request) -> Response:
    """Declare the launcher named in the path: 201 when created, 200 when updated or unchanged."""
    name: str = request.path_params["launcher"]
    try:
        check_name(name)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    spec = await read_model(request, LauncherSpec)
    ledger = _ledger(request)
    await _partition_kept(ledger, name, spec)
    done = await ledger.run(put(name, spec, ledger.clock()))
    body = {"id": done.id, "name": name, "outcome": done.outcome}
    return JSONResponse(body, status_code=201 if done.outcome == "created" else 200,
                        headers={"location": f"/launcher/{name}"})  # fmt: skip


async def list_launchers(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.launchers()))


async def get_launcher(request: Request) -> Response:
    return JSONResponse(await _ledger(request).read(readers.launcher(await launcher_id(request))))


async def delete_launcher(request: Request) -> Response:
    await _ledger(request).run(commands.delete_launcher(await launcher_id(request)))
    return Response(status_code=204)


async def pause_launcher(request: Request) -> Response:
    """Pause: 204 (also when it was paused already, and then nothing is appended)."""
    await _ledger(request).run(commands.pause_launcher(await launcher_id(request)))
    return Response(status_code=204)


async def resume_launcher(request: Request) -> Response:
    """Resume: a @cron or @interval launcher fires next at its first firing time from now."""
    ledger = _ledger(request)
    found = await ledger.read(readers.launcher(await launcher_id(request)))
    await ledger.run(resume(found["id"], found["type"], found["arguments"], found["tz"], ledger.clock()))
    return Response(status_code=204)


async def fire_launcher(request: Request) -> Response:
    """Fire now: 201 with the new job's id (409 when the launcher is held back)."""
    job_id = await _ledger(request).run(commands.fire_launcher_now(await launcher_id(request)))
    return JSONResponse({"job": job_id}, status_code=201, headers={"location": f"/job/{job_id}"})

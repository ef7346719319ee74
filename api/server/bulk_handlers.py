"""Handlers of the bulk routes: ``POST /bulk`` (requeue, cancel or delete every job that matches a
filter), ``POST /bulk/{operation}`` (run a cut-short operation again) and ``GET /bulk/{operation}``
(its record and progress).

The body is checked whole, and the token's scopes on every queue the operation may touch, before
anything is appended: a bad filter is 400, a scope that does not cover it 403.  A requeue or a
cancel needs ``work`` on each queue (as the single PATCH does), a delete ``admin``.  A dry run
counts and changes nothing: ``{"operation": null, "matched": N, "done": 0}``.  A real one records
its start, then runs in this server's background (:mod:`jobledger.server.bulk_runs`); the answer
waits for it up to ``?wait=`` (default :data:`WAIT`): 200 with the counts when it finished by then,
else 202 with the counts so far and ``Location: /bulk/{operation}``, where its progress is read.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger.bulk import BulkRequest, bulk_start
from jobledger.ledger.durations import format_time
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.projections import bulk_reads
from jobledger.server.auth import ADMIN, Forbidden, check_form_scope, check_jobs_scope
from jobledger.server.bulk_runs import BulkRuns, Progress, run
from jobledger.server.inputs import read_model
from jobledger.server.queue_handlers import wait_seconds

#: How long (s) ``POST /bulk`` waits for its operation before it answers 202 (``?wait=`` sets it).
WAIT = 10.0


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


async def touched_queues(router: AsyncPartitioned, body: BulkRequest) -> list[str]:
    """The queues an operation without a queue or ids may touch: each one holding a job of a
    status the operation acts on."""
    wanted = bulk_reads.statuses(body.action, body.statuses())

    async def of(partition: int) -> list[str]:
        names = await router.read(bulk_reads.queues(partition))
        found = await asyncio.gather(*(router.read(bulk_reads.sources(partition, n, wanted)) for n in names))
        return [n for n, sources in zip(names, found, strict=True) if sources]

    parts = await asyncio.gather(*(of(p) for p in range(router.partitioning.count)))
    return [name for part in parts for name in part]


async def _check_scopes(request: Request, body: BulkRequest) -> None:
    """403 unless the token may do the single action on every queue the operation may touch."""
    token = getattr(request.state, "token_grants", None)
    if token is None or request.state.needs.allows(token, None):
        return
    if body.action == "delete" and not ADMIN.allows(token, None):
        raise Forbidden(
            f"token '{token.name}' may not do this: a bulk delete needs admin, as a single one does"
        )
    if body.ids is not None:
        await check_jobs_scope(request, body.ids)
    if body.queue is not None:
        check_form_scope(request, body.queue)
    elif body.ids is None:
        for name in await touched_queues(await _ledger(request).opened(), body):
            check_form_scope(request, name)


def _wait(request: Request) -> float:
    return wait_seconds(request) if "wait" in request.query_params else WAIT


async def _follow(request: Request, body: BulkRequest, progress: Progress) -> Response:
    """Run the operation in the background; answer when it ends, or after the wait, with 202."""
    runs: BulkRuns = request.state.parts.bulk_runs
    task = runs.start(await _ledger(request).opened(), body, progress)
    done, _ = await asyncio.wait({task}, timeout=_wait(request))
    if task in done:
        return JSONResponse(task.result().answer())
    headers = {"location": f"/bulk/{progress.operation}"}
    return JSONResponse(progress.answer(), status_code=202, headers=headers)


async def bulk(request: Request) -> Response:
    body = await read_model(request, BulkRequest)
    await _check_scopes(request, body)
    if body.dry_run:
        counted = await run(await _ledger(request).opened(), body, Progress(None))
        return JSONResponse(counted.answer())
    operation = await _ledger(request).run(bulk_start(body))
    return await _follow(request, body, Progress(operation))


async def _record(request: Request) -> tuple[str, dict[str, str]]:
    operation = request.path_params["operation"]
    return operation, await recorded(_ledger(request), operation)


async def recorded(ledger: OpeningLedger, operation: str) -> dict[str, str]:
    """The operation's record (404 when there is none)."""
    found = await ledger.read(bulk_reads.record(operation))
    if found is None or "action" not in found:
        raise NotFound(f"no bulk operation {operation}")
    return found


def _recorded_request(found: dict[str, str]) -> BulkRequest:
    """The operation's request as its start recorded it (checked then: not again)."""
    return BulkRequest.model_construct(**json.loads(found["spec"]))


async def resume(request: Request) -> Response:
    """Run a started operation again, under its own id: the jobs it has not reached yet."""
    operation, found = await _record(request)
    body = _recorded_request(found)
    await _check_scopes(request, body)
    if "finished_at" in found:
        raise Conflict(f"bulk operation {operation} has finished")
    runs: BulkRuns = request.state.parts.bulk_runs
    if operation in runs.running:
        raise Conflict(f"bulk operation {operation} is running")
    return await _follow(request, body, Progress(operation))


def _filter_view(spec: dict[str, Any]) -> dict[str, Any]:
    view = {k: v for k, v in spec.items() if k != "action"}
    for name in ("since", "until"):
        if name in view:
            view[name] = format_time(int(view[name]))
    return view


def operation_view(operation: str, found: dict[str, str], runs: BulkRuns) -> dict[str, Any]:
    """An operation as ``GET /bulk/{operation}`` shows it: its action and filter, when it started
    and finished, the jobs it has done in every run, how many its finishing run matched, and
    whether this server runs it now."""
    started, finished = int(found["started_at"]), found.get("finished_at")
    return {
        "operation": operation,
        "action": found["action"],
        "filter": _filter_view(json.loads(found["spec"])),
        "started_at": format_time(started),
        "finished_at": format_time(int(finished)) if finished else None,
        "done": int(found.get("done", 0)),
        "matched": int(found["matched"]) if "matched" in found else None,
        "running": operation in runs.running,
    }


async def get_bulk(request: Request) -> Response:
    """An operation's record and progress (:func:`operation_view`)."""
    operation, found = await _record(request)
    return JSONResponse(operation_view(operation, found, request.state.parts.bulk_runs))

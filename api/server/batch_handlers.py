"""Handler of ``PATCH /jobs``: many jobs' updates in one request, and a worker's next fetch with them.

A worker over HTTP finishes jobs one by one, and each ``PATCH /job/{id}`` is a request, a script
call and an answer.  This route takes the updates that are ready together, as a worker over Redis
sends them (one ``update_jobs`` call), and optionally the fetch of the jobs that take the freed
places (one ``update_and_fetch`` call): at concurrency 1 a job then costs one request.

The body is ``{"updates": [{"id": N, ...a PATCH /job/{id} body...}, ...], "fetch": {"queue",
"count", "worker", "fields"}}``; either part may be left out, not both.  It is checked whole before
anything runs: a body that is not valid, or a token that may not work on one of the jobs' queues (or
on the fetch's), is a 400 or 403 and nothing is appended.  Then each update is applied and checked on
its own, exactly as its ``PATCH /job/{id}`` would be (the same script), and refused on its own: the
answer is 200 with ``{"updates": [{"id", "status"}, ...]}`` in order, ``status`` the one its single
PATCH would have answered (204, or 404 / 409 with an ``error``), and, with a fetch, ``"jobs"``: the
jobs started, as ``GET /queue/{q}/job?count=N`` lists them, or ``"fetch_error": {"status",
"error"}`` when the fetch was refused (no such queue): the updates stand.  A fetch here never
waits: a worker whose batch started nothing long-polls ``GET /queue/{q}/job?wait=``.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator
from starlette.requests import Request
from starlette.responses import Response

from jobledger.ledger import commands
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobUpdate, QueueName, WorkerId
from jobledger.server.auth import check_form_scope, check_jobs_scope, remember_jobs
from jobledger.server.inputs import read_model
from jobledger.server.queue_handlers import MAX_FETCH, FetchField, fetched_json

#: The most updates one request may carry.
MAX_UPDATES = 1000


class JobPatch(JobUpdate):
    """One update of the batch: the job's id and what its ``PATCH /job/{id}`` body would say."""

    id: Annotated[StrictInt, Field(ge=1)]


class BatchFetch(BaseModel):
    """The fetch that goes with the updates: as ``GET /queue/{queue}/job?count=&worker=&fields=``."""

    model_config = ConfigDict(extra="forbid")

    queue: QueueName
    count: Annotated[StrictInt, Field(ge=1, le=MAX_FETCH)] = 1
    worker: WorkerId | None = None
    fields: list[FetchField] = []


class JobBatch(BaseModel):
    """The body of ``PATCH /jobs``."""

    model_config = ConfigDict(extra="forbid")

    updates: Annotated[list[JobPatch], Field(max_length=MAX_UPDATES)] = []
    fetch: BatchFetch | None = None

    @model_validator(mode="after")
    def _something(self) -> JobBatch:
        if not self.updates and self.fetch is None:
            raise ValueError("give updates, a fetch, or both")
        return self


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


async def update_jobs(request: Request) -> Response:
    batch = await read_model(request, JobBatch)
    updates = [(u.id, u) for u in batch.updates]
    await check_jobs_scope(request, [job_id for job_id, _ in updates])
    fetch = batch.fetch
    if fetch is None:
        outcomes = await _ledger(request).run(commands.update_jobs(updates))
        return _answer(updates, outcomes)
    check_form_scope(request, fetch.queue)
    call = commands.update_and_fetch(updates, fetch.queue, fetch.count, fetch.worker)
    both = await _ledger(request).run(call)  # the fetch's refusal comes back as a value
    if isinstance(both.fetched, list):
        remember_jobs(request, fetch.queue, (job.id for job in both.fetched))
    return _answer(updates, both.outcomes, both.fetched, "heartbeat_timeout" in fetch.fields)


def _answer(
    updates: list[tuple[int, JobPatch]],
    outcomes: list[int | JobLedgerError],
    started: list[commands.Fetched] | JobLedgerError | None = None,
    heartbeat_timeout: bool = False,
) -> Response:
    """The answer's JSON, written as text: a fetched job's input is JSON text already."""
    each = ",".join(_outcome(job_id, o) for (job_id, _), o in zip(updates, outcomes, strict=True))
    text = f'{{"updates":[{each}]'
    if isinstance(started, JobLedgerError):
        text += f',"fetch_error":{_refusal(started)}'
    elif started is not None:
        text += f',"jobs":[{",".join(fetched_json(j, heartbeat_timeout) for j in started)}]'
    return Response(text + "}", media_type="application/json")


def _outcome(job_id: int, outcome: int | JobLedgerError) -> str:
    if isinstance(outcome, JobLedgerError):
        return _json({"id": job_id, "status": outcome.status, "error": outcome.message})
    return f'{{"id":{job_id},"status":204}}'


def _refusal(refused: JobLedgerError) -> str:
    return _json({"status": refused.status, "error": refused.message})


def _json(value: dict[str, object]) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

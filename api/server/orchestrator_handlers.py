"""The job-orchestrator's own routes, so that its clients move over unchanged.

``POST /upload``: ``multipart/form-data`` with file parts (each named by its filename) and text
fields, ``user_id`` (an integer) and ``service`` among them.  The job goes to the queue named by
``service`` (which must exist: "Invalid service" otherwise), with ``quota_key`` the user id and
``input`` the text fields (``user_id`` as a number).  The files stream into the store within the
service queue's ``max_file_size`` / ``max_job_bytes`` (413), and only once the token's ``produce``
scope on that queue is checked (403): files sent before the ``service`` field wait in a private
spool until then (:mod:`jobledger.server.upload_form`).  201 ``{"id", "status": "Queued",
"message", "user_id", "service"}``.

``GET /download/{id}``: while the job has not completed, 200 with its state
``{"id", "status", "message"}``; once it has, the zip of its results
(:func:`jobledger.server.result_handlers.zip_response`).  The states, from jobledger's statuses:

=============  ==========
jobledger      orchestrator
=============  ==========
queued         Queued
scheduled      Queued
running        Submitted
completed      Completed (the zip)
failed         Failed
timed_out      Failed
cancelled      Killed
=============  ==========

Errors are answered in the orchestrator's shape, ``{"id": 0, "status": "Unknown", "message"}``,
with jobledger's ``error`` beside ``message``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from jobledger.ledger import commands
from jobledger.ledger.errors import BadRequest, JobLedgerError, NotFound
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobOptions
from jobledger.server.inputs import idempotency, traceparent, valid_job_id
from jobledger.server.result_handlers import job_results, zip_response
from jobledger.server.upload_form import MAX_FIELDS, UploadForm
from jobledger.server.upload_handlers import parts_of

#: jobledger's job statuses as the orchestrator's states
STATES = {
    "queued": "Queued",
    "scheduled": "Queued",
    "running": "Submitted",
    "completed": "Completed",
    "failed": "Failed",
    "timed_out": "Failed",
    "cancelled": "Killed",
}


def status_body(status_code: int, job: int, state: str, message: str, **extra: Any) -> JSONResponse:
    body = {"id": job, "status": state, "message": message, **extra}
    if status_code >= 400:
        body["error"] = message
    return JSONResponse(body, status_code=status_code)


async def upload(request: Request) -> Response:
    try:
        return await _upload(request)
    except JobLedgerError as exc:
        return status_body(exc.status, 0, "Unknown", exc.message)


async def _upload(request: Request) -> Response:
    form = UploadForm(request)
    try:
        async for part in parts_of(request, MAX_FIELDS).parts():
            if part.filename is None:
                await form.field(part)
            else:
                await form.file(part)
    except ClientDisconnect:
        raise BadRequest("the upload was cut off; nothing was created") from None
    finally:
        await form.close()
    fields = form.fields
    if "user_id" not in fields:
        raise BadRequest("Missing user_id field")
    try:
        user_id = int(fields["user_id"].strip())
    except ValueError:
        raise BadRequest("Invalid user_id, should be a number") from None
    service, files = form.service, form.files
    if service is None or files is None:
        raise BadRequest("Missing service field")
    job_input = {**fields, "user_id": user_id}
    options = JobOptions(input=job_input, quota_key=str(user_id)).with_files(files.refs)
    canonical = {"input": job_input, "files": [ref.model_dump() for ref in files.refs]}
    key = idempotency(request, service, canonical)
    ledger: OpeningLedger = request.state.ledger
    made = await ledger.run(
        commands.create_job(service, options, idempotency=key, traceparent=traceparent(request))
    )
    return status_body(201, made.id, "Queued", "Job successfully uploaded", user_id=user_id, service=service)


async def download(request: Request) -> Response:
    raw = request.path_params["job_id"]
    job = valid_job_id(raw)
    ledger: OpeningLedger = request.state.ledger
    try:
        if job is None:
            raise NotFound(raw)
        status, results = await job_results(ledger, job)
    except NotFound:
        return status_body(404, 0, "Unknown", f"Job {raw} not found in the database")
    if status != "completed":
        return status_body(200, job, STATES.get(status, "Unknown"), f"job {job} is {status}")
    try:
        return await zip_response(request, results, f"job-{job}-results.zip", f"job {job}")
    except NotFound as exc:
        return status_body(500, job, "Unknown", exc.message)

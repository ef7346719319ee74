"""Files going in over HTTP: ``PUT /blob``, the ``multipart/form-data`` body of
``POST /queue/{queue}/job``, and the files a JSON job body names by SHA-256.

``PUT /blob``: the raw body is streamed into the blob store; ``?sha256=HEX``, ``Repr-Digest`` or
``Content-Digest`` (``sha-256=:BASE64:``) say what it must hash to (400 when it does not, nothing
kept).  ``?queue=Q`` applies that queue's ``max_file_size`` (404 for no such queue, before the body
is read) and, with auth on, needs ``produce`` on it; the blob is then held for Q
(:mod:`jobledger.blobs.holders`): a token that may read Q may name it in a job.  Without ``?queue``
the limit is a queue's default ``max_file_size`` and, with auth on, only an admin token may upload:
every other token's scopes are queues'.  201 ``{"sha256", "size"}``, whether or not the store held
those bytes already (another answer would tell a tenant what others have stored).

The multipart create: the queue's settings are read first (404 before anything is stored), then
the parts as they stream in.  A part without a filename named ``job`` is the job's JSON body (at
most one; absent: empty options).  Every other part is a file: named by its filename, or by its
form-field name when it sends no filename; its Content-Type is the file's media type
(``application/octet-stream`` when it sends none).  The job is created once the body has ended
and every file is stored, the files the ``job`` part names by SHA-256 included.

A file named by SHA-256 (in a JSON body or the ``job`` part) must be one the request may name
(:mod:`jobledger.server.blob_access`); else it is answered as a blob the store does not hold.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from jobledger.blobs.holders import remember_upload
from jobledger.contract.files import MAX_FILES, sha256_of_digest, valid_sha256
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.keys import valid_queue_name
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.projections import readers
from jobledger.server.blob_access import name_check
from jobledger.server.blob_responses import blob_store, etag
from jobledger.server.file_uploads import JobFiles, stored
from jobledger.server.inputs import TooLarge, parse_json, parse_model
from jobledger.server.multipart_stream import MultipartStream, Part, boundary_of


async def queue_settings(request: Request, queue: str) -> QueueSettings:
    """The queue's settings (404 when there is no such queue)."""
    ledger: OpeningLedger = request.state.ledger
    return await ledger.read(readers.queue(queue))


def expected_digest(request: Request) -> str | None:
    """The SHA-256 the request says its body hashes to: ``?sha256=``, ``Repr-Digest`` or
    ``Content-Digest``; 400 when one is not a SHA-256 or two differ."""
    said: dict[str, str] = {}
    raw = request.query_params.get("sha256")
    if raw is not None:
        if not valid_sha256(raw.lower()):
            raise BadRequest(f"sha256 must be 64 hex digits, not {raw[:80]!r}")
        said["?sha256"] = raw.lower()
    for header in ("repr-digest", "content-digest"):
        value = request.headers.get(header)
        if value is None:
            continue
        try:
            digest = sha256_of_digest(value)
        except ValueError as exc:
            raise BadRequest(f"{header}: {exc}") from None
        if digest is not None:
            said[header] = digest
    if len(set(said.values())) > 1:
        raise BadRequest(f"{' and '.join(said)} name different SHA-256s")
    return next(iter(said.values()), None)


async def put_blob(request: Request) -> Response:
    queue = request.query_params.get("queue")
    if queue is None:
        settings, whose = QueueSettings(), "the default"
    else:
        if not valid_queue_name(queue):
            raise BadRequest(f"{queue[:80]!r} is not a queue name")
        settings, whose = await queue_settings(request, queue), f"queue '{queue}''s"
    expected = expected_digest(request)
    limit = settings.max_file_size or None
    message = f"the blob is over {whose} max_file_size of {limit} bytes; nothing was stored"
    declared = request.headers.get("content-length", "")
    if limit is not None and declared.isdigit() and int(declared) > limit:
        raise TooLarge(message)
    blob = await stored(
        blob_store(request), request.stream(), limit=limit, too_large=message, expected_sha256=expected
    )
    if queue is not None:
        await remember_upload(request.state.ledger, blob.sha256, queue)
    return JSONResponse(
        {"sha256": blob.sha256, "size": blob.size}, status_code=201, headers={"etag": etag(blob.sha256)}
    )


def is_multipart(request: Request) -> bool:
    return boundary_of(request.headers.get("content-type", "")) is not None


def parts_of(request: Request, extra_parts: int = 0) -> MultipartStream:
    """The request's multipart body, as it streams in (at most a job's files, one ``job`` part and
    ``extra_parts`` form fields)."""
    boundary = boundary_of(request.headers.get("content-type", ""))
    if boundary is None:
        raise BadRequest("the body must be multipart/form-data")
    return MultipartStream(request.stream(), boundary, MAX_FILES + 1 + extra_parts)


def file_name_of(part: Part) -> str:
    return part.filename if part.filename is not None else part.name


async def job_from_form(request: Request, queue: str, settings: QueueSettings) -> tuple[JobOptions, Any]:
    """The job a multipart body describes, its files stored (see the module); with the body in
    its canonical form for the Idempotency-Key's hash: the ``job`` part with the files' refs."""
    files = JobFiles(blob_store(request), queue, settings)
    options, body = JobOptions(), None
    try:
        async for part in parts_of(request).parts():
            if part.filename is None and part.name == "job":
                if body is not None:
                    raise BadRequest("the body has two parts named 'job'")
                raw = await part.read(request.app.state.max_body_size)
                body = parse_json(raw, {}, "the 'job' part")
                if not isinstance(body, dict):
                    raise BadRequest(f"the 'job' part must be a JSON object, not {type(body).__name__}")
                options = parse_model(request, JobOptions, body)
                await files.name_stored(options.files or [], name_check(request))
            else:
                await files.upload(file_name_of(part), part.content_type, part.chunks())
    except ClientDisconnect:
        raise BadRequest("the upload was cut off; nothing was created") from None
    canonical = {**(body or {}), "files": [ref.model_dump() for ref in files.refs]}
    return options.with_files(files.refs), canonical


async def with_stored_files(request: Request, queue: str, jobs: list[JobOptions]) -> list[JobOptions]:
    """Each job whose body names files by SHA-256 with those files resolved from the store: size
    and media type filled, 400 naming a SHA-256 the store does not hold, 413 over a limit."""
    if not any(job.files for job in jobs):
        return jobs
    settings = await queue_settings(request, queue)
    may_name = name_check(request)
    out = []
    for job in jobs:
        if job.files:
            files = JobFiles(blob_store(request), queue, settings)
            await files.name_stored(job.files, may_name)
            job = job.with_files(files.refs)
        out.append(job)
    return out

"""The worker's side of files: a job's input files down (``GET /job/{id}/files/{name}``), its results
up (``PUT /job/{id}/results/{name}``).

A download streams the blob from the store, with its SHA-256 as the ETag and as ``Repr-Digest``, so
the worker can check what it got.  An upload streams the raw body into the store (the queue's
``max_file_size`` over it: 413; a ``Repr-Digest`` or ``Content-Digest`` it does not match: 400),
then appends ``job_result_added`` for the attempt named by ``?attempt=N`` (fenced: 409 when that
attempt no longer holds the job; a name that differs from a result the job holds only in case or
normalisation: 400).  The job is checked before the body is read, so that a stale
worker is refused at once; the check that counts is the command's.  A blob stored by an upload
refused after all (the job ended meanwhile) is referred to by nothing, and the collector removes it.
The answer is 200 with ``{name, sha256, size, media_type, attempt}``, whether the name was new or
replaced a result of the attempt before.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jobledger.blobs import BlobStore, DigestMismatch, TooLarge
from jobledger.contract.files import DEFAULT_MEDIA_TYPE, MEDIA_TYPE_PATTERN, checked_name, name_clash
from jobledger.ledger import commands
from jobledger.ledger.errors import BadRequest, Conflict, NotFound
from jobledger.ledger.files import FileRef
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.requests import QueueSettings
from jobledger.projections import readers
from jobledger.server.blob_responses import blob_response, blob_store
from jobledger.server.inputs import TooLarge as BodyTooLarge
from jobledger.server.inputs import attempt, job_id
from jobledger.server.upload_handlers import expected_digest

_MEDIA_TYPE = re.compile(MEDIA_TYPE_PATTERN)


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


def _store(request: Request) -> BlobStore:
    return blob_store(request)


def _name(request: Request) -> str:
    """The path's file name; one no file can have is refused (400)."""
    try:
        return checked_name(request.path_params["name"])
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


async def get_file(request: Request) -> Response:
    """One of the job's input files, streamed from the store."""
    # a name no file can have names none: 404
    jid, name = job_id(request), unicodedata.normalize("NFC", request.path_params["name"])
    raw = await _ledger(request).read(readers.job_field_raw(jid, "files"))
    for ref in json.loads(raw) if raw else []:
        if ref["name"] == name:
            what = f"file {name!r} of job {jid}"
            return await blob_response(request, _store(request), FileRef.model_validate(ref), what)
    raise NotFound(f"job {jid} has no file {name!r}")


async def put_result(request: Request) -> Response:
    """Store the body as the result ``name`` of the attempt running the job."""
    jid, name, acting = job_id(request), _name(request), attempt(request)
    expected, media_type = expected_digest(request), _media_type(request)
    limit = await _limit_for_running(_ledger(request), jid, acting, name)
    declared = request.headers.get("content-length", "")
    if limit and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(
            f"result {name!r} of {declared} bytes is over the queue's max_file_size of {limit}"
        )
    try:
        blob = await _store(request).put(
            request.stream(), expected_sha256=expected, limit=limit or None, what=f"result {name!r}"
        )
    except TooLarge as exc:
        raise BodyTooLarge(f"{exc} (the queue's max_file_size)") from None
    except DigestMismatch as exc:
        raise BadRequest(f"result {name!r}: {exc}") from None
    ref = FileRef(name=name, sha256=blob.sha256, size=blob.size, media_type=media_type)
    added = await _ledger(request).run(commands.add_result(jid, ref, acting))
    return JSONResponse({**ref.model_dump(), "attempt": added})


async def _limit_for_running(ledger: OpeningLedger, jid: int, acting: int | None, name: str) -> int:
    """The job's queue's ``max_file_size`` (0: none); Conflict at once when the job is not running
    or ``acting`` is not its running attempt, BadRequest when ``name`` differs from a result the
    job holds only in case or normalisation."""
    job = await ledger.read(readers.job(jid, ("queue", "status", "attempt", "results")))
    if job["status"] != "running":
        raise Conflict(f"job {jid} is {job['status']}, not running: only the attempt running it adds results")
    if acting is not None and acting != job["attempt"]:
        raise Conflict(f"attempt {acting} of job {jid} is no longer running (attempt {job['attempt']} is)")
    clash = name_clash(name, (r["name"] for r in job["results"]))
    if clash is not None:
        raise BadRequest(
            f"result {name!r} differs from the job's result {clash!r} only in case or normalisation"
        )
    try:
        settings: Any = await ledger.read(readers.queue(job["queue"]))
    except NotFound:  # the queue was deleted under its running job: its default limit
        settings = QueueSettings()
    return int(settings.max_file_size)


def _media_type(request: Request) -> str:
    value = request.headers.get("content-type", "").strip() or DEFAULT_MEDIA_TYPE
    if len(value) > 255 or not _MEDIA_TYPE.fullmatch(value):
        raise BadRequest(f"content-type {value[:100]!r} is not a media type (type/subtype)")
    return value

"""Results going out: a job's manifest, one result, and all of them as one streamed zip.

``GET /job/{id}/results``: ``{"id", "status", "results": [...]}``, each result as the job's record
holds it (the latest of each name: ``name``, ``sha256``, ``size``, ``media_type``, ``attempt``,
``at``) with the ``actor`` of its ``job_result_added`` event and its ``url``.

``GET /job/{id}/results/{name}``: the result's bytes (:mod:`jobledger.server.blob_responses`).

``GET /job/{id}/results.zip``: every result of the job, one entry each under its name, streamed as
it is read from the store (the standard library's :mod:`zipfile` writing to a sink it cannot seek,
so each entry's sizes and CRC follow its data in a data descriptor: deflate at a fast level, ZIP64
for an entry near 4 GiB or more, compressed in a thread so the event loop never waits on zlib);
nothing is built whole in memory or on disk.  Each entry's bytes are checked against its
SHA-256 as they stream: on a mismatch (a store corrupted under us) the download is cut off before
the zip's central directory, so the client holds a zip that does not open rather than a wrong file,
and the server logs the SHA-256.  A job without results answers an empty zip.  The zip can start
only when every result's blob is there: a missing one is a 404 naming it, before any byte is sent.
"""

from __future__ import annotations

import asyncio
import zipfile
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from jobledger.blobs import BlobStore
from jobledger.ledger.errors import NotFound
from jobledger.ledger.files import FileRef
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.projections import readers
from jobledger.projections.history import job_history
from jobledger.server.blob_responses import blob_response, blob_store, content_disposition, verified
from jobledger.server.inputs import job_id

#: deflate level of the zip's entries: quick, since most results are already dense
ZIP_LEVEL = 1
_REF_FIELDS = ("name", "sha256", "size", "media_type")


def _ledger(request: Request) -> OpeningLedger:
    ledger: OpeningLedger = request.state.ledger
    return ledger


async def job_results(ledger: OpeningLedger, job: int) -> tuple[str, list[dict[str, Any]]]:
    """The job's status and its results as its record holds them."""
    fields = await ledger.read(readers.job(job, ("status", "results")))
    return fields["status"], fields["results"] or []


def ref_of(result: dict[str, Any]) -> FileRef:
    return FileRef(**{k: result[k] for k in _REF_FIELDS})


async def manifest(request: Request) -> Response:
    job = job_id(request)
    ledger = _ledger(request)
    status, results = await job_results(ledger, job)
    actors = {}
    if results:
        for event in await job_history(ledger, job, request.state.parts.archive):
            if event["type"] == "job_result_added":
                data = event["data"]
                actors[(data["name"], data["sha256"], data["attempt"])] = event["actor"]
    items = [
        {**r, "actor": actors.get((r["name"], r["sha256"], r["attempt"])), "url": result_url(job, r["name"])}
        for r in results
    ]
    return JSONResponse({"id": job, "status": status, "results": items})


def result_url(job: int, name: str) -> str:
    return f"/job/{job}/results/{quote(name, safe='')}"


async def get_result(request: Request) -> Response:
    job, name = job_id(request), request.path_params["name"]
    _, results = await job_results(_ledger(request), job)
    for result in results:
        if result["name"] == name:
            return await blob_response(
                request, blob_store(request), ref_of(result), f"result {name!r} of job {job}"
            )
    raise NotFound(f"job {job} has no result named {name!r}")


async def results_zip(request: Request) -> Response:
    job = job_id(request)
    _, results = await job_results(_ledger(request), job)
    return await zip_response(request, results, f"job-{job}-results.zip", f"job {job}")


async def zip_response(request: Request, results: list[dict[str, Any]], filename: str, what: str) -> Response:
    """``results`` (as a job's record holds them) as one streamed zip (see the module), offered as
    ``filename``.  Each entry is dated when its result was added, so the same results make the
    same zip."""
    store = blob_store(request)
    entries = [(ref_of(r), datetime.fromisoformat(r["at"]).replace(tzinfo=None)) for r in results]
    for ref, _ in entries:
        if await store.stat(ref.sha256) is None:
            raise NotFound(f"{what}: the store no longer holds the blob {ref.sha256} of {ref.name!r}")
    headers = {"content-disposition": content_disposition(filename)}
    if request.method == "HEAD":
        return Response(status_code=200, media_type="application/zip", headers=headers)
    return StreamingResponse(zipped(store, entries, what), media_type="application/zip", headers=headers)


class _Sink:
    """Where the zip writer puts its bytes until the response takes them: it has no ``tell`` or
    ``seek``, so the writer streams; closing it does nothing, so a zip cut off (a client gone, a
    blob that failed its check) is simply dropped with it."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def _entry(ref: FileRef, at: datetime) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(ref.name, date_time=at.timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o100600 << 16  # a regular file, rw for its owner
    info.file_size = ref.size  # so the writer takes ZIP64 where the entry needs it
    return info


async def zipped(
    store: BlobStore, entries: list[tuple[FileRef, datetime]], what: str
) -> AsyncIterator[bytes]:
    sink = _Sink()
    archive = zipfile.ZipFile(sink, "w", compresslevel=ZIP_LEVEL)
    for ref, at in entries:
        chunks = verified(store.read(ref.sha256), ref.sha256, f"{what}, {ref.name!r} in a zip")
        with archive.open(_entry(ref, at), "w") as member:
            async for chunk in chunks:
                await asyncio.to_thread(member.write, chunk)
                if data := sink.take():
                    yield data
        yield sink.take()  # the entry's data descriptor
    archive.close()
    yield sink.take()  # the central directory

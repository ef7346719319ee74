"""Blobs sent back over HTTP: one streamed response for a job's file or result, checked as it goes.

:func:`blob_response` answers with the bytes of one :class:`~jobledger.ledger.files.FileRef`:
``ETag: "<sha256>"``, ``Repr-Digest: sha-256=:<base64 of the digest>:``, ``Content-Length``,
``Content-Type`` (the ref's media type) and ``Content-Disposition: attachment`` with the ref's
name (an ASCII fallback and the UTF-8 ``filename*``).  ``If-None-Match`` naming that ETag (or
``*``) answers 304 without reading the store; ``HEAD`` answers the headers alone.

The bytes are hashed as they stream, and the last chunk is held back until the hash is known:
bytes that do not hash to the ref's SHA-256 (a store corrupted under us) are never delivered
whole — the connection is cut before the declared length, so a client sees a broken download,
never a complete wrong file.  A blob the store no longer holds is a 404 naming its SHA-256.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from jobledger.blobs import BlobStore
from jobledger.blobs.store import Hashing
from jobledger.contract.files import repr_digest
from jobledger.ledger.errors import NotFound
from jobledger.ledger.files import FileRef

log = logging.getLogger("jobledger.api")


def etag(sha256: str) -> str:
    return f'"{sha256}"'


def content_disposition(name: str, kind: str = "attachment") -> str:
    """``attachment; filename="..."; filename*=UTF-8''...``: the name as it was, for every client."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\%' else "_" for c in name)
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def blob_headers(ref: FileRef) -> dict[str, str]:
    return {
        "etag": etag(ref.sha256),
        "repr-digest": repr_digest(ref.sha256),
        "content-length": str(ref.size),
        "content-type": ref.media_type,
        "content-disposition": content_disposition(ref.name),
        "cache-control": "private, max-age=0, must-revalidate",
    }


def not_modified(request: Request, sha256: str) -> bool:
    """Whether the request's ``If-None-Match`` names this blob (or ``*``)."""
    header = request.headers.get("if-none-match")
    if not header:
        return False
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in tags or etag(sha256) in tags


async def verified(chunks: AsyncIterator[bytes], sha256: str, what: str) -> AsyncIterator[bytes]:
    """``chunks``, the last held back until they are known to hash to ``sha256`` (see the module);
    :class:`~jobledger.blobs.store.DigestMismatch` instead of the last chunk when they do not."""
    hashing = Hashing()
    held: bytes | None = None
    async for chunk in chunks:
        hashing.update(chunk)
        if held is not None:
            yield held
        held = chunk
    try:
        hashing.check(sha256)
    except Exception:
        log.error("%s: the store's bytes do not hash to %s; the download was cut off", what, sha256)
        raise
    if held is not None:
        yield held


async def blob_response(request: Request, store: BlobStore, ref: FileRef, what: str) -> Response:
    """The response sending ``ref``'s bytes (see the module); ``what`` names it in errors and logs."""
    headers = blob_headers(ref)
    if not_modified(request, ref.sha256):
        kept = {k: headers[k] for k in ("etag", "repr-digest", "cache-control")}
        return Response(status_code=304, headers=kept)
    if await store.stat(ref.sha256) is None:
        raise NotFound(f"{what}: the store no longer holds its blob {ref.sha256}")
    if request.method == "HEAD":
        return Response(status_code=200, headers=headers)
    return StreamingResponse(verified(store.read(ref.sha256), ref.sha256, what), headers=headers)


def blob_store(request: Request) -> BlobStore:
    """The app's blob store (opened by its lifespan, beside the ledger)."""
    store: BlobStore = request.state.blobs
    return store

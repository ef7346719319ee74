"""Blobs in an object store — S3 (or S3-compatible: radosgw, MinIO, R2), GCS, Azure — through obstore.

Under the URL's prefix (``s3://bucket/prefix``) a blob is the object ``sha256/ab/<hex>``.  An upload
streams to ``staging/<uuid>`` as a multipart upload (obstore's, parts of :data:`PART` bytes, at most
:data:`PARTS_IN_FLIGHT` in flight, so a process holds a few parts, never a whole file), hashed on
the way.  Once the hash is known, and is the one expected, the staging object is copied inside the
store to its key, if that key is absent, and the staging object is deleted.  A blob is never
overwritten:

- GCS and Azure copy "if not exists" natively (obstore ``copy(..., overwrite=False)``).
- S3 has no such copy (obstore says NotSupported, unless ``copy_if_not_exists`` is configured for a
  store that honours it: R2's header, AWS's ``multipart``; radosgw ignores the header, so leave it
  unset there).  Then the store asks (HEAD) and copies when absent.  Two uploads of the same bytes
  may both find it absent and both copy; each copies bytes this process hashed to that very
  SHA-256 (the staging object holds exactly what was hashed: a put is atomic), so the second
  write can only put the same bytes in place, and a reader sees one whole object either way.
- The ETag of a multipart upload is no hash of the bytes; only our own SHA-256 names a blob.

"Touch on a dedup re-put": the local store refreshes a re-uploaded blob's mtime, so the collector's
grace counts from the latest upload.  An object's last-modified time changes only when it is
written, and rewriting the blob is what this store never does; instead a re-put of a blob already
held writes an empty marker ``touched/<hex>``, and :meth:`ObjectBlobStore.stat` and
:meth:`ObjectBlobStore.list` report the later of the blob's and its marker's times as
``Blob.modified`` — the same meaning as on local disk.  :meth:`ObjectBlobStore.delete` removes both.

An upload whose caller is cancelled (a client gone, a shutdown) fails obstore's source of bytes
rather than dropping obstore's upload, so obstore aborts the multipart upload it began.  A process
that dies mid-upload leaves a staging object (swept by :meth:`sweep_staging` once older
than the cut-off) or, in S3, an unfinished multipart upload, which no listing shows: give the bucket
a lifecycle rule that aborts incomplete multipart uploads after a day.  A single S3 copy is limited
to 5 GiB, so on S3 a blob is at most 5 GiB (``max_file_size`` defaults to 1 GiB).

``[blobs] options`` are obstore's keys for the store (``endpoint``, ``region``, ``access_key_id``,
``secret_access_key``, ``virtual_hosted_style_request``, ...) and for its HTTP client
(``allow_http``, ``timeout``, ``connect_timeout``, ...); what they leave out obstore reads from the
environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import obstore
from obstore.exceptions import AlreadyExistsError, BaseError, NotSupportedError
from obstore.store import from_url

from jobledger.blobs.named import NamedObjects
from jobledger.blobs.store import CHUNK, Blob, BlobMissing, BlobStore, Hashing
from jobledger.contract.files import valid_sha256

#: Bytes a part of a multipart upload holds.
PART = 8 * 1024 * 1024
#: Parts uploaded at once: with PART, what an upload holds in memory at most.
PARTS_IN_FLIGHT = 2

#: Seconds a cancelled upload waits for obstore to abort its multipart upload.
ABORT_WAIT = 30.0

#: ``[blobs] options`` keys that configure obstore's HTTP client rather than the store.
CLIENT_OPTIONS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_keep_alive_while_idle",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "randomize_addresses",
        "read_timeout",
        "root_certificate",
        "timeout",
        "user_agent",
    }
)
_BOOLEANS = {"true": True, "false": False}


def split_options(options: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``[blobs] options`` as obstore's store configuration and client options (``"true"`` and
    ``"false"`` as booleans for the client)."""
    config: dict[str, Any] = {}
    client: dict[str, Any] = {}
    for key, value in options.items():
        name = key.strip().lower()
        if name in CLIENT_OPTIONS:
            client[name] = _BOOLEANS.get(value.strip().lower(), value) if isinstance(value, str) else value
        else:
            config[name] = value
    return config, client


class ObjectBlobStore(BlobStore):
    def __init__(self, url: str, options: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.description = f"object store at {parts.scheme}://{parts.hostname or ''}{parts.path}"
        config, client = split_options(options or {})
        try:
            self._store = from_url(url, config=config or None, client_options=client or None)  # type: ignore[arg-type]
        except BaseError as exc:
            raise ValueError(f"[blobs] {self.description}: {str(exc).splitlines()[0]}") from None
        self._copy_if_absent = True  # until the store says it cannot

    @staticmethod
    def key(sha256: str) -> str:
        if not valid_sha256(sha256):
            raise ValueError(f"{sha256!r} is not a SHA-256")
        return f"sha256/{sha256[:2]}/{sha256}"

    async def put(
        self,
        chunks: AsyncIterable[bytes],
        *,
        expected_sha256: str | None = None,
        limit: int | None = None,
        what: str = "file",
    ) -> Blob:
        hashing = Hashing(limit, what)
        staging = f"staging/{uuid.uuid4().hex}"
        abandoned = asyncio.Event()
        upload = asyncio.ensure_future(
            obstore.put_async(
                self._store, staging, _hashed(chunks, hashing, abandoned),
                chunk_size=PART, max_concurrency=PARTS_IN_FLIGHT,
            )
        )  # fmt: skip
        try:
            try:
                await asyncio.shield(upload)
            except asyncio.CancelledError:
                # Dropping obstore's upload would leave its multipart upload unfinished in the bucket;
                # failing its source instead makes it abort the upload itself.
                abandoned.set()
                await asyncio.wait({upload}, timeout=ABORT_WAIT)
                if upload.done() and not upload.cancelled():
                    upload.exception()  # retrieved: it is the abandonment, raised on purpose
                raise
            sha256 = hashing.check(expected_sha256)
            modified = await self._place(staging, sha256)
        finally:
            with contextlib.suppress(Exception):  # what is left, the sweep removes
                await obstore.delete_async(self._store, staging)  # no error when absent
        return Blob(sha256, hashing.size, modified)

    async def _place(self, staging: str, sha256: str) -> float:
        """Copy ``staging`` to the blob's key unless held already (then touch it); the blob's time."""
        final = self.key(sha256)
        if self._copy_if_absent:
            try:
                await obstore.copy_async(self._store, staging, final, overwrite=False)
                return await self._modified(final)
            except AlreadyExistsError:
                return await self._touch(sha256)
            except NotSupportedError:
                self._copy_if_absent = False
        if await self._head(final) is not None:
            return await self._touch(sha256)
        await obstore.copy_async(self._store, staging, final)  # a racing copy writes these same bytes
        return await self._modified(final)

    async def _touch(self, sha256: str) -> float:
        marker = f"touched/{sha256}"
        await obstore.put_async(self._store, marker, b"")
        return await self._modified(marker)

    async def _head(self, key: str) -> dict[str, Any] | None:
        try:
            return dict(await obstore.head_async(self._store, key))
        except FileNotFoundError:
            return None

    async def _modified(self, key: str) -> float:
        meta = await self._head(key)
        return meta["last_modified"].timestamp() if meta is not None else 0.0

    async def read(self, sha256: str, chunk: int = CHUNK) -> AsyncIterator[bytes]:
        try:
            result = await obstore.get_async(self._store, self.key(sha256))
        except FileNotFoundError:
            raise BlobMissing(sha256) from None
        async for data in result.stream(min_chunk_size=chunk):
            yield data

    async def stat(self, sha256: str) -> Blob | None:
        meta = await self._head(self.key(sha256))
        if meta is None:
            return None
        touched = await self._modified(f"touched/{sha256}")
        return Blob(sha256, int(meta["size"]), max(meta["last_modified"].timestamp(), touched))

    async def delete(self, sha256: str) -> bool:
        key = self.key(sha256)
        held = await self._head(key) is not None
        await obstore.delete_async(self._store, key)
        await obstore.delete_async(self._store, f"touched/{sha256}")
        return held

    async def list(self) -> AsyncIterator[Blob]:
        touched: dict[str, float] = {}
        async for meta in self._listing("touched/"):
            touched[meta["path"].rsplit("/", 1)[-1]] = meta["last_modified"].timestamp()
        async for meta in self._listing("sha256/"):
            sha256 = meta["path"].rsplit("/", 1)[-1]
            if valid_sha256(sha256):
                modified = max(meta["last_modified"].timestamp(), touched.get(sha256, 0.0))
                yield Blob(sha256, int(meta["size"]), modified)

    async def _listing(self, prefix: str) -> AsyncIterator[dict[str, Any]]:
        async for batch in obstore.list(self._store, prefix, chunk_size=1000):
            for meta in batch:
                yield dict(meta)

    def named(self, prefix: str) -> NamedObjects:
        return ObjectNamedObjects(self._store, prefix, f"{self.description}/{prefix.rstrip('/')}")

    async def sweep_staging(self, older_than: float) -> int:
        stale: builtins.list[str] = [
            meta["path"]
            async for meta in self._listing("staging/")
            if meta["last_modified"].timestamp() < older_than
        ]
        for path in stale:
            await obstore.delete_async(self._store, path)
        return len(stale)


class UploadAbandoned(Exception):
    """The upload's caller was cancelled: the bytes stop here, and obstore aborts the upload."""


async def _hashed(
    chunks: AsyncIterable[bytes], hashing: Hashing, abandoned: asyncio.Event
) -> AsyncIterator[bytes]:
    """``chunks`` through ``hashing``, until they end or ``abandoned`` is set (even while the source
    is waiting for bytes that may never come): then :class:`UploadAbandoned`."""
    source = aiter(chunks)
    stop = asyncio.ensure_future(abandoned.wait())

    async def following() -> bytes:
        return await anext(source)

    try:
        while True:
            step = asyncio.ensure_future(following())
            await asyncio.wait((step, stop), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                raise UploadAbandoned("the upload was cancelled")
            try:
                chunk = step.result()
            except StopAsyncIteration:
                return
            hashing.update(chunk)
            yield chunk
    finally:
        stop.cancel()


class ObjectNamedObjects(NamedObjects):
    """Named objects under ``prefix`` of an object store (obstore's synchronous calls)."""

    def __init__(self, store: Any, prefix: str, description: str) -> None:
        self._store, self.prefix, self.description = store, prefix, description

    def write(self, name: str, data: bytes) -> None:
        obstore.put(self._store, self.prefix + name, data)

    def read(self, name: str) -> bytes | None:
        try:
            return bytes(obstore.get(self._store, self.prefix + name).bytes())
        except FileNotFoundError:
            return None

    def delete(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            obstore.delete(self._store, self.prefix + name)

    def names(self, prefix: str, after: str = "") -> builtins.list[str]:
        start = self.prefix + max(after, prefix)
        found = (
            str(meta["path"])[len(self.prefix) :]
            for batch in obstore.list(self._store, self.prefix + prefix, offset=start, chunk_size=1000)
            for meta in batch
        )
        return sorted(n for n in found if n > after)

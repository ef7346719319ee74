"""Files of jobs straight from and to a blob store, for a worker over Redis: a download checked
against the SHA-256 the ledger names, a result stored within the queue's ``max_file_size``."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

from jobledger.blobs import BlobMissing, BlobStore, TooLarge
from jobledger.client.errors import BadRequest, DigestMismatch, NotFound
from jobledger.client.models import StoredFile
from jobledger.client.transfers import CHUNK, guess_media_type
from jobledger.ledger.files import FileRef
from jobledger.worker.result_files import ResultFile


async def download(store: BlobStore, ref: StoredFile, dest: Path) -> None:
    """The blob ``ref`` names into ``dest``; :class:`DigestMismatch` when it does not hash to it."""
    sha = hashlib.sha256()
    with dest.open("wb") as out:
        try:
            async for chunk in store.read(ref.sha256):
                sha.update(chunk)
                await asyncio.to_thread(out.write, chunk)
        except BlobMissing as exc:
            raise NotFound(str(exc), 404) from None
    if sha.hexdigest() != ref.sha256:
        raise DigestMismatch(f"file {ref.name!r} hashes to sha256 {sha.hexdigest()}, not {ref.sha256}")


async def store(store: BlobStore, name: str, file: ResultFile, media_type: str | None, limit: int) -> FileRef:
    """The open ``file`` put in ``store`` (refused past ``limit`` bytes, 0: none); its reference."""
    try:
        blob = await store.put(_chunks(file), limit=limit or None, what=f"result {name!r}")
    except TooLarge as exc:
        raise BadRequest(f"{exc} (the queue's max_file_size)", 413) from None
    return FileRef(
        name=name, sha256=blob.sha256, size=blob.size, media_type=media_type or guess_media_type(name)
    )


async def _chunks(file: ResultFile) -> AsyncIterator[bytes]:
    while chunk := await asyncio.to_thread(file.read, CHUNK):
        yield chunk

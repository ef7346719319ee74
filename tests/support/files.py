"""Jobs with files for the tests of the worker's side: blobs put in a local store directly, and a job
created through the ledger naming them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jobledger.blobs import LocalBlobStore
from jobledger.contract.files import DEFAULT_MEDIA_TYPE
from jobledger.ledger import commands
from jobledger.ledger.files import FileRef
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger


async def _once(content: bytes) -> AsyncIterator[bytes]:
    yield content


def store_file(root: Path, name: str, content: bytes, media_type: str = DEFAULT_MEDIA_TYPE) -> FileRef:
    """``content`` stored in the local blob store at ``root``; its reference as ``name``."""
    blob = asyncio.run(LocalBlobStore(root).put(_once(content)))
    return FileRef(name=name, sha256=blob.sha256, size=blob.size, media_type=media_type)


def create_with_files(
    ledger: Ledger, root: Path, queue: str, files: dict[str, bytes], **options: Any
) -> tuple[int, list[FileRef]]:
    """A job on ``queue`` whose files are ``files`` (name -> bytes, stored at ``root`` first)."""
    refs = [store_file(root, name, content) for name, content in files.items()]
    created = ledger.run(commands.create_job(queue, JobOptions(**options).with_files(refs)))
    return created.id, refs


def blob_path(root: Path, sha256: str) -> Path:
    return LocalBlobStore(root).path(sha256)

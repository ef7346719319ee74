"""Helpers of the file tests: bytes put straight into a blob store (a reference to them out), and a
result added as a worker would add it (the blob stored, then ``job_result_added`` through the ledger)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from jobledger.blobs import LocalBlobStore
from jobledger.blobs.store import BlobStore
from jobledger.contract.files import DEFAULT_MEDIA_TYPE
from jobledger.ledger import commands
from jobledger.ledger.files import FileRef
from jobledger.ledger.runner import Ledger


@contextmanager
def temporary_store() -> Iterator[LocalBlobStore]:
    """A blob store in a temporary directory, removed after the block: the store of a test app
    given none, so that no test writes under the default data directory."""
    with tempfile.TemporaryDirectory(prefix="jobledger-blobs-") as root:
        yield LocalBlobStore(Path(root))


async def chunks(content: bytes) -> AsyncIterator[bytes]:
    yield content


def put_bytes(store: BlobStore, data: bytes) -> str:
    """Store ``data``; its SHA-256.  The put runs in a thread of its own, so this works where an
    event loop already runs (playwright's)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, store.put(chunks(data))).result().sha256


def stored(store: BlobStore, name: str, content: bytes, media_type: str = DEFAULT_MEDIA_TYPE) -> FileRef:
    """Put ``content`` in ``store``; a reference to it named ``name``."""
    return FileRef(name=name, sha256=put_bytes(store, content), size=len(content), media_type=media_type)


def add_result(
    ledger: Ledger, store: BlobStore, job: int, name: str, data: bytes, actor: str = "w1"
) -> FileRef:
    """A result of the running job, as ``actor`` adds it."""
    ref = stored(store, name, data, "text/plain")
    ledger.as_actor(actor).run(commands.add_result(job, ref))
    return ref

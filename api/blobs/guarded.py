"""The store as the server and the workers use it: every put and every lookup tells the collector.

A blob the collector has seen unreferenced for its whole grace is about to be deleted.  A client that
stores those very bytes again, or a job body that names them, must not lose them to that delete: the
collector could delete the blob between the server's put (or lookup) and the command that makes a
job refer to it.  :class:`GuardedStore` closes that window.  After a put and before a lookup it calls
:func:`jobledger.blobs.collector.touched`, which restarts the blob's grace (and, if a delete of it is
under way, waits for it to end); a put that then finds its blob gone is refused as unavailable, to be
sent again, rather than answered with a SHA-256 the store no longer holds.  Reads, listings and deletes
pass through: the collector itself uses the store underneath.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from jobledger.blobs.collector import touched
from jobledger.blobs.named import NamedObjects
from jobledger.blobs.store import CHUNK, Blob, BlobStore
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.runner import AsyncLedger


class GuardedStore(BlobStore):
    def __init__(self, store: BlobStore, ledger: AsyncLedger | OpeningLedger) -> None:
        self.store = store
        self.ledger = ledger
        self.description = store.description

    async def _home(self) -> AsyncLedger:
        """The ledger whose collector bookkeeping the touches go to: its home partition."""
        if isinstance(self.ledger, AsyncLedger):
            return self.ledger
        return (await self.ledger.opened()).home

    async def put(
        self,
        chunks: AsyncIterable[bytes],
        *,
        expected_sha256: str | None = None,
        limit: int | None = None,
        what: str = "file",
    ) -> Blob:
        blob = await self.store.put(chunks, expected_sha256=expected_sha256, limit=limit, what=what)
        await touched(await self._home(), blob.sha256)
        if await self.store.stat(blob.sha256) is None:
            raise Unavailable(f"{what}: blob {blob.sha256} was swept as it was stored; send it again")
        return blob

    def read(self, sha256: str, chunk: int = CHUNK) -> AsyncIterator[bytes]:
        return self.store.read(sha256, chunk)

    async def stat(self, sha256: str) -> Blob | None:
        await touched(await self._home(), sha256)
        return await self.store.stat(sha256)

    async def delete(self, sha256: str) -> bool:
        return await self.store.delete(sha256)

    def list(self) -> AsyncIterator[Blob]:
        return self.store.list()

    def named(self, prefix: str) -> NamedObjects:
        return self.store.named(prefix)

    async def sweep_staging(self, older_than: float) -> int:
        return await self.store.sweep_staging(older_than)

    async def close(self) -> None:
        await self.store.close()

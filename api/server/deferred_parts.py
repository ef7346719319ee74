"""The parts of a server's state that its start does not make: the archive its history reads, the
sealed ledger it serves proofs of, the bulk operations it runs.

Their modules load pydantic and the event models, which a start leaves to the warm-up
(:mod:`jobledger.server.warmup`); so the lifespan hands requests this holder (``request.state.parts``),
and each part is made the first time it is asked for: by the handler that needs it (whose module
has loaded the part's by then) or by the scheduler once the warm-up has loaded it.  Every part is
made on the event loop, once.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from jobledger.blobs.store import BlobStore
from jobledger.runtime.config import Config

if TYPE_CHECKING:
    from jobledger.blobs.archive import BlobArchive
    from jobledger.server.bulk_runs import BulkRuns
    from jobledger.server.sealed_ledger import ServedLogs


class DeferredParts:
    """One app's deferred parts, over its blob store ``store``.  ``seals``: this server seals the
    ledger (its scheduler runs, and it may write), so it makes the signing key when there is none."""

    def __init__(self, config: Config, store: BlobStore, seals: bool) -> None:
        self.config = config
        self.store = store
        self.seals = seals

    @cached_property
    def archive(self) -> BlobArchive:
        """The archive every server's history reads (the ledger's part of the blob store)."""
        from jobledger.blobs.archive import BlobArchive

        config = self.config
        return BlobArchive.over(self.store, config.embedded.data_dir, config.redis.key_namespace)

    @cached_property
    def sealed(self) -> ServedLogs | None:
        """The sealed logs this server serves (None: sealing is off, or no key to read them with)."""
        from jobledger.server.sealed_ledger import ServedLogs, served_seal

        seal = served_seal(self.config, create=self.seals)
        return None if seal is None else ServedLogs(seal, self.config.redis.key_namespace, self.archive)

    @cached_property
    def bulk_runs(self) -> BulkRuns:
        """The bulk operations this server runs in the background."""
        from jobledger.server.bulk_runs import BulkRuns

        return BulkRuns()

    async def close(self) -> None:
        """Stop what was made and runs (the bulk operations)."""
        if "bulk_runs" in self.__dict__:
            await self.bulk_runs.close()

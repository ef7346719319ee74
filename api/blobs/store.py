"""The blob store's one small interface: content-addressed by SHA-256, written once, streamed both ways.

A blob is stored under the SHA-256 of its bytes.  :meth:`BlobStore.put` streams an upload to a
staging name, hashing it on the way, and moves it into place under its hash once the hash is
known; a blob already there is never overwritten (the new copy is dropped).  An upload that fails
half way — cut off, over its limit, not the bytes the caller expected — leaves no blob, and its
staging is removed at once (or, after a crash, by :meth:`BlobStore.sweep_staging`).
:meth:`BlobStore.read` streams a blob back in chunks.  Nothing holds a whole blob in memory.

Which blobs are still wanted is the ledger's business (the ``blobs`` projection counts the jobs'
references), not the store's: the collector (:mod:`jobledger.blobs.collector`) asks the store for
what it holds and deletes what nothing refers to.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobledger.blobs.named import NamedObjects

#: How much a store reads or writes at a time.
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Blob:
    """A stored blob: its SHA-256 (hex), its size in bytes, and (listing, stat) when it was last
    written, in seconds since the epoch."""

    sha256: str
    size: int
    modified: float = 0.0


class BlobError(Exception):
    """A blob could not be stored or read."""


class BlobMissing(BlobError):
    """The store holds no blob of that SHA-256."""

    def __init__(self, sha256: str) -> None:
        super().__init__(f"no blob {sha256} in the store")
        self.sha256 = sha256


class TooLarge(BlobError):
    """An upload went over its limit; nothing was stored."""

    def __init__(self, limit: int, what: str = "file") -> None:
        super().__init__(f"the {what} is over its limit of {limit} bytes")
        self.limit = limit
        self.what = what


class DigestMismatch(BlobError):
    """An upload's bytes do not hash to the SHA-256 the caller said; nothing was stored."""

    def __init__(self, expected: str, actual: str) -> None:
        super().__init__(f"the bytes hash to sha256 {actual}, not the {expected} expected")
        self.expected = expected
        self.actual = actual


class Hashing:
    """Counts and hashes bytes as they pass, refusing more than ``limit`` (None: no limit)."""

    def __init__(self, limit: int | None = None, what: str = "file") -> None:
        self._sha = hashlib.sha256()
        self.size = 0
        self.limit = limit
        self.what = what

    def update(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.limit is not None and self.size > self.limit:
            raise TooLarge(self.limit, self.what)
        self._sha.update(chunk)

    def hexdigest(self) -> str:
        return self._sha.hexdigest()

    def check(self, expected: str | None) -> str:
        """The digest, which must be ``expected`` when that is given (else :class:`DigestMismatch`)."""
        actual = self.hexdigest()
        if expected is not None and actual != expected:
            raise DigestMismatch(expected, actual)
        return actual


class BlobStore(ABC):
    """Where the bytes of jobs' files and results are kept."""

    #: what the store is, for logs and errors (never a credential)
    description: str

    @abstractmethod
    async def put(
        self,
        chunks: AsyncIterable[bytes],
        *,
        expected_sha256: str | None = None,
        limit: int | None = None,
        what: str = "file",
    ) -> Blob:
        """Store the bytes ``chunks`` yields; the blob.  Raises :class:`TooLarge` past ``limit``
        bytes (reading no further), :class:`DigestMismatch` when they do not hash to
        ``expected_sha256``, and whatever ``chunks`` raises (a cut-off upload); in each case
        nothing is stored and the staging is gone."""

    @abstractmethod
    def read(self, sha256: str, chunk: int = CHUNK) -> AsyncIterator[bytes]:
        """The blob's bytes, in chunks; :class:`BlobMissing` (at the first chunk) when absent."""

    @abstractmethod
    async def stat(self, sha256: str) -> Blob | None:
        """The blob, or None when the store does not hold it."""

    @abstractmethod
    async def delete(self, sha256: str) -> bool:
        """Remove the blob; whether it was there."""

    @abstractmethod
    def list(self) -> AsyncIterator[Blob]:
        """Every blob the store holds, in no particular order."""

    @abstractmethod
    def named(self, prefix: str) -> NamedObjects:
        """Objects by name under ``prefix``, beside the blobs and out of the collector's sight
        (the archive's segments and manifest: :mod:`jobledger.blobs.archive`)."""

    @abstractmethod
    async def sweep_staging(self, older_than: float) -> int:
        """Remove staging left over from uploads that stopped before ``older_than`` (seconds since
        the epoch); how many."""

    async def close(self) -> None:  # noqa: B027 - most stores hold nothing to close
        """Release what the store holds open."""

"""Blobs on local disk: ``<root>/sha256/ab/<hex>``, staged under ``<root>/staging/``; private to
the user (directories 0700, files 0600: :mod:`jobledger.runtime.private`).

An upload is written to a fresh staging file while it is hashed, flushed to disk, then linked to
its place under its hash: a hard link fails when the name exists, so a blob is never overwritten,
and a reader never sees half a blob.  The disk work runs in a thread, a chunk at a time, so the
event loop serves other requests while a big file goes up or down.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path
from typing import BinaryIO

from jobledger.blobs.named import LocalNamedObjects, NamedObjects
from jobledger.blobs.store import CHUNK, Blob, BlobMissing, BlobStore, Hashing
from jobledger.contract.files import valid_sha256
from jobledger.runtime.private import private_dir, private_opener


class LocalBlobStore(BlobStore):
    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()
        self.description = f"local disk at {self.root}"
        self._blobs = self.root / "sha256"
        self._staging = self.root / "staging"

    def _make(self) -> None:
        """The store's directories, private (a looser one is tightened, with a warning)."""
        for directory in (self.root, self._staging, self._blobs):
            private_dir(directory)

    def path(self, sha256: str) -> Path:
        if not valid_sha256(sha256):
            raise ValueError(f"{sha256!r} is not a SHA-256")
        return self._blobs / sha256[:2] / sha256

    async def put(
        self,
        chunks: AsyncIterable[bytes],
        *,
        expected_sha256: str | None = None,
        limit: int | None = None,
        what: str = "file",
    ) -> Blob:
        await asyncio.to_thread(self._make)
        staging = self._staging / uuid.uuid4().hex
        hashing = Hashing(limit, what)
        out = await asyncio.to_thread(open, staging, "xb", opener=private_opener)
        try:
            pending: list[bytes] = []
            pending_size = 0
            async for chunk in chunks:
                hashing.update(chunk)
                pending.append(chunk)
                pending_size += len(chunk)
                if pending_size >= CHUNK:
                    await asyncio.to_thread(_write, out, pending)
                    pending, pending_size = [], 0
            await asyncio.to_thread(_write, out, pending, True)
            out.close()
            sha256 = hashing.check(expected_sha256)
            await asyncio.to_thread(self._place, staging, self.path(sha256))
        except BaseException:
            out.close()
            staging.unlink(missing_ok=True)
            raise
        return Blob(sha256, hashing.size, time.time())

    @staticmethod
    def _place(staging: Path, final: Path) -> None:
        final.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            os.link(staging, final)
        except FileExistsError:
            os.utime(final)  # already held: its bytes are these; it counts as new for the sweep's grace
        finally:
            staging.unlink(missing_ok=True)

    async def read(self, sha256: str, chunk: int = CHUNK) -> AsyncIterator[bytes]:
        try:
            f = await asyncio.to_thread(open, self.path(sha256), "rb")
        except FileNotFoundError:
            raise BlobMissing(sha256) from None
        try:
            while data := await asyncio.to_thread(f.read, chunk):
                yield data
        finally:
            f.close()

    async def stat(self, sha256: str) -> Blob | None:
        try:
            st = await asyncio.to_thread(os.stat, self.path(sha256))
        except FileNotFoundError:
            return None
        return Blob(sha256, st.st_size, st.st_mtime)

    async def delete(self, sha256: str) -> bool:
        try:
            await asyncio.to_thread(os.unlink, self.path(sha256))
        except FileNotFoundError:
            return False
        return True

    async def list(self) -> AsyncIterator[Blob]:
        for blob in await asyncio.to_thread(self._scan):
            yield blob

    def _scan(self) -> builtins.list[Blob]:
        found: builtins.list[Blob] = []
        if not self._blobs.is_dir():
            return found
        for fan in os.scandir(self._blobs):
            if not fan.is_dir():
                continue
            for entry in os.scandir(fan.path):
                if valid_sha256(entry.name):
                    st = entry.stat()
                    found.append(Blob(entry.name, st.st_size, st.st_mtime))
        return found

    def named(self, prefix: str) -> NamedObjects:
        return LocalNamedObjects(self.root / prefix.rstrip("/"))

    async def sweep_staging(self, older_than: float) -> int:
        return await asyncio.to_thread(self._sweep_staging, older_than)

    def _sweep_staging(self, older_than: float) -> int:
        removed = 0
        if not self._staging.is_dir():
            return 0
        for entry in os.scandir(self._staging):
            try:
                if entry.stat().st_mtime < older_than:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:
                continue
        return removed


def _write(out: BinaryIO, chunks: list[bytes], final: bool = False) -> None:
    for chunk in chunks:
        out.write(chunk)
    if final:
        out.flush()
        os.fsync(out.fileno())

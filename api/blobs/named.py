"""Objects under names in a part of the blob store, beside its content-addressed blobs: the archive's
segments and manifest entries (:mod:`jobledger.blobs.archive`), a sealed log's files in a bucket
(:mod:`jobledger.blobs.log_files`).

The collector never sees them: it lists only the blobs under ``sha256/``.  The calls are synchronous,
made from a thread (the archive's readers run in threads already), so that replay, verify and export
on the command line read the archive as the server does.  A name is written once with bytes that
depend on the name alone, so two writers of one name write the same bytes: a write need not be
exclusive, only whole (a reader never sees half an object) and durable when it returns.
"""

from __future__ import annotations

import os
import uuid
from abc import ABC, abstractmethod
from pathlib import Path

from jobledger.runtime.private import private_dir, private_opener


class NamedObjects(ABC):
    """Objects by name under one prefix of a store."""

    #: where they are, for records, logs and errors (never a credential)
    description: str

    @abstractmethod
    def write(self, name: str, data: bytes) -> None:
        """Store ``data`` under ``name``, whole and durable when this returns."""

    @abstractmethod
    def read(self, name: str) -> bytes | None:
        """The object's bytes, None when there is none of that name."""

    @abstractmethod
    def names(self, prefix: str, after: str = "") -> list[str]:
        """The names that begin with ``prefix`` and sort after ``after``, in sorted order."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Remove the object (absent: nothing)."""

    def local_path(self, name: str) -> Path | None:
        """A file on this machine that holds the object, when the store is a local disk."""
        return None


class LocalNamedObjects(NamedObjects):
    """Named objects as files under ``root`` (0700 directories, 0600 files: they hold events)."""

    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()
        self.description = f"local disk at {self.root}"

    def _path(self, name: str) -> Path:
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"{name!r} is not an object name")
        return self.root.joinpath(*parts)

    def write(self, name: str, data: bytes) -> None:
        final = self._path(name)
        private_dir(final.parent)
        partial = final.with_name(f".{final.name}.{uuid.uuid4().hex}.partial")
        try:
            with open(partial, "wb", opener=private_opener) as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            partial.replace(final)
        finally:
            partial.unlink(missing_ok=True)
        fd = os.open(final.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self, name: str) -> bytes | None:
        try:
            return self._path(name).read_bytes()
        except FileNotFoundError:
            return None

    def names(self, prefix: str, after: str = "") -> list[str]:
        folder, _, start = prefix.rpartition("/")
        directory = self._path(folder) if folder else self.root
        if not directory.is_dir():
            return []
        base = folder + "/" if folder else ""
        found = (
            base + entry.name
            for entry in os.scandir(directory)
            if entry.name.startswith(start) and not entry.name.startswith(".") and entry.is_file()
        )
        return sorted(n for n in found if n > after)

    def delete(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def local_path(self, name: str) -> Path | None:
        return self._path(name)

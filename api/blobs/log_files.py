"""The files of a verifiable log kept outside Redis: its tiles, its event ids, its checkpoints.

Unlike blobs, which are named by their hash, these are named by path (``tile/0/x001/234``,
``checkpoint``), and every path but the latest checkpoint's names one content forever: it is
written only if absent (:meth:`LogFiles.create`), and if present its bytes must be the ones being
written, or the log changed under something already published (:class:`Conflict`).  The latest
checkpoint is replaced whole (:meth:`LogFiles.replace`: a reader sees the old one or the new one).

They are kept beside the ledger's blobs, under ``ledger/`` (``ledger/p<N>/`` for partition N of a
split ledger), where the blob collector never looks: on local disk as files (:class:`LocalLogFiles`,
a write-once file made by a hard link, which never overwrites), in a bucket as the store's named
objects (:class:`NamedLogFiles`, so that every server reads the proofs any sealer published).  The
calls are blocking (the sealer runs them in a thread).
"""

from __future__ import annotations

import os
import shutil
import uuid
from abc import ABC, abstractmethod
from pathlib import Path
from urllib.parse import urlparse

from jobledger.blobs import OBJECT_SCHEMES, ledger_folder, namespace_part, open_store
from jobledger.blobs.named import NamedObjects
from jobledger.runtime.config import BlobsConfig
from jobledger.runtime.private import fsync_dir, private_dir, private_opener


class Conflict(Exception):
    """A write-once file already holds other bytes than those being written."""

    def __init__(self, where: str) -> None:
        super().__init__(f"{where} already holds other bytes: the ledger changed under what was published")
        self.where = where


def checked_path(path: str) -> str:
    """``path`` when it is a log file's relative path (no empty, ``.`` or ``..`` part): ValueError
    otherwise, so that no path leaves the log's place."""
    if not path or any(p in ("", ".", "..") for p in path.split("/")):
        raise ValueError(f"not a log file's path: {path!r}")
    return path


class LogFiles(ABC):
    """Where one log's files are kept."""

    #: what the place is, for logs and errors
    description: str

    @abstractmethod
    def read(self, path: str) -> bytes | None:
        """The file's bytes, None when it is absent."""

    @abstractmethod
    def create(self, path: str, data: bytes) -> bool:
        """Write ``data`` at ``path`` if absent (whether it was written); :class:`Conflict` if the
        file holds other bytes."""

    @abstractmethod
    def replace(self, path: str, data: bytes) -> None:
        """Write ``data`` at ``path`` in one step, over what was there."""

    @abstractmethod
    def remove_tree(self, path: str) -> None:
        """Remove the directory ``path`` and all under it (absent: nothing)."""

    @abstractmethod
    def names(self, path: str) -> list[str]:
        """The names of the files directly under the directory ``path``, sorted."""


class LocalLogFiles(LogFiles):
    """A log's files on local disk, private to the user (directories 0700, files 0600)."""

    def __init__(self, root: Path) -> None:
        self.root = root.expanduser().absolute()
        self.description = f"local disk at {self.root}"

    def _path(self, path: str) -> Path:
        return self.root.joinpath(*checked_path(path).split("/"))

    def read(self, path: str) -> bytes | None:
        try:
            return self._path(path).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _staged(self, target: Path, data: bytes) -> Path:
        private_dir(target.parent)
        staging = target.parent / f".{target.name}.{uuid.uuid4().hex}"
        with open(staging, "xb", opener=private_opener) as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return staging

    def create(self, path: str, data: bytes) -> bool:
        target = self._path(path)
        if target.exists():
            return self._same(target, data, path)
        staging = self._staged(target, data)
        try:
            os.link(staging, target)  # fails when the name exists: never overwrites
        except FileExistsError:
            return self._same(target, data, path)
        finally:
            staging.unlink(missing_ok=True)
        fsync_dir(target.parent)
        return True

    @staticmethod
    def _same(target: Path, data: bytes, path: str) -> bool:
        if target.read_bytes() != data:
            raise Conflict(path)
        return False

    def replace(self, path: str, data: bytes) -> None:
        target = self._path(path)
        os.replace(self._staged(target, data), target)
        fsync_dir(target.parent)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(self._path(path), ignore_errors=True)

    def names(self, path: str) -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(self._path(path)) if e.is_file() and e.name[0] != ".")
        except (FileNotFoundError, NotADirectoryError):
            return []


class NamedLogFiles(LogFiles):
    """A log's files as named objects of the blob store (a bucket).  A write-once file is read
    first and written when absent: one sealer at a time writes a partition's log (its lease in
    Redis), and two sealers of one size write the same bytes unless the ledger changed, which the
    read catches.  An object is replaced whole, so ``replace`` is one put."""

    def __init__(self, objects: NamedObjects) -> None:
        self.objects = objects
        self.description = objects.description

    def read(self, path: str) -> bytes | None:
        return self.objects.read(checked_path(path))

    def create(self, path: str, data: bytes) -> bool:
        held = self.read(path)
        if held is not None:
            if held != data:
                raise Conflict(path)
            return False
        self.objects.write(path, data)
        return True

    def replace(self, path: str, data: bytes) -> None:
        self.objects.write(checked_path(path), data)

    def remove_tree(self, path: str) -> None:
        for name in self.objects.names(checked_path(path) + "/"):
            self.objects.delete(name)

    def names(self, path: str) -> list[str]:
        folder = checked_path(path) + "/"
        found = (name[len(folder) :] for name in self.objects.names(folder))
        return sorted(name for name in found if "/" not in name and not name.startswith("."))


def log_part(partition: int | None) -> str:
    """The log's directory under the ledger's place: ``ledger``, or ``ledger/p<N>`` for partition N
    (as the archive's, :mod:`jobledger.blobs.archive`)."""
    return ledger_folder("ledger", partition)


def open_log_files(config: BlobsConfig, data_dir: Path, namespace: str, partition: int | None) -> LogFiles:
    """The files of the log of ``namespace`` (partition ``partition`` of a split ledger, else None),
    beside the ledger's blobs (see :func:`jobledger.blobs.open_store`): files on local disk, or
    named objects of the bucket the blobs are in."""
    url = config.url.strip()
    scheme = urlparse(url).scheme
    if scheme in OBJECT_SCHEMES:
        return NamedLogFiles(open_store(config, data_dir, namespace).named(log_part(partition)))
    if scheme == "file":
        base = Path(urlparse(url).path)
    elif not url or scheme:
        base = data_dir / "blobs"
    else:
        base = Path(url)
    return LocalLogFiles(base / namespace_part(namespace) / log_part(partition))

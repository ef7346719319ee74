"""A result read from a job's directory, which the job's command may still be tampering with.

:func:`open_result` opens it without following a symlink (at the file, and at every directory
between the job's directory and it) and without blocking (a FIFO or a device would hang the
worker), keeps it only if it is a regular file, and reads at most the size it had when it was
opened, so that a file still growing is not read without end and its hash and its body agree.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path


class ResultRefused(Exception):
    """A result cannot be stored: the job fails with this message (kind ``result_upload``)."""


class ResultFile(io.RawIOBase):
    """A result opened for reading: its first :attr:`size` bytes, whatever is written to it after."""

    def __init__(self, fd: int, size: int) -> None:
        self._file = os.fdopen(fd, "rb", buffering=0)
        self.size = size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        left = self.size - self._file.tell()
        view = memoryview(buffer)[: max(0, left)]
        return self._file.readinto(view) or 0

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_END:
            return self._file.seek(self.size + offset)
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def close(self) -> None:
        self._file.close()
        super().close()


def open_result(name: str, path: Path, top: Path | None) -> ResultFile:
    """The result ``name`` at ``path`` (beneath ``top``, the job's directory, when it is there),
    opened; :class:`ResultRefused` when it is a symlink or not a regular file."""
    if top is not None and path.is_relative_to(top):
        base, parts = top, path.relative_to(top).parts
    else:
        base, parts = path.parent, (path.name,)
    directory = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = _open(name, part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, directory)
            os.close(directory)
            directory = inner
        fd = _open(name, parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, directory)
    finally:
        os.close(directory)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ResultRefused(f"result {name!r} is not a regular file: refused")
    os.set_blocking(fd, True)
    return ResultFile(fd, info.st_size)


def _open(name: str, part: str, flags: int, directory: int) -> int:
    try:
        return os.open(part, flags, dir_fd=directory)
    except OSError as exc:
        what = "it is a symlink" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else exc.strerror
        raise ResultRefused(f"result {name!r} cannot be opened safely ({what}): refused") from None

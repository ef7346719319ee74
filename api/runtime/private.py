"""What jobledger keeps on disk is its user's alone: directories 0700, files 0600.

The data directory (the append-only file, the server's record, its log, its socket), the blob store
on local disk (its blobs and staging files) and the archive hold every job's input and result and
every event: no other local user reads them.  Directories jobledger creates are made 0700 (each
missing parent too), files 0600 (:func:`private_opener`, for ``open(..., opener=...)``).  A
directory that exists with a looser mode is tightened to 0700 with a warning (:func:`private_dir`):
its files, whatever their own modes, are then out of other users' reach.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("jobledger.files")

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An ``opener`` for :func:`open` that creates the file 0600 (an existing file keeps its mode)."""
    return os.open(path, flags | os.O_CLOEXEC, FILE_MODE)


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner reaches: created 0700 with each missing parent, or,
    existing with group or other bits, tightened to 0700 with a warning (only a warning when it is
    not ours to change).  Returns ``path``."""
    missing = []
    for part in (path, *path.parents):
        if part.exists():
            break
        missing.append(part)
    for part in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile: tightened below if need be
            os.mkdir(part, DIR_MODE)
    _tighten(path)
    return path


def _tighten(path: Path) -> None:
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{path} is not a directory")
    loose = stat.S_IMODE(st.st_mode) & 0o077
    if not loose:
        return
    if st.st_uid != os.geteuid():
        log.warning("%s is open to other users (mode %o) and not ours to tighten: "
                    "make it 0700", path, stat.S_IMODE(st.st_mode))  # fmt: skip
        return
    os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
    log.warning("%s was open to other users (mode %o): tightened to %o", path,
                stat.S_IMODE(st.st_mode), stat.S_IMODE(st.st_mode) & ~0o077)  # fmt: skip


def fsync_dir(directory: Path) -> None:
    """Flush a directory's entries to disk: a file renamed or linked into it is there after a crash."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

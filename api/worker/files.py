"""A job's files in a worker's hands: its directory, the input files downloaded into it and checked,
and the results uploaded from it before the job completes.

Each job that has files gets a fresh directory under the worker's ``files_dir`` (default: the
system's temporary directory), ``<files_dir>/jobledger-<job id>-<attempt>-<random>``; a job without
files gets one only when its handler asks for ``job.dir``.  Every input file is downloaded there and
checked against its SHA-256 before the handler runs; one that cannot be had fails the job (kind
``file_digest`` when it arrived wrong at every try, ``file_download`` otherwise) and the handler
never runs.  Results are what the handler names with ``job.add_result(path or name)``; with
``upload_written`` (what ``jobledger worker --exec`` does) also every file in the directory the
handler wrote or changed: a file there after the handler that was not, or not with the same size
and modification time, after the download.  A file in a subdirectory is a result named by its path
with ``__`` for each ``/`` (``out/a.txt`` -> ``out__a.txt``).  The results go up once the handler
has returned, one by one, fenced by the attempt, and only then is the job completed; the directory
is removed after (``keep_files`` keeps it).

The directory is the worker's user's alone (0700, its files 0600).  A name the server gives an input
file that would land outside it fails the job (kind ``file_download``).  Only regular files are
results: the walk passes over symlinks, FIFOs and the like, and a result that is not a regular file
when it is opened to be sent (:func:`jobledger.worker.result_files.open_result`: never through a
symlink, never blocking) fails the job, as do two results whose names differ only in case or
normalisation.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from jobledger.client.destinations import UnsafeName, inside
from jobledger.client.errors import ClientError, Conflict, DigestMismatch, NotFound
from jobledger.contract.files import MAX_FILES, checked_name, duplicate_name
from jobledger.worker.result_files import ResultRefused, open_result
from jobledger.worker.transports import Assignment, Failure, Transport

__all__ = ["JobFiles", "ResultRefused"]

#: How a subdirectory's ``/`` reads in the name of a result.
SUBDIR_MARK = "__"


@dataclass(frozen=True)
class Stamp:
    size: int
    mtime_ns: int


class JobFiles:
    """The directory of one job and what goes in and out of it."""

    def __init__(self, job: Assignment, base: Path | None, upload_written: bool = False) -> None:
        self.job = job
        self.base = base
        self.upload_written = upload_written
        self._dir: Path | None = None
        self._inputs: dict[str, Stamp] = {}
        self._named: dict[str, tuple[Path, str | None]] = {}

    @property
    def dir(self) -> Path:
        """The job's directory, made on first use."""
        if self._dir is None:
            base = self.base or Path(tempfile.gettempdir())
            base.mkdir(parents=True, exist_ok=True)
            self._dir = base / f"jobledger-{self.job.id}-{self.job.attempt}-{uuid.uuid4().hex[:8]}"
            self._dir.mkdir(mode=0o700)
            self._dir.chmod(0o700)  # whatever the umask
        return self._dir

    async def download(self, transport: Transport) -> Failure | None:
        """Every input file into the directory, checked; the failure of the job when one cannot be had."""
        for ref in self.job.files:
            try:
                dest = inside(self.dir, ref.name)
                await transport.download(self.job, ref, dest)
                dest.chmod(0o600)
            except DigestMismatch as exc:
                return Failure("file_digest", exc.message)
            except UnsafeName as exc:
                return Failure("file_download", exc.message)
            except ClientError as exc:
                return Failure("file_download", f"input file {ref.name!r}: {exc.message}")
            self._inputs[ref.name] = _stamp(dest)
        return None

    def add_result(self, path: str | os.PathLike[str], name: str | None, media_type: str | None) -> str:
        """Note ``path`` (relative: in the job's directory) to upload as the result ``name`` (default:
        its file name); the name."""
        where = Path(path)
        if not where.is_absolute():
            where = self.dir / where
        if where.is_symlink():
            raise ValueError(f"{where} is a symlink: a result is a regular file")
        if not where.is_file():
            raise FileNotFoundError(f"no file {where} to add as a result")
        name = checked_name(name or where.name)
        self._named[name] = (where, media_type)
        return name

    def results(self) -> dict[str, tuple[Path, str | None]]:
        """name -> (path, media type) of every result to upload: those named, then (with
        ``upload_written``) the files written or changed in the directory."""
        found = dict(self._named)
        if self.upload_written and self._dir is not None:
            for path in sorted(p for p in self._dir.rglob("*") if p.is_file() and not p.is_symlink()):
                relative = path.relative_to(self._dir).as_posix()
                if self._inputs.get(relative) == _stamp(path):
                    continue  # an input left as it came
                try:
                    name = checked_name(relative.replace("/", SUBDIR_MARK))
                except ValueError as exc:
                    raise ResultRefused(f"result {relative!r}: {exc}") from None
                found.setdefault(name, (path, None))
        if len(found) > MAX_FILES:
            raise ResultRefused(f"{len(found)} results, more than the {MAX_FILES} a job may hold")
        if clash := duplicate_name(found):
            raise ResultRefused(clash.replace("file names", "result names"))
        return found

    async def upload(self, transport: Transport) -> list[str]:
        """Upload every result, fenced by the attempt; their names.  Conflict / NotFound when the
        attempt is no longer this worker's; :class:`ResultRefused` when the server refuses one."""
        results = self.results()
        for name, (path, media_type) in results.items():
            try:
                with open_result(name, path, self._dir) as source:
                    await transport.add_result(self.job, name, source, media_type)
            except (Conflict, NotFound):
                raise
            except ClientError as exc:
                raise ResultRefused(f"result {name!r} not stored: {exc.message}") from exc
        return list(results)

    def remove(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def _stamp(path: Path) -> Stamp:
    st = path.stat()
    return Stamp(st.st_size, st.st_mtime_ns)

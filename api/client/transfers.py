"""Files to and from the server, streamed: what an upload reads and how a download is written.

An :class:`Upload` is a path (opened at each try), bytes, or a binary file object (sent from where
it stands when the upload is made, and rewound there for a retry when it can be).  Its bytes are
read a chunk at a time while the request goes out, never whole, and hashed on the way, so the
client can hold the server's answer (``{"sha256", "size"}``) to what it sent.  A
:class:`HashedFile` is hashed once before it is sent instead, so the request itself names the
digest the server must find (``Repr-Digest``): a worker's result, which the ledger records as soon
as it is stored, goes up that way.

Downloads are written to a part file while hashed (a :class:`Receive` step) and moved into place
only once the bytes hash to what the server said: once for a result or the zip of results
(:meth:`jobledger.client.steps.ClientBase._saving`), again from the start when the transfer broke
or the bytes came wrong for a job's input file, as a worker fetching it needs
(:meth:`jobledger.client.steps.ClientBase._downloading`).

The async client reads an upload's chunks in a thread (:func:`in_thread`), the same generator the
sync client reads at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import mimetypes
import os
import zipfile
from collections.abc import AsyncIterator, Generator, Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx2

from jobledger.client.errors import DigestMismatch
from jobledger.contract.files import DEFAULT_MEDIA_TYPE, repr_digest, sha256_of_digest

CHUNK = 1024 * 1024
Source = bytes | str | os.PathLike[str] | IO[bytes]


class Upload:
    """One file to send (see the module): ``name`` defaults to a path's file name."""

    def __init__(self, source: Source, name: str | None = None, media_type: str | None = None) -> None:
        self.source = source
        self._start = None
        if isinstance(source, (str, os.PathLike)):
            self.name = name or Path(source).name
        else:
            self.name = name or Path(getattr(source, "name", "") or "file").name
            if not isinstance(source, bytes) and source.seekable():
                self._start = source.tell()
        self.media_type = media_type
        self.sha256 = hashlib.sha256()
        self.size = 0

    def open(self, files: ExitStack) -> IO[bytes]:
        """The bytes to send, from their start; a file opened here is closed with ``files``."""
        self.sha256, self.size = hashlib.sha256(), 0
        if isinstance(self.source, bytes):
            return io.BytesIO(self.source)
        if isinstance(self.source, (str, os.PathLike)):
            return files.enter_context(open(self.source, "rb"))
        if self._start is not None:
            self.source.seek(self._start)
        return self.source

    def length(self, f: IO[bytes]) -> int | None:
        """How many bytes ``f`` holds from where it stands, when that can be known."""
        try:
            return os.fstat(f.fileno()).st_size - f.tell()
        except (OSError, AttributeError, io.UnsupportedOperation):
            pass
        if f.seekable():
            here = f.tell()
            end = f.seek(0, os.SEEK_END)
            f.seek(here)
            return end - here
        return None

    def _counted(self, chunk: bytes) -> bytes:
        self.sha256.update(chunk)
        self.size += len(chunk)
        return chunk

    def chunks(self, f: IO[bytes]) -> Iterator[bytes]:
        while chunk := f.read(CHUNK):
            yield self._counted(chunk)

    def raw_body(self, files: ExitStack, asynchronous: bool) -> dict[str, Any]:
        """httpx2's request arguments sending the file as the whole body."""
        f = self.open(files)
        headers = {"content-type": self.media_type or "application/octet-stream"}
        size = self.length(f)
        if size is not None:
            headers["content-length"] = str(size)
        chunks = self.chunks(f)
        return {"content": in_thread(chunks) if asynchronous else chunks, "headers": headers}

    def checked(self, answer: dict[str, Any]) -> dict[str, Any]:
        """The server's ``{"sha256", "size"}``, which must be what was sent."""
        if answer.get("sha256") != self.sha256.hexdigest() or answer.get("size") != self.size:
            raise DigestMismatch(f"the server stored {answer} for {self.name!r}, which hashed to "
                                 f"{self.sha256.hexdigest()} ({self.size} bytes) here")  # fmt: skip
        return answer


def form_body(uploads: list[Upload], job: str | None, files: ExitStack) -> dict[str, Any]:
    """httpx2's request arguments of a multipart body: the ``job`` part (JSON text) and one part a
    file, named by its name; httpx2 reads each file in chunks as the request goes out."""
    parts = [(u.name, (u.name, u.open(files), u.media_type or "application/octet-stream")) for u in uploads]
    return {"files": parts, "data": {"job": job} if job is not None else None}


Files = Iterable[Source | Upload | Mapping[str, Any]] | Mapping[str, Source]


def split_files(files: Files) -> tuple[list[Upload], list[dict[str, Any]]]:
    """``files`` as the uploads to send and the stored blobs to name: a mapping of name -> source,
    or a list of sources, :class:`Upload` s (a path is named by its file name) and
    ``{"name", "sha256"}`` of blobs already stored."""
    if isinstance(files, Mapping):
        return [Upload(source, name) for name, source in files.items()], []
    uploads: list[Upload] = []
    named: list[dict[str, Any]] = []
    for f in files:
        if isinstance(f, Mapping):
            named.append(dict(f))
        else:
            uploads.append(f if isinstance(f, Upload) else Upload(f))
    return uploads, named


def check_zip(path: Path, results: list[dict[str, Any]]) -> Path:
    """The zip at ``path`` holds each of ``results`` (a manifest's), its bytes hashing to its
    SHA-256; else it is removed and :class:`DigestMismatch` raised."""
    try:
        with zipfile.ZipFile(path) as archive:
            for result in results:
                sha = hashlib.sha256()
                with archive.open(result["name"]) as member:
                    while chunk := member.read(CHUNK):
                        sha.update(chunk)
                if sha.hexdigest() != result["sha256"]:
                    raise DigestMismatch(f"{result['name']!r} in the zip does not hash to {result['sha256']}")
    except (zipfile.BadZipFile, KeyError) as exc:
        path.unlink(missing_ok=True)
        raise DigestMismatch(f"the zip of results is not whole: {exc}") from None
    except DigestMismatch:
        path.unlink(missing_ok=True)
        raise
    return path


@dataclass(frozen=True)
class HashedFile:
    """A file hashed before it is sent as a body: a path, bytes, or an open binary file read from
    where it stood."""

    source: Path | bytes | IO[bytes]
    start: int
    size: int
    sha256: str

    @classmethod
    def of(cls, source: Source) -> HashedFile:
        """Hash ``source`` (one pass, a chunk at a time) and remember where it starts."""
        if isinstance(source, bytes):
            return cls(source, 0, len(source), hashlib.sha256(source).hexdigest())
        if isinstance(source, str | os.PathLike):
            path = Path(source)
            with path.open("rb") as f:
                size, sha256 = _hash(f)
            return cls(path, 0, size, sha256)
        start = source.tell()
        size, sha256 = _hash(source)
        return cls(source, start, size, sha256)

    def headers(self, media_type: str | None, name: str) -> dict[str, str]:
        return {
            "content-length": str(self.size),
            "repr-digest": repr_digest(self.sha256),
            "content-type": media_type or guess_media_type(name),
        }

    @contextlib.contextmanager
    def _opened(self) -> Iterator[IO[bytes]]:
        if isinstance(self.source, bytes):
            yield io.BytesIO(self.source)
        elif isinstance(self.source, Path):
            with self.source.open("rb") as f:
                yield f
        else:
            self.source.seek(self.start)
            yield self.source

    def body(self, files: ExitStack, asynchronous: bool) -> dict[str, Any]:
        """httpx2's request arguments sending the file as the whole body, read from its start (the
        headers come from :meth:`headers`)."""
        chunks = self.chunks()
        return {"content": in_thread(chunks) if asynchronous else chunks}

    def chunks(self) -> Iterator[bytes]:
        with self._opened() as f:
            while chunk := f.read(CHUNK):
                yield chunk


async def in_thread(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks`` for an async client: each read in a thread, so reading a file never holds up the
    event loop; closed (its file with it) when the request is done with it."""
    try:
        while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
            yield chunk
    finally:
        if isinstance(chunks, Generator):
            chunks.close()


def _hash(f: IO[bytes]) -> tuple[int, str]:
    sha, size = hashlib.sha256(), 0
    while chunk := f.read(CHUNK):
        sha.update(chunk)
        size += len(chunk)
    return size, sha.hexdigest()


def guess_media_type(name: str) -> str:
    """The media type a file's name suggests, else ``application/octet-stream``."""
    return mimetypes.guess_type(name, strict=False)[0] or DEFAULT_MEDIA_TYPE


@dataclass(frozen=True)
class Received:
    """What a download wrote: its size and SHA-256."""

    sha256: str
    size: int


@dataclass(frozen=True)
class Receive:
    """A step: stream ``GET path`` into the file ``into`` (created anew), hashing it.  The outcome is
    ``(response, Received)``, or ``(response, None)`` for an error answer (read whole)."""

    path: str
    into: Path

    def sink(self) -> Sink:
        self.into.parent.mkdir(parents=True, exist_ok=True)
        return Sink(self.into)


class Sink:
    """Writes a download to its file (created anew) and hashes it on the way (a :class:`Receive`
    step's)."""

    def __init__(self, into: Path) -> None:
        self._file = into.open("wb")
        self._sha = hashlib.sha256()
        self._size = 0

    def write(self, chunk: bytes) -> None:
        self._sha.update(chunk)
        self._size += len(chunk)
        self._file.write(chunk)

    def close(self) -> Received:
        self._file.close()
        return Received(self._sha.hexdigest(), self._size)


def announced_sha256(headers: httpx2.Headers) -> str | None:
    """The SHA-256 the server says the body has: ``Repr-Digest``, else a SHA-256 ETag."""
    digest = headers.get("repr-digest")
    if digest:
        with contextlib.suppress(ValueError):
            found = sha256_of_digest(digest)
            if found:
                return found
    etag = headers.get("etag", "").strip().removeprefix("W/").strip('"')
    return etag if len(etag) == 64 and all(c in "0123456789abcdef" for c in etag) else None


def problem_with(received: Received, headers: httpx2.Headers) -> str | None:
    """Why the bytes received are not the file the server announced, or None when they are."""
    expected = announced_sha256(headers)
    if expected is None:
        return "the server announced no SHA-256 (Repr-Digest or ETag) to check the file against"
    if received.sha256 != expected:
        return f"received {received.size} bytes hashing to sha256 {received.sha256}, not {expected}"
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) != received.size:
        return f"received {received.size} bytes, not the {length} announced"
    return None

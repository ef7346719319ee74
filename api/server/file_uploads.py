"""Files going in: blobs streamed into the store within a queue's limits, and the files of a job
gathered (uploaded parts and blobs a body names) before the job is created.

Limits are the queue's ``max_file_size`` (each file) and ``max_job_bytes`` (all of a job's files
together, those a body names by SHA-256 included); 0 is no limit.  An upload is stored with the
smaller of what its own limit and the job's remaining bytes allow, so the store stops reading the
moment either is passed, and the 413 names the file and the limit.  Nothing is appended then.

What an upload that fails leaves: the file that failed leaves nothing (the store removes its
staging).  Files of the same request stored before it are whole blobs that no job refers to;
they are not deleted here (another upload may have stored the same bytes a moment ago, for a job
of its own), and the collector removes them after its grace period, as it removes every blob no
job refers to.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable
from dataclasses import dataclass

from starlette.requests import ClientDisconnect

from jobledger.blobs import Blob, BlobStore, DigestMismatch
from jobledger.blobs import TooLarge as StoreTooLarge
from jobledger.contract.files import (
    DEFAULT_MEDIA_TYPE,
    MAX_FILES,
    MEDIA_TYPE_PATTERN,
    checked_name,
    duplicate_name,
)
from jobledger.ledger.errors import BadRequest
from jobledger.ledger.files import FileRef, FileSpec
from jobledger.ledger.requests import QueueSettings
from jobledger.server.blob_access import NameCheck
from jobledger.server.inputs import TooLarge

_MEDIA_TYPE = re.compile(MEDIA_TYPE_PATTERN)


@dataclass(frozen=True)
class Limits:
    """A queue's limits on files, None where there is none."""

    per_file: int | None
    per_job: int | None

    @classmethod
    def of(cls, settings: QueueSettings) -> Limits:
        return cls(settings.max_file_size or None, settings.max_job_bytes or None)


def media_type_of(content_type: str | None) -> str:
    """A part's or request's Content-Type as a file's media type (400 when it cannot be one)."""
    if not content_type:
        return DEFAULT_MEDIA_TYPE
    media_type = content_type.strip()
    if len(media_type) > 255 or not _MEDIA_TYPE.fullmatch(media_type):
        raise BadRequest(f"Content-Type {content_type[:80]!r} cannot be a file's media type")
    return media_type


async def stored(
    store: BlobStore,
    chunks: AsyncIterable[bytes],
    *,
    limit: int | None,
    too_large: str,
    expected_sha256: str | None = None,
) -> Blob:
    """``chunks`` stored as one blob within ``limit`` bytes.  413 with ``too_large`` past the limit,
    400 on a digest mismatch or a cut-off upload; the store keeps nothing of a failed upload.
    Whether the store held those bytes already is not told (it would tell of other tenants' files)."""
    try:
        return await store.put(chunks, expected_sha256=expected_sha256, limit=limit)
    except StoreTooLarge:
        raise TooLarge(too_large) from None
    except DigestMismatch as exc:
        raise BadRequest(f"{exc}; nothing was stored") from None
    except ClientDisconnect:
        raise BadRequest("the upload was cut off; nothing was stored") from None


class JobFiles:
    """The files of one job being created, gathered in order against the queue's limits."""

    def __init__(self, store: BlobStore, queue: str | None, settings: QueueSettings) -> None:
        """``queue`` None: ``settings`` are a queue's defaults (the queue is not known yet)."""
        self.store = store
        self.whose = "the default" if queue is None else f"queue '{queue}''s"
        self.limits = Limits.of(settings)
        self.refs: list[FileRef] = []
        self.total = 0

    def _name(self, name: str) -> str:
        try:
            name = checked_name(name)
        except ValueError as exc:
            raise BadRequest(f"file {name[:300]!r}: {exc}") from None
        clash = duplicate_name([*(ref.name for ref in self.refs), name])
        if clash:
            raise BadRequest(clash)
        if len(self.refs) >= MAX_FILES:
            raise BadRequest(f"a job can have at most {MAX_FILES} files")
        return name

    def _over(self, name: str, size: int | None = None) -> tuple[int | None, str]:
        """The limit an upload of file ``name`` gets, and the 413 message past it; with ``size``
        (a stored blob), 413 at once when it is over."""
        file_limit, job_limit = self.limits.per_file, self.limits.per_job
        room = None if job_limit is None else job_limit - self.total
        by_job = room is not None and (file_limit is None or room < file_limit)
        if by_job:
            message = (f"file {name!r} takes the job's files over {self.whose} "
                       f"max_job_bytes of {job_limit} bytes; nothing was created")  # fmt: skip
        else:
            message = (f"file {name!r} is over {self.whose} max_file_size of "
                       f"{file_limit} bytes; nothing was created")  # fmt: skip
        limit = room if by_job else file_limit
        if size is not None and limit is not None and size > limit:
            raise TooLarge(message)
        return limit, message

    async def upload(self, name: str, content_type: str | None, chunks: AsyncIterable[bytes]) -> FileRef:
        """A file streamed into the store (a multipart part)."""
        name = self._name(name)
        media_type = media_type_of(content_type)
        limit, message = self._over(name)
        blob = await stored(self.store, chunks, limit=limit, too_large=message)
        return self._add(FileRef(name=name, sha256=blob.sha256, size=blob.size, media_type=media_type))

    async def name_stored(self, specs: list[FileSpec], may_name: NameCheck) -> None:
        """Files a job body names by SHA-256: each must be in the store and one the request may name
        (:mod:`jobledger.server.blob_access`; else the same 400 either way, naming it), its size as
        the body says (when it says), within the limits."""
        for spec in specs:
            name = self._name(spec.name)
            blob = await self.store.stat(spec.sha256) if await may_name(spec.sha256) else None
            if blob is None:
                raise BadRequest(f"file {name!r}: no blob {spec.sha256} is stored that this request "
                                 "may name (PUT /blob?queue=Q first)")  # fmt: skip
            if spec.size is not None and spec.size != blob.size:
                raise BadRequest(f"file {name!r}: blob {spec.sha256} is {blob.size} bytes, not {spec.size}")
            self._over(name, blob.size)
            media_type = spec.media_type or DEFAULT_MEDIA_TYPE
            self._add(FileRef(name=name, sha256=spec.sha256, size=blob.size, media_type=media_type))

    def _add(self, ref: FileRef) -> FileRef:
        self.refs.append(ref)
        self.total += ref.size
        return ref

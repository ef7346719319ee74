"""The form of the job-orchestrator's ``POST /upload``, read as it streams in, storing nothing before
the token's scope is checked.

The form names its queue in its ``service`` field, anywhere among the parts (often after the files).
Once ``service`` has come, the queue is checked (a queue name, the token's ``produce`` on it: 403,
the queue exists: "Invalid service") and every file goes into the store within that queue's own
limits.  A file that comes before ``service`` waits in a private spool (a temporary directory, 0700,
within a queue's default limits) and goes into the store only once the check passed: a refused
upload leaves nothing in the store, and the spool goes when the request ends, whatever its outcome.

Text fields: at most :data:`MAX_FIELDS` of them, each at most :data:`MAX_FIELD` bytes of UTF-8, all
of them together at most ``[server] max_body_size`` (they become the job's input).  ``service``
comes once.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from starlette.requests import Request

from jobledger.blobs.local import LocalBlobStore
from jobledger.ledger.errors import BadRequest, NotFound
from jobledger.ledger.keys import valid_queue_name
from jobledger.ledger.requests import QueueSettings
from jobledger.server.auth import check_form_scope
from jobledger.server.blob_responses import blob_store
from jobledger.server.file_uploads import JobFiles
from jobledger.server.multipart_stream import Part
from jobledger.server.upload_handlers import queue_settings

#: text fields of an upload: how many, and how long each
MAX_FIELDS = 100
MAX_FIELD = 64 * 1024
SERVICE = "service"


class UploadForm:
    """The fields and files of one ``POST /upload`` (see the module); :meth:`close` it."""

    def __init__(self, request: Request) -> None:
        self.request = request
        self.fields: dict[str, str] = {}
        self.files: JobFiles | None = None  # the service's, once it is checked
        self._text_left: int = request.app.state.max_body_size
        self._spool_dir: Path | None = None
        self._spooled: JobFiles | None = None

    @property
    def service(self) -> str | None:
        return self.fields.get(SERVICE)

    async def field(self, part: Part) -> None:
        """A text field; ``service`` checks the queue and stores what was spooled."""
        raw = await part.read(min(MAX_FIELD, self._text_left))
        self._text_left -= len(raw)
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            raise BadRequest(f"form field {part.name!r} is not UTF-8 text") from None
        if part.name == SERVICE and SERVICE in self.fields:
            raise BadRequest("the form names its service twice")
        self.fields[part.name] = text
        if part.name == SERVICE:
            await self._open(text)

    async def file(self, part: Part) -> None:
        """A file part: into the store once the service is checked, into the spool before."""
        assert part.filename is not None
        files = self.files or await self._spool()
        await files.upload(part.filename, part.content_type, part.chunks())

    async def _open(self, service: str) -> None:
        if not valid_queue_name(service):
            raise BadRequest("Invalid service")
        check_form_scope(self.request, service)
        try:
            settings = await queue_settings(self.request, service)
        except NotFound:
            raise BadRequest("Invalid service") from None
        self.files = JobFiles(blob_store(self.request), service, settings)
        if self._spooled is not None:
            spool = self._spooled.store
            for ref in self._spooled.refs:
                await self.files.upload(ref.name, ref.media_type, spool.read(ref.sha256))

    async def _spool(self) -> JobFiles:
        if self._spooled is None:
            self._spool_dir = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="jobledger-upload-"))
            self._spooled = JobFiles(LocalBlobStore(self._spool_dir), None, QueueSettings())
        return self._spooled

    async def close(self) -> None:
        """Remove the spool, if there is one."""
        if self._spool_dir is not None:
            await asyncio.to_thread(shutil.rmtree, self._spool_dir, True)
            self._spool_dir = None

"""The asynchronous client: the same calls as :class:`jobledger.client.sync.Client`, awaited."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx2

from jobledger.client import calls, transfers
from jobledger.client.calls import UNSET, ApiCall
from jobledger.client.errors import error_for
from jobledger.client.models import (
    Batched,
    DurationLike,
    Event,
    FetchedJob,
    Job,
    JobSpec,
    QueueSettings,
    StoredResult,
)
from jobledger.client.sse import Deadline, filter_params
from jobledger.client.steps import ClientBase, Connect, NextLine, Pause, Step, Steps, advance, next_event
from jobledger.client.transfers import CHUNK, HashedFile, Receive, Received, Source

R = TypeVar("R")
T = TypeVar("T")


class AsyncClient(ClientBase):
    """A jobledger server over HTTP, for asyncio: the methods of :class:`~jobledger.client.sync.Client`,
    awaited, with the same ``url``, ``timeout`` and ``retry``; extra keyword arguments go to
    ``httpx2.AsyncClient``."""

    _HTTP = httpx2.AsyncClient
    _http: httpx2.AsyncClient

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def send(self, call: ApiCall[R]) -> R:
        """Send one call, retrying as :attr:`retry` allows; its parsed result."""
        return await self._complete(self._sending(call))

    # Queues

    async def queues(self) -> list[str]:
        """The names of every queue."""
        return await self.send(calls.list_queues())

    async def put_queue(
        self,
        name: str,
        *,
        timeout: DurationLike | None = None,
        heartbeat_timeout: DurationLike | None = None,
        expires_after: DurationLike | None = None,
        retries: int | None = None,
        retry_delays: list[DurationLike] | None = None,
        **settings: Any,
    ) -> bool:
        """Create a queue or replace its settings (one left out takes its default); True if created."""
        given = dict(timeout=timeout, heartbeat_timeout=heartbeat_timeout, expires_after=expires_after,
                     retries=retries, retry_delays=retry_delays, **settings)  # fmt: skip
        return await self.send(calls.put_queue(name, given))

    async def queue(self, name: str) -> QueueSettings:
        """The queue's settings."""
        return await self.send(calls.get_queue(name))

    async def delete_queue(self, name: str) -> None:
        """Delete the queue and its queued jobs (running and ended jobs stay)."""
        await self.send(calls.delete_queue(name))

    async def queue_size(self, name: str) -> int:
        """How many jobs are queued."""
        return await self.send(calls.queue_size(name))

    async def pause_queue(self, name: str) -> None:
        """Pause the queue: it still takes jobs, but hands none out until resumed."""
        await self.send(calls.pause_queue(name, True))

    async def resume_queue(self, name: str) -> None:
        """Resume a paused queue."""
        await self.send(calls.pause_queue(name, False))

    async def queue_job_ids(self, name: str) -> dict[str, list[int]]:
        """The queue's job ids by status."""
        return await self.send(calls.queue_job_ids(name))

    # Jobs

    async def submit(
        self,
        queue: str,
        input: Any = None,
        *,
        idempotency_key: str | None = None,
        files: transfers.Files | None = None,
        **options: Any,
    ) -> int:
        """Create a job; its id.  ``options`` are the fields of :class:`JobSpec` (tags, timeout...).
        Sent with ``idempotency_key`` (a new one when not given), kept over every try.  ``files``:
        the job's files: paths, bytes, binary file objects and :class:`Upload` s, sent in the same
        request as multipart, each streamed; ``{"name", "sha256"}`` of blobs already stored
        (:meth:`put_blob`); or a mapping of name -> path, bytes or file object."""
        uploads, named = transfers.split_files(files or [])
        if named:
            options["files"] = named
        spec = JobSpec(input, **options)
        if not uploads:
            return await self.send(calls.create_job(queue, spec, idempotency_key))
        return await self.send(calls.create_job_with_files(queue, spec, uploads, idempotency_key))

    async def put_blob(
        self,
        source: transfers.Source | transfers.Upload,
        *,
        queue: str | None = None,
        media_type: str | None = None,
    ) -> dict[str, Any]:
        """Store one file as a blob, streamed; ``{"sha256", "size"}`` (checked against what was
        sent), for job bodies to name (``files=[{"name": ..., "sha256": ...}]``).  ``queue``: whose
        limits and produce scope apply."""
        upload = (
            source
            if isinstance(source, transfers.Upload)
            else transfers.Upload(source, media_type=media_type)
        )
        return await self.send(calls.put_blob(upload, queue))

    async def results(self, job_id: int) -> dict[str, Any]:
        """The job's results manifest: ``{"id", "status", "results": [...]}``, each result with its
        name, sha256, size, media_type, attempt, at, actor and url."""
        return await self.send(calls.results(job_id))

    async def download_result(self, job_id: int, name: str, dest: str | os.PathLike[str]) -> Path:
        """Write the result ``name`` of the job to ``dest``, streamed and checked against its
        SHA-256 as it is written (:class:`DigestMismatch`, nothing kept, when it does not match)."""
        return await self._download(calls.result_path(job_id, name), dest)

    async def download_results_zip(self, job_id: int, dest: str | os.PathLike[str]) -> Path:
        """Write every result of the job as one zip to ``dest``, streamed; each entry is then
        checked against the manifest's SHA-256 (:class:`DigestMismatch`, nothing kept)."""
        manifest = await self.results(job_id)
        path = await self._download(calls.results_zip_path(job_id), dest)
        return await asyncio.to_thread(transfers.check_zip, path, manifest["results"])

    async def submit_many(
        self, queue: str, jobs: Iterable[JobSpec | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> list[int]:
        """Create several jobs in one request; their ids, in order (each a :class:`JobSpec` or a
        dict of its fields)."""
        return await self.send(calls.create_jobs(queue, [JobSpec.of(job) for job in jobs], idempotency_key))

    async def fetch(
        self,
        queue: str,
        count: int = 1,
        worker: str | None = None,
        wait: float | None = None,
        *,
        heartbeat_timeout: bool = False,
    ) -> list[FetchedJob]:
        """Start up to ``count`` queued jobs as ``worker``; an empty list when none is queued (after
        waiting up to ``wait`` seconds for one to come, when given).  ``heartbeat_timeout``: each
        job comes with its ``heartbeat_timeout`` too (read in the same request)."""
        return await self.send(
            calls.fetch_jobs(queue, count, worker, wait, heartbeat_timeout=heartbeat_timeout)
        )

    async def update_many(
        self,
        updates: Iterable[Mapping[str, Any]],
        *,
        fetch: str | None = None,
        count: int = 1,
        worker: str | None = None,
        heartbeat_timeout: bool = False,
    ) -> Batched:
        """Update many jobs in one request (``PATCH /jobs``), each update a dict of what
        :meth:`update` takes plus the job's ``id`` (``{"id": 7, "status": "completed", "attempt":
        1}``); with ``fetch`` (a queue), start up to ``count`` of its jobs as ``worker`` in the same
        request.  Each update is refused on its own: the answer holds its error, the others go
        through (a body that is not valid raises :class:`BadRequest`, and nothing changed)."""
        return await self.send(
            calls.update_jobs(list(updates), fetch, count, worker, heartbeat_timeout=heartbeat_timeout)
        )

    async def get(self, job_id: int) -> Job:
        """The job."""
        return await self.send(calls.get_job(job_id))

    async def get_fields(self, job_id: int, *names: str) -> dict[str, Any]:
        """Only the named fields of the job."""
        return await self.send(calls.get_fields(job_id, names))

    async def update(
        self,
        job_id: int,
        status: str | None = None,
        output: Any = UNSET,
        attempt: int | None = None,
        **extra: Any,
    ) -> None:
        """Set the job's status (completed, failed, cancelled, queued) and/or output, for ``attempt``;
        ``extra``: progress, message, error (see :func:`jobledger.client.calls.update_job`)."""
        await self.send(calls.update_job(job_id, status, output, attempt, **extra))

    async def progress(
        self, job_id: int, progress: int | None = None, message: str | None = None, attempt: int | None = None
    ) -> None:
        """Report how far a running job got (0-100) and/or a short status line."""
        await self.update(job_id, attempt=attempt, progress=progress, message=message)

    async def complete(self, job_id: int, output: Any = UNSET, attempt: int | None = None) -> None:
        """Complete a running job, with its output."""
        await self.update(job_id, "completed", output, attempt)

    async def fail(
        self,
        job_id: int,
        output: Any = UNSET,
        attempt: int | None = None,
        error: dict[str, str] | str | None = None,
    ) -> None:
        """Fail a running job with an ``error`` (text or ``{"kind", "message"}``); it is retried if
        its retries allow and the error's kind is retryable (retry_on / no_retry_on)."""
        await self.update(job_id, "failed", output, attempt, error=error)

    async def cancel(self, job_id: int) -> None:
        """Cancel a job that has not ended."""
        await self.update(job_id, "cancelled")

    async def requeue(self, job_id: int) -> None:
        """Queue a cancelled, failed or timed-out job again."""
        await self.update(job_id, "queued")

    async def delete(self, job_id: int) -> None:
        """Delete the job (its history stays in the ledger)."""
        await self.send(calls.delete_job(job_id))

    async def heartbeat(self, job_id: int, attempt: int | None = None) -> None:
        """Tell the server the worker running ``attempt`` of the job is alive."""
        await self.send(calls.heartbeat(job_id, attempt))

    async def output(self, job_id: int) -> Any:
        """The job's output."""
        return await self.send(calls.get_output(job_id))

    async def set_output(self, job_id: int, output: Any, attempt: int | None = None) -> None:
        """Set a running job's output."""
        await self.send(calls.set_output(job_id, output, attempt))

    # Files

    async def download_file(self, job_id: int, name: str, dest: str | os.PathLike[str]) -> Received:
        """As :meth:`jobledger.client.sync.Client.download_file`, awaited."""
        return await self._complete(self._downloading(job_id, name, Path(dest)))

    async def add_result(self, job_id: int, name: str, source: Source, attempt: int | None = None, *,
                         media_type: str | None = None) -> StoredResult:  # fmt: skip
        """As :meth:`jobledger.client.sync.Client.add_result`, awaited (the file hashed in a thread)."""
        upload = await asyncio.to_thread(HashedFile.of, source)
        return await self.send(calls.add_result(job_id, name, upload, attempt, media_type))

    async def history(self, job_id: int) -> list[Event]:
        """Every event of the job, oldest first."""
        return await self.send(calls.history(job_id))

    async def tagged(self, tag: str) -> list[int]:
        """Ids of the jobs with ``tag``."""
        return await self.send(calls.tagged(tag))

    async def create_launcher(
        self, type: str, arguments: str | dict[str, Any], queue: str, **spec: Any
    ) -> int:
        """A launcher creating jobs on ``queue`` (see Launchers in docs/http-api.md): ``type`` ``@cron``,
        ``@interval``, ``@at`` or ``@event``; ``spec``: ``template``, ``max_pending``, ``debounce``."""
        return await self.send(calls.create_launcher(type, arguments, queue, **spec))

    async def launchers(self) -> list[dict[str, Any]]:
        """Every launcher, with its spec, ``next_at``, ``fired``, ``skipped``, ``last_job``."""
        return await self.send(calls.list_launchers())

    async def launcher(self, launcher_id: int) -> dict[str, Any]:
        return await self.send(calls.get_launcher(launcher_id))

    async def delete_launcher(self, launcher_id: int) -> None:
        """Stop and remove the launcher; the jobs it created stay."""
        await self.send(calls.delete_launcher(launcher_id))

    async def wait(self, job_id: int, timeout: float | None = None) -> Job:
        """The job once it has ended; :class:`~jobledger.client.errors.WaitTimeout` after ``timeout``
        seconds (None: no limit).  One GET first, then the event feed filtered by the job, as
        :meth:`jobledger.client.sync.Client.wait` does."""
        return await self._complete(self._waiting(job_id, timeout))

    # The ledger

    async def events(
        self,
        after: str | None = None,
        *,
        type: str | None = None,
        queue: str | None = None,
        job: int | None = None,
        actor: str | None = None,
        page_size: int = 500,
    ) -> AsyncGenerator[Event, None]:
        """Every event after the id ``after`` matching the filters, oldest first, page by page, up
        to the ledger's current end (``async for``)."""
        async for event in self._iterate(
            self._paging(after, filter_params(type, queue, job, actor), page_size)
        ):
            yield event

    async def follow(
        self,
        after: str | None = None,
        *,
        type: str | None = None,
        queue: str | None = None,
        job: int | None = None,
        actor: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The events matching the filters as they are appended, without end (``async for``);
        reconnects and resumes after the last event seen, as :meth:`jobledger.client.sync.Client.follow`."""
        async for event in self._iterate(
            self._following(after, filter_params(type, queue, job, actor), Deadline(None))
        ):
            yield event

    async def _download(self, path: str, dest: str | os.PathLike[str]) -> Path:
        """``GET path`` streamed into ``dest``, as :meth:`jobledger.client.sync.Client._download`."""
        try:
            async with self._http.stream("GET", path) as response:
                if not response.is_success:
                    await response.aread()
                    raise error_for(response.status_code, calls.error_message(response))
                out = await asyncio.to_thread(transfers.Download, dest, transfers.expected_sha256(response))
                try:
                    async for chunk in response.aiter_bytes(transfers.CHUNK):
                        await asyncio.to_thread(out.write, chunk)
                except BaseException:
                    out.abort()
                    raise
                return await asyncio.to_thread(out.finish)
        except httpx2.TransportError as exc:
            raise calls.unreachable(self.url, exc) from exc

    # Running the steps of jobledger.client.steps, as the sync client does, awaited

    async def _complete(self, work: Steps[T], stream: AsyncExitStack | None = None) -> T:
        async with AsyncExitStack() as own:
            stream = own if stream is None else stream
            try:
                step = next(work)
                while True:
                    step = advance(work, await self._do(step, stream))
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            finally:
                work.close()

    async def _iterate(self, work: Steps[Any]) -> AsyncGenerator[Event, None]:
        async with AsyncExitStack() as stream:
            try:
                while (event := await self._complete(next_event(work), stream)) is not None:
                    yield event
            finally:
                work.close()

    async def _do(self, step: Step, stream: AsyncExitStack) -> Any:
        try:
            if isinstance(step, ApiCall):
                with ExitStack() as files:  # what a streamed body opens, closed once it is sent
                    args = step.request_args(self._timeout, files, asynchronous=True)
                    return await self._http.request(step.method, step.path, **args)
            if isinstance(step, Receive):
                return await self._receive(step)
            if isinstance(step, Pause):
                return await asyncio.sleep(step.seconds)
            if isinstance(step, Connect):
                await stream.aclose()
                response = await stream.enter_async_context(self._http.stream("GET", step.path, **step.args))
                if not response.is_success:
                    await response.aread()
                return response, response.aiter_lines()
            assert isinstance(step, NextLine), step
            return await anext(step.lines, None)
        except httpx2.TransportError as exc:
            return exc  # thrown into the steps where they asked

    async def _receive(self, step: Receive) -> tuple[httpx2.Response, Received | None]:
        async with self._http.stream("GET", step.path) as response:
            if not response.is_success:
                await response.aread()
                return response, None
            sink = step.sink()
            try:
                async for chunk in response.aiter_bytes(CHUNK):
                    sink.write(chunk)
            finally:
                received = sink.close()
            return response, received

    # Server

    async def info(self) -> dict[str, Any]:
        """Per-queue counts by status, and the global statistics."""
        return await self.send(calls.info())

    async def version(self) -> str:
        """The server's version."""
        return await self.send(calls.version())

    async def health(self) -> dict[str, Any]:
        """``{"status": "healthy"}``, or ``unhealthy`` with the error."""
        return await self.send(calls.health())

"""The synchronous client: each method sends one call built in :mod:`jobledger.client.calls`."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, closing
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx2

from jobledger.client import calls
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
from jobledger.client.transfers import (
    CHUNK,
    Download,
    Files,
    HashedFile,
    Receive,
    Received,
    Source,
    Upload,
    check_zip,
    expected_sha256,
    split_files,
)

R = TypeVar("R")
T = TypeVar("T")


class Client(ClientBase):
    """A jobledger server over HTTP.

    ``url`` defaults to ``$JOBLEDGER_URL``, else ``http://127.0.0.1:8023``; ``token`` (an API token,
    sent as ``Authorization: Bearer``) to ``$JOBLEDGER_TOKEN``, else none.  Errors raise the
    :mod:`jobledger.client.errors` tree with the server's message.  Transient failures are retried as
    ``retry`` says (by default 4 tries, 0.1 s doubling to 2 s), only where resending is safe.
    Extra keyword arguments go to ``httpx2.Client`` (headers, auth, event hooks...).
    """

    _HTTP = httpx2.Client
    _http: httpx2.Client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def send(self, call: ApiCall[R]) -> R:
        """Send one call, retrying as :attr:`retry` allows; its parsed result."""
        return self._complete(self._sending(call))

    # Queues

    def queues(self) -> list[str]:
        """The names of every queue."""
        return self.send(calls.list_queues())

    def put_queue(
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
        return self.send(calls.put_queue(name, given))

    def queue(self, name: str) -> QueueSettings:
        """The queue's settings."""
        return self.send(calls.get_queue(name))

    def delete_queue(self, name: str) -> None:
        """Delete the queue and its queued jobs (running and ended jobs stay)."""
        self.send(calls.delete_queue(name))

    def queue_size(self, name: str) -> int:
        """How many jobs are queued."""
        return self.send(calls.queue_size(name))

    def pause_queue(self, name: str) -> None:
        """Pause the queue: it still takes jobs, but hands none out until resumed."""
        self.send(calls.pause_queue(name, True))

    def resume_queue(self, name: str) -> None:
        """Resume a paused queue."""
        self.send(calls.pause_queue(name, False))

    def queue_job_ids(self, name: str) -> dict[str, list[int]]:
        """The queue's job ids by status."""
        return self.send(calls.queue_job_ids(name))

    # Jobs

    def submit(
        self,
        queue: str,
        input: Any = None,
        *,
        idempotency_key: str | None = None,
        files: Files | None = None,
        **options: Any,
    ) -> int:
        """Create a job; its id.  ``options`` are the fields of :class:`JobSpec` (tags, timeout...).
        Sent with ``idempotency_key`` (a new one when not given), kept over every try.  ``files``:
        the job's files: paths, bytes, binary file objects and :class:`Upload` s, sent in the same
        request as multipart, each streamed; ``{"name", "sha256"}`` of blobs already stored
        (:meth:`put_blob`); or a mapping of name -> path, bytes or file object."""
        uploads, named = split_files(files or [])
        if named:
            options["files"] = named
        spec = JobSpec(input, **options)
        if not uploads:
            return self.send(calls.create_job(queue, spec, idempotency_key))
        return self.send(calls.create_job_with_files(queue, spec, uploads, idempotency_key))

    def put_blob(
        self, source: Source | Upload, *, queue: str | None = None, media_type: str | None = None
    ) -> dict[str, Any]:
        """Store one file as a blob, streamed; ``{"sha256", "size"}`` (checked against what was
        sent), for job bodies to name (``files=[{"name": ..., "sha256": ...}]``).  ``queue``: whose
        limits and produce scope apply."""
        upload = source if isinstance(source, Upload) else Upload(source, media_type=media_type)
        return self.send(calls.put_blob(upload, queue))

    def results(self, job_id: int) -> dict[str, Any]:
        """The job's results manifest: ``{"id", "status", "results": [...]}``, each result with its
        name, sha256, size, media_type, attempt, at, actor and url."""
        return self.send(calls.results(job_id))

    def download_result(self, job_id: int, name: str, dest: str | os.PathLike[str]) -> Path:
        """Write the result ``name`` of the job to ``dest``, streamed and checked against its
        SHA-256 as it is written (:class:`DigestMismatch`, nothing kept, when it does not match)."""
        return self._download(calls.result_path(job_id, name), dest)

    def download_results_zip(self, job_id: int, dest: str | os.PathLike[str]) -> Path:
        """Write every result of the job as one zip to ``dest``, streamed; each entry is then
        checked against the manifest's SHA-256 (:class:`DigestMismatch`, nothing kept)."""
        manifest = self.results(job_id)
        path = self._download(calls.results_zip_path(job_id), dest)
        return check_zip(path, manifest["results"])

    def submit_many(
        self, queue: str, jobs: Iterable[JobSpec | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> list[int]:
        """Create several jobs in one request; their ids, in order.  Each job is a :class:`JobSpec`
        or a dict of its fields (``{"input": ..., "priority": 5}``)."""
        return self.send(calls.create_jobs(queue, [JobSpec.of(job) for job in jobs], idempotency_key))

    def fetch(
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
        return self.send(calls.fetch_jobs(queue, count, worker, wait, heartbeat_timeout=heartbeat_timeout))

    def update_many(
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
        return self.send(
            calls.update_jobs(list(updates), fetch, count, worker, heartbeat_timeout=heartbeat_timeout)
        )

    def get(self, job_id: int) -> Job:
        """The job."""
        return self.send(calls.get_job(job_id))

    def get_fields(self, job_id: int, *names: str) -> dict[str, Any]:
        """Only the named fields of the job."""
        return self.send(calls.get_fields(job_id, names))

    def update(
        self,
        job_id: int,
        status: str | None = None,
        output: Any = UNSET,
        attempt: int | None = None,
        **extra: Any,
    ) -> None:
        """Set the job's status (completed, failed, cancelled, queued) and/or output, for ``attempt``;
        ``extra``: progress, message, error (see :func:`jobledger.client.calls.update_job`)."""
        self.send(calls.update_job(job_id, status, output, attempt, **extra))

    def progress(
        self, job_id: int, progress: int | None = None, message: str | None = None, attempt: int | None = None
    ) -> None:
        """Report how far a running job got (0-100) and/or a short status line."""
        self.update(job_id, attempt=attempt, progress=progress, message=message)

    def complete(self, job_id: int, output: Any = UNSET, attempt: int | None = None) -> None:
        """Complete a running job, with its output."""
        self.update(job_id, "completed", output, attempt)

    def fail(
        self,
        job_id: int,
        output: Any = UNSET,
        attempt: int | None = None,
        error: dict[str, str] | str | None = None,
    ) -> None:
        """Fail a running job with an ``error`` (text or ``{"kind", "message"}``); it is retried if
        its retries allow and the error's kind is retryable (retry_on / no_retry_on)."""
        self.update(job_id, "failed", output, attempt, error=error)

    def cancel(self, job_id: int) -> None:
        """Cancel a job that has not ended."""
        self.update(job_id, "cancelled")

    def requeue(self, job_id: int) -> None:
        """Queue a cancelled, failed or timed-out job again."""
        self.update(job_id, "queued")

    def delete(self, job_id: int) -> None:
        """Delete the job (its history stays in the ledger)."""
        self.send(calls.delete_job(job_id))

    def heartbeat(self, job_id: int, attempt: int | None = None) -> None:
        """Tell the server the worker running ``attempt`` of the job is alive."""
        self.send(calls.heartbeat(job_id, attempt))

    def output(self, job_id: int) -> Any:
        """The job's output."""
        return self.send(calls.get_output(job_id))

    def set_output(self, job_id: int, output: Any, attempt: int | None = None) -> None:
        """Set a running job's output."""
        self.send(calls.set_output(job_id, output, attempt))

    # Files

    def download_file(self, job_id: int, name: str, dest: str | os.PathLike[str]) -> Received:
        """Download the job's input file ``name`` to ``dest``, streamed and checked against the
        SHA-256 the server announces; a transfer that breaks or arrives wrong is tried again from the
        start as :attr:`retry` allows (then :class:`~jobledger.client.errors.DigestMismatch`).
        ``dest`` is only written once the file is right."""
        return self._complete(self._downloading(job_id, name, Path(dest)))

    def add_result(self, job_id: int, name: str, source: Source, attempt: int | None = None, *,
                   media_type: str | None = None) -> StoredResult:  # fmt: skip
        """Store ``source`` (a path, or a binary file read from where it stands) as the job's result
        ``name``, streamed, with its SHA-256 for the server to check; ``attempt`` fences it (409 once
        that attempt no longer holds the job).  ``media_type`` defaults to what the name suggests."""
        return self.send(calls.add_result(job_id, name, HashedFile.of(source), attempt, media_type))

    def history(self, job_id: int) -> list[Event]:
        """Every event of the job, oldest first."""
        return self.send(calls.history(job_id))

    def tagged(self, tag: str) -> list[int]:
        """Ids of the jobs with ``tag``."""
        return self.send(calls.tagged(tag))

    def create_launcher(self, type: str, arguments: str | dict[str, Any], queue: str, **spec: Any) -> int:
        """A launcher creating jobs on ``queue`` (see Launchers in docs/http-api.md): ``type`` ``@cron``,
        ``@interval``, ``@at`` or ``@event``; ``spec``: ``template``, ``max_pending``, ``debounce``."""
        return self.send(calls.create_launcher(type, arguments, queue, **spec))

    def launchers(self) -> list[dict[str, Any]]:
        """Every launcher, with its spec, ``next_at``, ``fired``, ``skipped``, ``last_job``."""
        return self.send(calls.list_launchers())

    def launcher(self, launcher_id: int) -> dict[str, Any]:
        return self.send(calls.get_launcher(launcher_id))

    def delete_launcher(self, launcher_id: int) -> None:
        """Stop and remove the launcher; the jobs it created stay."""
        self.send(calls.delete_launcher(launcher_id))

    def wait(self, job_id: int, timeout: float | None = None) -> Job:
        """The job once it has ended (completed, cancelled, or failed / timed out with no retry
        left); :class:`~jobledger.client.errors.WaitTimeout` after ``timeout`` seconds (None: no limit).

        One ``GET /job/{id}`` first, so a job that has already ended returns at once; then it
        follows the event feed filtered by the job, and returns the job when an event ends it.
        Each time the feed is (re)connected the job is read once more, which closes the gap
        between the first read and the feed's starting point.  A job deleted or expired meanwhile
        raises :class:`~jobledger.client.errors.NotFound`, as :meth:`get` does.
        """
        return self._complete(self._waiting(job_id, timeout))

    # The ledger

    def events(
        self,
        after: str | None = None,
        *,
        type: str | None = None,
        queue: str | None = None,
        job: int | None = None,
        actor: str | None = None,
        page_size: int = 500,
    ) -> Iterator[Event]:
        """Every event after the id ``after`` (from the first, without), oldest first, that matches
        the filters (``actor``: only the events it caused): ``GET /events`` page by page, up to the
        ledger's current end."""
        yield from self._iterate(self._paging(after, filter_params(type, queue, job, actor), page_size))

    def follow(
        self,
        after: str | None = None,
        *,
        type: str | None = None,
        queue: str | None = None,
        job: int | None = None,
        actor: str | None = None,
    ) -> Iterator[Event]:
        """The events matching the filters as they are appended, without end: after the id ``after``,
        or from the live end without.  ``GET /events/stream``; a lost connection is made again and
        resumes after the last event seen (``Last-Event-ID``), so none is missed or repeated."""
        yield from self._iterate(
            self._following(after, filter_params(type, queue, job, actor), Deadline(None))
        )

    def _download(self, path: str, dest: str | os.PathLike[str]) -> Path:
        """``GET path`` streamed into ``dest`` (:class:`~jobledger.client.transfers.Download`)."""
        try:
            with self._http.stream("GET", path) as response:
                if not response.is_success:
                    response.read()
                    raise error_for(response.status_code, calls.error_message(response))
                out = Download(dest, expected_sha256(response))
                try:
                    for chunk in response.iter_bytes(CHUNK):
                        out.write(chunk)
                except BaseException:
                    out.abort()
                    raise
                return out.finish()
        except httpx2.TransportError as exc:
            raise calls.unreachable(self.url, exc) from exc

    # Running the steps of jobledger.client.steps

    def _complete(self, work: Steps[T], stream: ExitStack | None = None) -> T:
        """Run ``work`` to its end; what it returns.  ``stream`` holds the stream it opens, if it
        is to outlive this run."""
        with ExitStack() as own, closing(work):
            stream = own if stream is None else stream
            try:
                step = next(work)
                while True:
                    step = advance(work, self._do(step, stream))
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]

    def _iterate(self, work: Steps[Any]) -> Iterator[Event]:
        """Run ``work`` to its end, handing on the events it yields."""
        with ExitStack() as stream, closing(work):
            while (event := self._complete(next_event(work), stream)) is not None:
                yield event

    def _do(self, step: Step, stream: ExitStack) -> Any:
        """The outcome of one step (see :mod:`jobledger.client.steps`), a network error included;
        ``stream`` holds the open stream."""
        try:
            if isinstance(step, ApiCall):
                with ExitStack() as files:  # what a streamed body opens, closed once it is sent
                    args = step.request_args(self._timeout, files, asynchronous=False)
                    return self._http.request(step.method, step.path, **args)
            if isinstance(step, Receive):
                return self._receive(step)
            if isinstance(step, Pause):
                return time.sleep(step.seconds)
            if isinstance(step, Connect):
                stream.close()
                response = stream.enter_context(self._http.stream("GET", step.path, **step.args))
                if not response.is_success:
                    response.read()
                return response, response.iter_lines()
            assert isinstance(step, NextLine), step
            return next(step.lines, None)
        except httpx2.TransportError as exc:
            return exc  # thrown into the steps where they asked

    def _receive(self, step: Receive) -> tuple[httpx2.Response, Received | None]:
        with self._http.stream("GET", step.path) as response:
            if not response.is_success:
                response.read()
                return response, None
            sink = step.sink()
            try:
                for chunk in response.iter_bytes(CHUNK):
                    sink.write(chunk)
            finally:
                received = sink.close()
            return response, received

    # Server

    def info(self) -> dict[str, Any]:
        """Per-queue counts by status, and the global statistics."""
        return self.send(calls.info())

    def version(self) -> str:
        """The server's version."""
        return self.send(calls.version())

    def health(self) -> dict[str, Any]:
        """``{"status": "healthy"}``, or ``unhealthy`` with the error."""
        return self.send(calls.health())

"""Every method of the sync and the async client, written once: what each call sends and returns.

Each method gives the steps of what it does (:mod:`jobledger.client.steps`); :class:`twin` and
:class:`feed` make of it a method of :class:`~jobledger.client.sync.Client`, and an awaited one of
:class:`~jobledger.client.aio.AsyncClient` (:mod:`jobledger.client.faces`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from jobledger.client import calls
from jobledger.client.calls import UNSET
from jobledger.client.faces import feed, twin
from jobledger.client.models import (
    Batched,
    DurationLike,
    Event,
    FetchedJob,
    Job,
    JobSpec,
    QueueSettings,
    StoredResult,
    Submitted,
)
from jobledger.client.sse import Deadline, filter_params
from jobledger.client.steps import ClientBase, Steps, blocking
from jobledger.client.transfers import Files, HashedFile, Received, Source, Upload, check_zip, split_files


class ClientMethods(ClientBase):
    """The public methods of both clients (see the module)."""

    # Queues

    @twin
    def queues(self) -> Steps[list[str]]:
        """The names of every queue."""
        return self._sending(calls.list_queues())

    @twin
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
    ) -> Steps[bool]:
        """Create a queue or replace its settings (one left out takes its default); True if created."""
        given = dict(timeout=timeout, heartbeat_timeout=heartbeat_timeout, expires_after=expires_after,
                     retries=retries, retry_delays=retry_delays, **settings)  # fmt: skip
        return self._sending(calls.put_queue(name, given))

    @twin
    def queue(self, name: str) -> Steps[QueueSettings]:
        """The queue's settings."""
        return self._sending(calls.get_queue(name))

    @twin
    def delete_queue(self, name: str) -> Steps[None]:
        """Delete the queue and its queued jobs (running and ended jobs stay)."""
        return self._sending(calls.delete_queue(name))

    @twin
    def queue_size(self, name: str) -> Steps[int]:
        """How many jobs are queued."""
        return self._sending(calls.queue_size(name))

    @twin
    def pause_queue(self, name: str) -> Steps[None]:
        """Pause the queue: it still takes jobs, but hands none out until resumed."""
        return self._sending(calls.pause_queue(name, True))

    @twin
    def resume_queue(self, name: str) -> Steps[None]:
        """Resume a paused queue."""
        return self._sending(calls.pause_queue(name, False))

    @twin
    def queue_job_ids(self, name: str) -> Steps[dict[str, list[int]]]:
        """The queue's job ids by status."""
        return self._sending(calls.queue_job_ids(name))

    # Jobs

    @twin
    def submit(
        self,
        queue: str,
        input: Any = None,
        *,
        idempotency_key: str | None = None,
        files: Files | None = None,
        **options: Any,
    ) -> Steps[int]:
        """Create a job; its id.  ``options`` are the fields of :class:`JobSpec` (tags, timeout...).
        Sent with ``idempotency_key`` (a new one when not given), kept over every try.  ``files``:
        the job's files: paths, bytes, binary file objects and :class:`Upload` s, sent in the same
        request as multipart, each streamed; ``{"name", "sha256"}`` of blobs already stored
        (:meth:`put_blob`); or a mapping of name -> path, bytes or file object."""
        return self._sending(_create(queue, input, idempotency_key, files, options))

    @twin
    def submit_job(
        self,
        queue: str,
        input: Any = None,
        *,
        idempotency_key: str | None = None,
        files: Files | None = None,
        **options: Any,
    ) -> Steps[Submitted]:
        """Create a job as :meth:`submit` does; its id, and whether it was created: False when a
        live job of the queue already held its unique_key (the id is then that job's)."""
        return self._sending(_create(queue, input, idempotency_key, files, options).read_as(calls.submitted))

    @twin
    def put_blob(
        self, source: Source | Upload, *, queue: str | None = None, media_type: str | None = None
    ) -> Steps[dict[str, Any]]:
        """Store one file as a blob, streamed; ``{"sha256", "size"}`` (checked against what was
        sent), for job bodies to name (``files=[{"name": ..., "sha256": ...}]``).  ``queue``: whose
        limits and produce scope apply."""
        upload = source if isinstance(source, Upload) else Upload(source, media_type=media_type)
        return self._sending(calls.put_blob(upload, queue))

    @twin
    def results(self, job_id: int) -> Steps[dict[str, Any]]:
        """The job's results manifest: ``{"id", "status", "results": [...]}``, each result with its
        name, sha256, size, media_type, attempt, at, actor and url."""
        return self._sending(calls.results(job_id))

    @twin
    def download_result(self, job_id: int, name: str, dest: str | os.PathLike[str]) -> Steps[Path]:
        """Write the result ``name`` of the job to ``dest``, streamed and checked against its
        SHA-256 as it is written (:class:`DigestMismatch`, nothing kept, when it does not match)."""
        return self._saving(calls.result_path(job_id, name), Path(dest))

    @twin
    def download_results_zip(self, job_id: int, dest: str | os.PathLike[str]) -> Steps[Path]:
        """Write every result of the job as one zip to ``dest``, streamed; each entry is then
        checked against the manifest's SHA-256 (:class:`DigestMismatch`, nothing kept)."""
        manifest = yield from self._sending(calls.results(job_id))
        path = yield from self._saving(calls.results_zip_path(job_id), Path(dest))
        return (yield from blocking(partial(check_zip, path, manifest["results"])))

    @twin
    def submit_many(
        self, queue: str, jobs: Iterable[JobSpec | Mapping[str, Any]], *, idempotency_key: str | None = None
    ) -> Steps[list[int]]:
        """Create several jobs in one request; their ids, in order.  Each job is a :class:`JobSpec`
        or a dict of its fields (``{"input": ..., "priority": 5}``)."""
        return self._sending(calls.create_jobs(queue, [JobSpec.of(job) for job in jobs], idempotency_key))

    @twin
    def fetch(
        self,
        queue: str,
        count: int = 1,
        worker: str | None = None,
        wait: float | None = None,
        *,
        heartbeat_timeout: bool = False,
    ) -> Steps[list[FetchedJob]]:
        """Start up to ``count`` queued jobs as ``worker``; an empty list when none is queued (after
        waiting up to ``wait`` seconds for one to come, when given).  ``heartbeat_timeout``: each
        job comes with its ``heartbeat_timeout`` too (read in the same request)."""
        return self._sending(
            calls.fetch_jobs(queue, count, worker, wait, heartbeat_timeout=heartbeat_timeout)
        )

    @twin
    def update_many(
        self,
        updates: Iterable[Mapping[str, Any]],
        *,
        fetch: str | None = None,
        count: int = 1,
        worker: str | None = None,
        heartbeat_timeout: bool = False,
    ) -> Steps[Batched]:
        """Update many jobs in one request (``PATCH /jobs``), each update a dict of what
        :meth:`update` takes plus the job's ``id`` (``{"id": 7, "status": "completed", "attempt":
        1}``); with ``fetch`` (a queue), start up to ``count`` of its jobs as ``worker`` in the same
        request.  Each update is refused on its own: the answer holds its error, the others go
        through (a body that is not valid raises :class:`BadRequest`, and nothing changed)."""
        return self._sending(
            calls.update_jobs(list(updates), fetch, count, worker, heartbeat_timeout=heartbeat_timeout)
        )

    @twin
    def get(self, job_id: int) -> Steps[Job]:
        """The job."""
        return self._sending(calls.get_job(job_id))

    @twin
    def get_fields(self, job_id: int, *names: str) -> Steps[dict[str, Any]]:
        """Only the named fields of the job."""
        return self._sending(calls.get_fields(job_id, names))

    @twin
    def update(
        self,
        job_id: int,
        status: str | None = None,
        output: Any = UNSET,
        attempt: int | None = None,
        **extra: Any,
    ) -> Steps[None]:
        """Set the job's status (completed, failed, cancelled, queued) and/or output, for ``attempt``;
        ``extra``: progress, message, error (see :func:`jobledger.client.calls.update_job`)."""
        return self._sending(calls.update_job(job_id, status, output, attempt, **extra))

    @twin
    def progress(
        self, job_id: int, progress: int | None = None, message: str | None = None, attempt: int | None = None
    ) -> Steps[None]:
        """Report how far a running job got (0-100) and/or a short status line."""
        return self._sending(calls.update_job(job_id, attempt=attempt, progress=progress, message=message))

    @twin
    def complete(self, job_id: int, output: Any = UNSET, attempt: int | None = None) -> Steps[None]:
        """Complete a running job, with its output."""
        return self._sending(calls.update_job(job_id, "completed", output, attempt))

    @twin
    def fail(
        self,
        job_id: int,
        output: Any = UNSET,
        attempt: int | None = None,
        error: dict[str, str] | str | None = None,
    ) -> Steps[None]:
        """Fail a running job with an ``error`` (text or ``{"kind", "message"}``); it is retried if
        its retries allow and the error's kind is retryable (retry_on / no_retry_on)."""
        return self._sending(calls.update_job(job_id, "failed", output, attempt, error=error))

    @twin
    def cancel(self, job_id: int) -> Steps[None]:
        """Cancel a job that has not ended."""
        return self._sending(calls.update_job(job_id, "cancelled"))

    @twin
    def requeue(self, job_id: int) -> Steps[None]:
        """Queue a cancelled, failed or timed-out job again."""
        return self._sending(calls.update_job(job_id, "queued"))

    @twin
    def delete(self, job_id: int) -> Steps[None]:
        """Delete the job (its history stays in the ledger)."""
        return self._sending(calls.delete_job(job_id))

    @twin
    def jobs(
        self,
        queue: str,
        status: str | None = None,
        tag: str | None = None,
        search: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
        cursor: int | None = None,
    ) -> Steps[dict[str, Any]]:
        """A page of the queue's job summaries, ``{"jobs", "next"}`` (``next`` goes back as
        ``cursor``); ``search`` finds a text in their id, tags, input, output or errors (a bounded
        scan: a page may come back short, with a ``next``)."""
        filters = {"status": status, "tag": tag, "search": search, "since": since, "until": until,
                   "limit": limit, "cursor": cursor}  # fmt: skip
        return self._sending(calls.list_jobs(queue, filters))

    @twin
    def bulk(
        self,
        action: str,
        *,
        queue: str | None = None,
        status: str | None = None,
        tag: str | None = None,
        error_kind: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        ids: list[int] | None = None,
        dry_run: bool = False,
        wait: float | None = None,
    ) -> Steps[dict[str, Any]]:
        """Requeue, cancel or delete (``action``) every job that matches all the filters given:
        ``{"operation", "matched", "done", "finished"}``.  ``dry_run`` counts and changes nothing.
        An operation still running after ``wait`` seconds (default: the server's 10) goes on in the
        server; :meth:`bulk_operation` reads its progress."""
        filters = {"queue": queue, "status": status, "tag": tag, "error_kind": error_kind, "since": since,
                   "until": until, "ids": ids, "dry_run": dry_run or None}  # fmt: skip
        return self._sending(calls.bulk(action, filters, wait))

    @twin
    def bulk_operation(self, operation: str) -> Steps[dict[str, Any]]:
        """A bulk operation: its action, filter, start and end, and the jobs it has done."""
        return self._sending(calls.bulk_operation(operation))

    @twin
    def heartbeat(self, job_id: int, attempt: int | None = None) -> Steps[None]:
        """Tell the server the worker running ``attempt`` of the job is alive."""
        return self._sending(calls.heartbeat(job_id, attempt))

    @twin
    def output(self, job_id: int) -> Steps[Any]:
        """The job's output."""
        return self._sending(calls.get_output(job_id))

    @twin
    def set_output(self, job_id: int, output: Any, attempt: int | None = None) -> Steps[None]:
        """Set a running job's output."""
        return self._sending(calls.set_output(job_id, output, attempt))

    # Files

    @twin
    def download_file(self, job_id: int, name: str, dest: str | os.PathLike[str]) -> Steps[Received]:
        """Download the job's input file ``name`` to ``dest``, streamed and checked against the
        SHA-256 the server announces; a transfer that breaks or arrives wrong is tried again from the
        start as :attr:`retry` allows (then :class:`~jobledger.client.errors.DigestMismatch`).
        ``dest`` is only written once the file is right."""
        return self._downloading(job_id, name, Path(dest))

    @twin
    def add_result(self, job_id: int, name: str, source: Source, attempt: int | None = None, *,
                   media_type: str | None = None) -> Steps[StoredResult]:  # fmt: skip
        """Store ``source`` (a path, or a binary file read from where it stands) as the job's result
        ``name``, streamed, with its SHA-256 for the server to check; ``attempt`` fences it (409 once
        that attempt no longer holds the job).  ``media_type`` defaults to what the name suggests."""
        upload = yield from blocking(partial(HashedFile.of, source))
        return (yield from self._sending(calls.add_result(job_id, name, upload, attempt, media_type)))

    @twin
    def history(self, job_id: int) -> Steps[list[Event]]:
        """Every event of the job, oldest first."""
        return self._sending(calls.history(job_id))

    @twin
    def tagged(self, tag: str) -> Steps[list[int]]:
        """Ids of the jobs with ``tag``."""
        return self._sending(calls.tagged(tag))

    @twin
    def create_launcher(
        self, type: str, arguments: str | dict[str, Any], queue: str, **spec: Any
    ) -> Steps[int]:
        """A launcher creating jobs on ``queue`` (see Launchers in docs/http-api.md): ``type`` ``@cron``,
        ``@interval``, ``@at`` or ``@event``; ``spec``: ``template``, ``max_pending``, ``debounce``."""
        return self._sending(calls.create_launcher(type, arguments, queue, **spec))

    @twin
    def launchers(self) -> Steps[list[dict[str, Any]]]:
        """Every launcher, with its spec, ``next_at``, ``fired``, ``skipped``, ``last_job``."""
        return self._sending(calls.list_launchers())

    @twin
    def put_launcher(
        self, name: str, type: str, arguments: str | dict[str, Any], queue: str, **spec: Any
    ) -> Steps[dict[str, Any]]:
        """Declare the launcher ``name``: created the first time, then given this declaration (the same
        one again changes nothing); ``spec``: ``template``, ``max_pending``, ``debounce``, ``tz``.
        ``{id, name, outcome}``, outcome ``created``, ``updated`` or ``unchanged``."""
        return self._sending(calls.put_launcher(name, type, arguments, queue, **spec))

    @twin
    def launcher(self, launcher: int | str) -> Steps[dict[str, Any]]:
        """The launcher, by its id or its name."""
        return self._sending(calls.get_launcher(launcher))

    @twin
    def delete_launcher(self, launcher: int | str) -> Steps[None]:
        """Stop and remove the launcher; the jobs it created stay."""
        return self._sending(calls.delete_launcher(launcher))

    @twin
    def pause_launcher(self, launcher: int | str) -> Steps[None]:
        """Pause the launcher: it fires no more until resumed."""
        return self._sending(calls.pause_launcher(launcher, True))

    @twin
    def resume_launcher(self, launcher: int | str) -> Steps[None]:
        """Resume the launcher: it fires again from its next firing time after now."""
        return self._sending(calls.pause_launcher(launcher, False))

    @twin
    def fire_launcher(self, launcher: int | str) -> Steps[int]:
        """Fire the launcher now, by hand; the id of the job it created."""
        return self._sending(calls.fire_launcher(launcher))

    @twin
    def wait(self, job_id: int, timeout: float | None = None) -> Steps[Job]:
        """The job once it has ended (completed, cancelled, or failed / timed out with no retry
        left); :class:`~jobledger.client.errors.WaitTimeout` after ``timeout`` seconds (None: no limit).

        One ``GET /job/{id}`` first, so a job that has already ended returns at once; then it
        follows the event feed filtered by the job, and returns the job when an event ends it.
        Each time the feed is (re)connected the job is read once more, which closes the gap
        between the first read and the feed's starting point.  A job deleted or expired meanwhile
        raises :class:`~jobledger.client.errors.NotFound`, as :meth:`get` does.
        """
        return self._waiting(job_id, timeout)

    # The ledger

    @feed
    def events(
        self,
        after: str | None = None,
        *,
        type: str | None = None,
        queue: str | None = None,
        job: int | None = None,
        actor: str | None = None,
        page_size: int = 500,
    ) -> Steps[None]:
        """Every event after the id ``after`` (from the first, without), oldest first, that matches
        the filters (``actor``: only the events it caused): ``GET /events`` page by page, up to the
        ledger's current end."""
        return self._paging(after, filter_params(type, queue, job, actor), page_size)

    @feed
    def follow(
        self,
        after: str | None = None,
        *,
        type: str | None = None,
        queue: str | None = None,
        job: int | None = None,
        actor: str | None = None,
    ) -> Steps[Event | None]:
        """The events matching the filters as they are appended, without end: after the id ``after``,
        or from the live end without.  ``GET /events/stream``; a lost connection is made again and
        resumes after the last event seen (``Last-Event-ID``), so none is missed or repeated."""
        return self._following(after, filter_params(type, queue, job, actor), Deadline(None))

    # The verifiable ledger

    @twin
    def receipt(self, job_id: int) -> Steps[dict[str, Any]]:
        """The job's receipt: its events with their inclusion proofs against the latest signed
        checkpoint, to check offline (``jobledger ledger verify-receipt``).  Conflict while some of
        its events are not sealed yet (ask again after a seal interval)."""
        return self._sending(calls.receipt(job_id))

    @twin
    def ledger_key(self) -> Steps[str]:
        """The verifier key of the ledger's checkpoints (name+id+base64)."""
        return self._sending(calls.ledger_key())

    @twin
    def ledger_checkpoint(self, partition: int | None = None) -> Steps[str]:
        """The latest signed checkpoint (a note); ``partition`` on a split ledger."""
        return self._sending(calls.ledger_checkpoint(partition))

    @twin
    def inclusion_proof(
        self, event: str, size: int | None = None, partition: int | None = None
    ) -> Steps[dict[str, Any]]:
        """``{"index", "size", "leaf", "hashes"}``: that event ``event`` is in the tree of ``size``
        leaves (default: the latest checkpoint's)."""
        return self._sending(calls.inclusion_proof(event, size, partition))

    @twin
    def consistency_proof(
        self, old: int, new: int | None = None, partition: int | None = None
    ) -> Steps[dict[str, Any]]:
        """``{"hashes"}``: that the tree of ``old`` leaves is a prefix of the tree of ``new``."""
        return self._sending(calls.consistency_proof(old, new, partition))

    # Server

    @twin
    def info(self) -> Steps[dict[str, Any]]:
        """Per-queue counts by status, and the global statistics."""
        return self._sending(calls.info())

    @twin
    def version(self) -> Steps[str]:
        """The server's version."""
        return self._sending(calls.version())

    @twin
    def health(self) -> Steps[dict[str, Any]]:
        """``{"status": "healthy"}``, or ``unhealthy`` with the error."""
        return self._sending(calls.health())


def _create(
    queue: str, input: Any, idempotency_key: str | None, files: Files | None, options: dict[str, Any]
) -> calls.ApiCall[int]:
    """The request creating one job (multipart when it streams files)."""
    uploads, named = split_files(files or [])
    if named:
        options["files"] = named
    spec = JobSpec(input, **options)
    if not uploads:
        return calls.create_job(queue, spec, idempotency_key)
    return calls.create_job_with_files(queue, spec, uploads, idempotency_key)

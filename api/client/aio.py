"""The asynchronous client: the same calls as :class:`api.client.sync.Client`, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from api.client import calls
from api.client.calls import UNSET, ApiCall, resolve_url, unreachable
from api.client.models import DurationLike, Event, FetchedJob, Job, JobSpec, QueueSettings
from api.client.policy import Retry, WaitPace

R = TypeVar("R")


class AsyncClient:
    """A jobledger server over HTTP, for asyncio: the methods of :class:`~api.client.sync.Client`, awaited.

    ``url`` defaults to ``$JOBLEDGER_URL``, else ``http://127.0.0.1:8023``.  Errors raise the
    :mod:`api.client.errors` tree with the server's message.  Transient failures are retried as
    ``retry`` says (by default 4 tries, 0.1 s doubling to 2 s), only where resending is safe.
    Extra keyword arguments go to ``httpx.AsyncClient`` (headers, auth, event hooks...).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        timeout: float = 10.0,
        retry: Retry | None = None,
        **httpx_options: Any,
    ) -> None:
        self.url = resolve_url(url)
        self.retry = retry or Retry()
        self._http = httpx.AsyncClient(base_url=self.url, timeout=timeout, **httpx_options)

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
        tried = 0
        while True:
            tried += 1
            try:
                response = await self._http.request(call.method, call.path, **call.request_args())
            except httpx.TransportError as exc:
                delay = self.retry.after_error(call, exc, tried)
                if delay is None:
                    raise unreachable(self.url, exc) from exc
            else:
                delay = self.retry.after_status(call, response.status_code, tried)
                if delay is None:
                    return call.finish(response)
            await asyncio.sleep(delay)

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

    async def queue_job_ids(self, name: str) -> dict[str, list[int]]:
        """The queue's job ids by status."""
        return await self.send(calls.queue_job_ids(name))

    # Jobs

    async def submit(self, queue: str, input: Any = None, **options: Any) -> int:
        """Create a job; its id.  ``options`` are the fields of :class:`JobSpec` (tags, timeout...)."""
        return await self.send(calls.create_job(queue, JobSpec(input, **options)))

    async def submit_many(self, queue: str, jobs: Iterable[JobSpec]) -> list[int]:
        """Create several jobs in one request; their ids, in order."""
        return await self.send(calls.create_jobs(queue, list(jobs)))

    async def fetch(
        self, queue: str, count: int = 1, worker: str | None = None, wait: float | None = None
    ) -> list[FetchedJob]:
        """Start up to ``count`` queued jobs as ``worker``; an empty list when none is queued (after
        waiting up to ``wait`` seconds for one to come, when given)."""
        return await self.send(calls.fetch_jobs(queue, count, worker, wait))

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
        ``extra``: progress, message, error (see :func:`api.client.calls.update_job`)."""
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

    async def history(self, job_id: int) -> list[Event]:
        """Every event of the job, oldest first."""
        return await self.send(calls.history(job_id))

    async def tagged(self, tag: str) -> list[int]:
        """Ids of the jobs with ``tag``."""
        return await self.send(calls.tagged(tag))

    async def wait(self, job_id: int, timeout: float | None = None) -> Job:
        """The job once it has ended (completed, cancelled, or failed / timed out with no retry
        left); :class:`~api.client.errors.WaitTimeout` after ``timeout`` seconds (None: no limit).

        Polls ``GET /job/{id}`` 50 ms apart, doubling to at most 1 s, until the server's event
        feed is available to wait on instead.
        """
        pace = WaitPace(job_id, timeout)
        while not (job := await self.get(job_id)).ended:
            await asyncio.sleep(pace.next_delay(job))
        return job

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

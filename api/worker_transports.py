"""How a :class:`api.worker.Worker` reaches the ledger: over HTTP, or straight to Redis.

Both transports run the same ledger commands (``fetch_jobs``, ``heartbeat``, ``update_job``) with the
same arguments, so a job leaves the same events whichever a worker uses.  Both name the attempt on
every update (fencing) and raise the :mod:`api.client.errors` tree, so the worker handles one kind
of error.  HTTP works from anywhere and in any deployment; Redis is the fast path for Python workers
that can reach the ledger's Redis: no HTTP hop, a batch fetch costs one script call, and the jobs
that finish while one completion is on its way are completed together by the next call
(``update_jobs``: each update checked on its own, the same events as one ``update_job`` each).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import redis
import redis.asyncio

from api.client import AsyncClient
from api.client.calls import UNSET
from api.client.errors import ServerError, error_for
from ledger import commands
from ledger.commands import Call
from ledger.durations import parse_ms
from ledger.errors import JobLedgerError
from ledger.keys import DEFAULT_NAMESPACE, Keys
from ledger.redis_clients import async_client
from ledger.requests import JobUpdate
from ledger.runner import AsyncLedger
from projections.readers import Read

T = TypeVar("T")


@dataclass(frozen=True)
class Assignment:
    """A job this worker fetched: now running as ``attempt``.  ``heartbeat_timeout`` (seconds) is
    filled in when the transport could read it together with the fetch, else None."""

    queue: str
    id: int
    attempt: int
    input: Any
    heartbeat_timeout: float | None = None


@dataclass(frozen=True)
class Failure:
    """Why a handler failed: the exception's class name (the error's kind, which decides retry by
    the job's retry_on / no_retry_on) and message, recorded in the job's errors."""

    kind: str
    message: str

    def error(self) -> dict[str, str]:
        """The ``error`` of the failing PATCH, within the server's limits."""
        return {"kind": self.kind[:100] or "error", "message": self.message[:1000]}


class Transport(Protocol):
    """What a worker needs from the ledger.  Every method raises :class:`api.client.ClientError`."""

    async def fetch(self, queue: str, count: int, worker: str) -> list[Assignment]: ...

    async def heartbeat_timeout(self, job: Assignment) -> float: ...

    async def heartbeat(self, job: Assignment) -> None: ...

    async def set_output(self, job: Assignment, output: Any) -> None: ...

    async def complete(self, job: Assignment, output: Any = UNSET) -> None: ...

    async def fail(self, job: Assignment, failure: Failure) -> None: ...

    async def close(self) -> None: ...


class HttpTransport:
    """The worker over jobledger's HTTP API, through :class:`api.client.AsyncClient`."""

    def __init__(self, url: str | None = None, client: AsyncClient | None = None) -> None:
        self.client = client or AsyncClient(url)

    async def fetch(self, queue: str, count: int, worker: str) -> list[Assignment]:
        fetched = await self.client.fetch(queue, count, worker)
        return [Assignment(queue, f.id, f.attempt, f.input) for f in fetched]

    async def heartbeat_timeout(self, job: Assignment) -> float:
        fields = await self.client.get_fields(job.id, "heartbeat_timeout")
        return parse_ms(fields["heartbeat_timeout"]) / 1000

    async def heartbeat(self, job: Assignment) -> None:
        await self.client.heartbeat(job.id, job.attempt)

    async def set_output(self, job: Assignment, output: Any) -> None:
        await self.client.set_output(job.id, output, job.attempt)

    async def complete(self, job: Assignment, output: Any = UNSET) -> None:
        await self.client.complete(job.id, output, job.attempt)

    async def fail(self, job: Assignment, failure: Failure) -> None:
        await self.client.fail(job.id, attempt=job.attempt, error=failure.error())

    async def close(self) -> None:
        await self.client.aclose()


class RedisTransport:
    """The worker straight on the ledger: the commands' scripts through :class:`AsyncLedger`."""

    def __init__(self, redis_url: str, namespace: str = DEFAULT_NAMESPACE) -> None:
        self._redis = async_client(redis_url)
        self.ledger = AsyncLedger(self._redis, namespace)
        self._finishing = GroupCommit(self.ledger)

    async def fetch(self, queue: str, count: int, worker: str) -> list[Assignment]:
        fetched = await _translated(self.ledger.run(commands.fetch_jobs(queue, count, worker)))
        if not fetched:
            return []
        timeouts = await _translated(self.ledger.read(_heartbeat_timeouts([f.id for f in fetched])))
        return [
            Assignment(queue, f.id, f.attempt, _decode(f.input_text), hb)
            for f, hb in zip(fetched, timeouts, strict=True)
        ]

    async def heartbeat_timeout(self, job: Assignment) -> float:
        (seconds,) = await _translated(self.ledger.read(_heartbeat_timeouts([job.id])))
        return seconds

    async def heartbeat(self, job: Assignment) -> None:
        await self._run(commands.heartbeat(job.id, job.attempt))

    async def set_output(self, job: Assignment, output: Any) -> None:
        await self._run(commands.set_output(job.id, output, job.attempt))

    async def complete(self, job: Assignment, output: Any = UNSET) -> None:
        fields: dict[str, Any] = {"status": "completed", "attempt": job.attempt}
        if output is not UNSET:
            fields["output"] = output
        await self._finishing.update(job.id, JobUpdate(**fields))

    async def fail(self, job: Assignment, failure: Failure) -> None:
        fields = {"status": "failed", "attempt": job.attempt, "error": failure.error()}
        await self._finishing.update(job.id, JobUpdate.model_validate(fields))

    async def close(self) -> None:
        await self._finishing.drained()
        await self._redis.aclose()

    async def _run(self, call: Call[T]) -> T:
        return await _translated(self.ledger.run(call))


class GroupCommit:
    """Job updates sent as few ``update_jobs`` calls as their timing allows (group commit).

    An update that finds no call on its way is sent at once, alone; those made while a call is on
    its way wait for it and go together in the next (up to ``limit`` per call).  No update waits
    for a timer, and each caller gets its own outcome: the number of events appended, or its own
    refusal raised as the client's error, while the others of its call go through.
    """

    def __init__(self, ledger: AsyncLedger, limit: int = 500) -> None:
        self.ledger = ledger
        self.limit = limit
        self.calls = 0  # update_jobs calls made, for the curious (and the tests)
        self._pending: list[tuple[int, JobUpdate, asyncio.Future[int]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def update(self, job_id: int, update: JobUpdate) -> int:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.append((job_id, update, done))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        return await done

    async def drained(self) -> None:
        """Wait until every update made so far has been sent and answered."""
        if self._sender is not None:
            await asyncio.shield(self._sender)

    async def _send(self) -> None:
        batch: list[tuple[int, JobUpdate, asyncio.Future[int]]] = []
        try:
            while self._pending:
                batch, self._pending = self._pending[: self.limit], self._pending[self.limit :]
                self.calls += 1
                try:
                    outcomes = await _translated(
                        self.ledger.run(commands.update_jobs([(i, u) for i, u, _ in batch]))
                    )
                except Exception as exc:  # noqa: BLE001 (each caller receives it)
                    for *_, done in batch:
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for (*_, done), outcome in zip(batch, outcomes, strict=True):
                    if done.done():
                        continue
                    if isinstance(outcome, JobLedgerError):
                        done.set_exception(error_for(outcome.status, outcome.message))
                    else:
                        done.set_result(outcome)
        except asyncio.CancelledError:  # the loop is closing: no caller may wait for ever
            for *_, done in [*batch, *self._pending]:
                done.cancel()
            self._pending = []
            raise
        finally:
            self._sender = None


def _heartbeat_timeouts(ids: list[int]) -> Read[list[float]]:
    """Each job's heartbeat_timeout in seconds (0 when off or gone), read in one round trip."""

    def commands_(keys: Keys) -> list[tuple[Any, ...]]:
        return [("HGET", keys.job(i), "heartbeat_timeout") for i in ids]

    return Read(commands_, lambda replies: [int(r or 0) / 1000 for r in replies])


def _decode(text: str | None) -> Any:
    return None if text is None else json.loads(text)


async def _translated(pending: Awaitable[T]) -> T:
    """Await a ledger call, raising the client's errors for the ledger's, so both transports fail
    the same way."""
    try:
        return await pending
    except JobLedgerError as exc:
        raise error_for(exc.status, exc.message) from exc
    except redis.RedisError as exc:
        raise ServerError(f"Redis error: {exc}") from exc

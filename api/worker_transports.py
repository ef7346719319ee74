"""How a :class:`api.worker.Worker` reaches the ledger: over HTTP, or straight to Redis.

Both transports run the same ledger commands (``fetch_jobs``, ``heartbeat``, ``update_job``) with the
same arguments, so a job leaves the same events whichever a worker uses.  Both name the attempt on
every update (fencing) and raise the :mod:`api.client.errors` tree, so the worker handles one kind
of error.  HTTP works from anywhere and in any deployment; Redis is the fast path for Python workers
that can reach the ledger's Redis: no HTTP hop, and a batch fetch costs one script call.
"""

from __future__ import annotations

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
        self._redis = redis.asyncio.Redis.from_url(redis_url)
        self.ledger = AsyncLedger(self._redis, namespace)

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
        await self._run(commands.update_job(job.id, JobUpdate(**fields)))

    async def fail(self, job: Assignment, failure: Failure) -> None:
        fields = {"status": "failed", "attempt": job.attempt, "error": failure.error()}
        update = JobUpdate.model_validate(fields)
        await self._run(commands.update_job(job.id, update))

    async def close(self) -> None:
        await self._redis.aclose()

    async def _run(self, call: Call[T]) -> T:
        return await _translated(self.ledger.run(call))


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

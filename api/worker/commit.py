"""The Redis worker's calls: many jobs' completions in as few ``update_jobs`` calls as their timing
allows, its next fetch riding along with them (:class:`GroupCommit`), and the ledger's errors raised
as the client's (:func:`translated`), so both transports fail the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis

from jobledger.client.errors import ServerError, error_for
from jobledger.ledger import commands
from jobledger.ledger.commands import Fetched
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.runner import AsyncLedger

#: What a worker's calls run on: one runner, or the router of a ledger split into partitions (which
#: runs a batch over jobs of several partitions as one call per partition).
AnyLedger = AsyncLedger | AsyncPartitioned | OpeningLedger

T = TypeVar("T")


@dataclass
class _Fetch:
    """A fetch waiting to go with the next call: what it asks for, and where its answer goes."""

    queue: str
    count: int
    worker: str
    done: asyncio.Future[list[Fetched]]


class GroupCommit:
    """Job updates sent as few calls as their timing allows (group commit), a fetch riding along.

    Updates made in one turn of the event loop go together; those made while a call is on its way
    wait for it and go together in the next (up to ``limit`` per call).  No update waits for a
    timer, and each caller gets its own outcome: the number of events appended, or its own refusal
    raised as the client's error, while the others of its call go through.

    :meth:`fetch` joins the updates waiting to go, if any, so that one call (``update_and_fetch``)
    records a worker's finished jobs and starts its next ones: at concurrency 1 a job costs one
    round trip.  With no update waiting it runs ``fetch_jobs`` at once.
    """

    def __init__(self, ledger: AnyLedger, limit: int = 500) -> None:
        self.ledger = ledger
        self.limit = limit
        self.calls = 0  # update_jobs / update_and_fetch calls made, for the curious (and the tests)
        self.fetches_along = 0  # of them, the update_and_fetch calls
        self._pending: list[tuple[int, JobUpdate, asyncio.Future[int]]] = []
        self._fetch: _Fetch | None = None
        self._sender: asyncio.Task[None] | None = None

    async def update(self, job_id: int, update: JobUpdate) -> int:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._pending.append((job_id, update, done))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        return await done

    async def fetch(self, queue: str, count: int, worker: str) -> list[Fetched]:
        """Start up to ``count`` jobs of ``queue``: with the updates waiting to go, if there are any
        (and no other fetch waits with them), else alone and at once."""
        if not self._pending or self._fetch is not None:
            return await translated(self.ledger.run(commands.fetch_jobs(queue, count, worker)))
        done: asyncio.Future[list[Fetched]] = asyncio.get_running_loop().create_future()
        self._fetch = _Fetch(queue, count, worker, done)
        return await done

    async def drained(self) -> None:
        """Wait until every update made so far has been sent and answered."""
        if self._sender is not None:
            await asyncio.shield(self._sender)

    async def _send(self) -> None:
        batch: list[tuple[int, JobUpdate, asyncio.Future[int]]] = []
        fetch: _Fetch | None = None
        try:
            await asyncio.sleep(0)  # what the rest of this turn of the loop adds goes along
            while self._pending:
                batch, self._pending = self._pending[: self.limit], self._pending[self.limit :]
                fetch, self._fetch = self._fetch, None
                self.calls += 1
                try:
                    outcomes = await self._call([(i, u) for i, u, _ in batch], fetch)
                except Exception as exc:  # noqa: BLE001 (each caller receives it)
                    for done in [d for *_, d in batch] + ([fetch.done] if fetch else []):
                        if not done.done():
                            done.set_exception(exc)
                    continue
                for (*_, done), outcome in zip(batch, outcomes, strict=True):
                    _settle(done, outcome)
        except asyncio.CancelledError:  # the loop is closing: no caller may wait for ever
            for *_, done in [*batch, *self._pending]:
                done.cancel()
            for waiting in (fetch, self._fetch):
                if waiting is not None:
                    waiting.done.cancel()
            self._pending, self._fetch = [], None
            raise
        finally:
            self._sender = None

    async def _call(self, updates: list[tuple[int, JobUpdate]], fetch: _Fetch | None) -> list[Any]:
        if fetch is None:
            return await translated(self.ledger.run(commands.update_jobs(updates)))
        self.fetches_along += 1
        reply = await translated(
            self.ledger.run(commands.update_and_fetch(updates, fetch.queue, fetch.count, fetch.worker))
        )
        _settle(fetch.done, reply.fetched)
        return list(reply.outcomes)


def _settle(done: asyncio.Future[Any], outcome: Any) -> None:
    if done.done():
        return
    if isinstance(outcome, JobLedgerError):
        done.set_exception(error_for(outcome.status, outcome.message))
    else:
        done.set_result(outcome)


async def translated(pending: Awaitable[T]) -> T:
    """Await a ledger call, raising the client's errors for the ledger's."""
    try:
        return await pending
    except JobLedgerError as exc:
        raise error_for(exc.status, exc.message) from exc
    except redis.RedisError as exc:
        raise ServerError(f"Redis error: {exc}") from exc

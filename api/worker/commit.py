"""The Redis worker's updates: many jobs' completions in as few ``update_jobs`` calls as their timing
allows (:class:`GroupCommit`), and the ledger's errors raised as the client's (:func:`translated`),
so both transports fail the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import redis

from jobledger.client.errors import ServerError, error_for
from jobledger.ledger import commands
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.runner import AsyncLedger

T = TypeVar("T")


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
                    outcomes = await translated(
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


async def translated(pending: Awaitable[T]) -> T:
    """Await a ledger call, raising the client's errors for the ledger's."""
    try:
        return await pending
    except JobLedgerError as exc:
        raise error_for(exc.status, exc.message) from exc
    except redis.RedisError as exc:
        raise ServerError(f"Redis error: {exc}") from exc

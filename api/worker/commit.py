"""A worker's calls: many jobs' updates in as few calls as their timing allows, its next fetch
riding along with them (:class:`GroupCommit`), over Redis (:class:`LedgerBatches`: the ledger's
``update_jobs`` / ``update_and_fetch``) or over HTTP (:class:`ClientBatches`: ``PATCH /jobs``), and
the ledger's errors raised as the client's (:func:`translated`), so both transports fail the same
way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import redis

from jobledger.client import AsyncClient
from jobledger.client.errors import BadRequest, ClientError, ServerError, error_for
from jobledger.client.models import FetchedJob
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
F = TypeVar("F")


@dataclass(frozen=True)
class FetchAsk:
    """A fetch: up to ``count`` jobs of ``queue``, started as ``worker``."""

    queue: str
    count: int
    worker: str


@dataclass(frozen=True)
class Sent(Generic[F]):
    """What one call answered: per update its outcome (a refusal is an exception, returned), and
    the jobs the fetch that went with them started (or its refusal; None: no fetch went)."""

    outcomes: list[Any]
    fetched: list[F] | Exception | None = None


class Batches(Protocol[F]):
    """Where a :class:`GroupCommit` sends: updates, and a fetch with them, in one call; or a fetch
    alone.  Raises the client's errors for a call that failed whole."""

    async def send(self, updates: list[tuple[int, JobUpdate]], fetch: FetchAsk | None) -> Sent[F]: ...

    async def fetch(self, ask: FetchAsk) -> list[F]: ...


class LedgerBatches:
    """Straight on the ledger: ``update_jobs``, or ``update_and_fetch`` with a fetch; ``fetch_jobs``."""

    def __init__(self, ledger: AnyLedger) -> None:
        self.ledger = ledger

    async def send(self, updates: list[tuple[int, JobUpdate]], fetch: FetchAsk | None) -> Sent[Fetched]:
        if fetch is None:
            outcomes: list[Any] = await translated(self.ledger.run(commands.update_jobs(updates)))
            return Sent(outcomes)
        call = commands.update_and_fetch(updates, fetch.queue, fetch.count, fetch.worker)
        reply = await translated(self.ledger.run(call))
        return Sent(list(reply.outcomes), reply.fetched)

    async def fetch(self, ask: FetchAsk) -> list[Fetched]:
        return await translated(self.ledger.run(commands.fetch_jobs(ask.queue, ask.count, ask.worker)))


class ClientBatches:
    """Over HTTP: ``PATCH /jobs`` (each job fetched with its ``heartbeat_timeout``), through
    ``short``, which sends a short request when the worker's cap on requests in flight allows.  A
    batch over the server's ``max_body_size`` (413: nothing was applied) is sent again in halves,
    the fetch with the first, so that outputs that fit one by one fit together too.  A server that
    has no ``PATCH /jobs`` (an older jobledger, or another server of Ocypod's API: the request is a
    404 or 405 as a whole) is sent one ``PATCH /job/{id}`` per update from then on, and the fetch
    after them."""

    def __init__(self, client: AsyncClient, short: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]):
        self.client = client
        self.short = short
        self.batching = True

    async def send(self, updates: list[tuple[int, JobUpdate]], fetch: FetchAsk | None) -> Sent[FetchedJob]:
        bodies = [{"id": job_id, **update.body()} for job_id, update in updates]
        return await self._sent(bodies, fetch)

    async def _sent(self, bodies: list[dict[str, Any]], fetch: FetchAsk | None) -> Sent[FetchedJob]:
        if not self.batching:
            return await self._one_by_one(bodies, fetch)
        asked: dict[str, Any] = {}
        if fetch is not None:
            asked = {"fetch": fetch.queue, "count": fetch.count, "worker": fetch.worker}
        try:
            answer = await self.short(
                lambda: self.client.update_many(bodies, heartbeat_timeout=True, **asked)
            )
        except BadRequest as exc:
            if exc.status != 413 or len(bodies) < 2:
                raise
            half = len(bodies) // 2
            first = await self._sent(bodies[:half], fetch)
            rest = await self._sent(bodies[half:], None)
            return Sent(first.outcomes + rest.outcomes, first.fetched)
        except ClientError as exc:
            if exc.status not in (404, 405):
                raise
            self.batching = False
            return await self._one_by_one(bodies, fetch)
        return Sent(list(answer.refusals), answer.jobs)

    async def _one_by_one(self, bodies: list[dict[str, Any]], fetch: FetchAsk | None) -> Sent[FetchedJob]:
        async def patched(body: dict[str, Any]) -> ClientError | None:
            fields = {name: value for name, value in body.items() if name != "id"}
            try:
                await self.short(lambda: self.client.update(body["id"], **fields))
            except ClientError as exc:
                return exc
            return None

        outcomes = list(await asyncio.gather(*(patched(body) for body in bodies)))
        fetched: list[FetchedJob] | ClientError | None = None
        if fetch is not None:
            try:
                fetched = await self.fetch(fetch)
            except ClientError as exc:
                fetched = exc
        return Sent(outcomes, fetched)

    async def fetch(self, ask: FetchAsk) -> list[FetchedJob]:
        fetched: list[FetchedJob] = await self.short(
            lambda: self.client.fetch(ask.queue, ask.count, ask.worker, heartbeat_timeout=True)
        )
        return fetched


@dataclass
class _Fetch(Generic[F]):
    """A fetch waiting to go with the next call: what it asks for, and where its answer goes."""

    ask: FetchAsk
    done: asyncio.Future[list[F]]


class GroupCommit(Generic[F]):
    """Job updates sent as few calls as their timing allows (group commit), a fetch riding along.

    Updates made in one turn of the event loop go together; those made while a call is on its way
    wait for it and go together in the next (up to ``limit`` per call).  No update waits for a
    timer, and each caller gets its own outcome: the number of events appended, or its own refusal
    raised as the client's error, while the others of its call go through.

    :meth:`fetch` joins the updates waiting to go, if any, so that one call records a worker's
    finished jobs and starts its next ones: at concurrency 1 a job costs one round trip.  With no
    update waiting it fetches alone, at once.  ``batches`` says where the calls go.
    """

    def __init__(self, batches: Batches[F], limit: int = 500) -> None:
        self.batches = batches
        self.limit = limit
        self.calls = 0  # update_jobs / update_and_fetch calls made, for the curious (and the tests)
        self.fetches_along = 0  # of them, the update_and_fetch calls
        self._pending: list[tuple[int, JobUpdate, asyncio.Future[Any]]] = []
        self._fetch: _Fetch[F] | None = None
        self._sender: asyncio.Task[None] | None = None

    async def update(self, job_id: int, update: JobUpdate) -> Any:
        """Send ``update`` with the others of its turn; what its call answered for it, or its
        refusal raised as the client's error."""
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((job_id, update, done))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send())
        return await done

    def waiting(self) -> bool:
        """Whether updates wait to go (a fetch made now would go with them)."""
        return bool(self._pending) and self._fetch is None

    async def fetch(self, queue: str, count: int, worker: str) -> list[F]:
        """Start up to ``count`` jobs of ``queue``: with the updates waiting to go, if there are any
        (and no other fetch waits with them), else alone and at once."""
        ask = FetchAsk(queue, count, worker)
        if not self.waiting():
            return await self.batches.fetch(ask)
        done: asyncio.Future[list[F]] = asyncio.get_running_loop().create_future()
        self._fetch = _Fetch(ask, done)
        return await done

    async def drained(self) -> None:
        """Wait until every update made so far has been sent and answered."""
        if self._sender is not None:
            await asyncio.shield(self._sender)

    async def _send(self) -> None:
        batch: list[tuple[int, JobUpdate, asyncio.Future[Any]]] = []
        fetch: _Fetch[F] | None = None
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

    async def _call(self, updates: list[tuple[int, JobUpdate]], fetch: _Fetch[F] | None) -> list[Any]:
        sent = await self.batches.send(updates, None if fetch is None else fetch.ask)
        if fetch is not None:
            self.fetches_along += 1
            _settle(fetch.done, sent.fetched)
        return sent.outcomes


def _settle(done: asyncio.Future[Any], outcome: Any) -> None:
    if done.done():
        return
    if isinstance(outcome, JobLedgerError):
        done.set_exception(error_for(outcome.status, outcome.message))
    elif isinstance(outcome, Exception):
        done.set_exception(outcome)
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

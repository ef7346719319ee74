"""Run commands and reads on a ledger split into partitions: each where its route says.

:class:`Partitioned` and :class:`AsyncPartitioned` hold one runner (:mod:`jobledger.ledger.runner`)
per partition (:mod:`jobledger.ledger.partitions`) and offer the runner's own methods -- ``run``,
``run_many``, ``read``, ``drive``, ``as_actor`` -- so that code written for one ledger runs
unchanged on a split one:

- a command runs on the partition its :class:`~jobledger.ledger.partitions.Route` names (its queue's,
  its job's, its launcher's, the home partition's); a batch over jobs of several partitions runs as
  one call per partition, at once, its results put back in the batch's order;
- a queue's partition is looked up first (:mod:`jobledger.ledger.placements`: cached, so a round
  trip only the first time a process meets the queue), and placed by the command that creates it;
- a read runs on its partition, or, when it spreads, on every partition at once, its answers made one.

With one partition everything goes straight to the one runner, with no routing at all.  What runs on
every partition in turn (the scheduler's checks, replay) takes the runners themselves: ``runners``.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Generic, Self, TypeVar

import redis
import redis.asyncio

from jobledger.ledger import errors
from jobledger.ledger.actors import LOCAL
from jobledger.ledger.calls import Call
from jobledger.ledger.clock import Clock, now_ms
from jobledger.ledger.partitions import (
    CLUSTER_PARTITIONS,
    Partitioning,
    Route,
    marker_key,
    settling,
)
from jobledger.ledger.placements import PLACING, locating
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import async_client, sync_client
from jobledger.ledger.runner import AsyncLedger, Ledger, Steps, checked_actor, driving, translate
from jobledger.ledger.slot_routing import asking_cluster
from jobledger.ledger.sync_or_async import AtOnce, Finishing, Work, awaited, done

T = TypeVar("T")
R = TypeVar("R", Ledger, AsyncLedger)
Router = TypeVar("Router", "Partitioned", "AsyncPartitioned")


def _plan(
    partitioning: Partitioning, call: Call[Any], queue_at: int | None
) -> list[tuple[int, Call[Any], list[int]]]:
    """Where each part of ``call`` runs: (partition, the call for it, the indices of the batch's items
    it carries); ``queue_at``: its queue's partition, as looked up."""
    route = call.route
    where = partitioning.of_route(route, f"the command {call.script}", queue_at)
    if len(where) == 1:
        return [(where[0], call, list(range(len(route.ids))))]
    if route.part is None or route.join is None:
        raise ValueError(f"the command {call.script} spans partitions {where} and cannot be split")
    by_partition: dict[int, list[int]] = {}
    if queue_at is not None:
        by_partition[queue_at] = []
    for index, ident in enumerate(route.ids):
        by_partition.setdefault(partitioning.of_id(ident), []).append(index)
    return [(p, route.part(indices, p == queue_at), indices) for p, indices in sorted(by_partition.items())]


def _grouped(
    partitioning: Partitioning, calls: list[Call[Any]], queues: dict[str, int]
) -> tuple[dict[int, list[int]], list[int]]:
    """The indices of the calls that run on one partition, by partition and in order, and of those
    that span several; ``queues``: their queues' partitions, as looked up."""
    groups: dict[int, list[int]] = {}
    alone: list[int] = []
    for i, call in enumerate(calls):
        queue_at = None if call.route.queue is None else queues[call.route.queue]
        where = partitioning.of_route(call.route, f"the command {call.script}", queue_at)
        if len(where) == 1:
            groups.setdefault(where[0], []).append(i)
        else:
            alone.append(i)
    return groups, alone


def _joined(route: Route, parts: Sequence[tuple[list[int], Any]]) -> Any:
    assert route.join is not None
    return route.join(list(parts))


class _Router(Generic[R]):
    """What both routers share: the partitioning, the runners, the actor."""

    def __init__(self, partitioning: Partitioning, runners: list[R]) -> None:
        if len(runners) != partitioning.count:
            raise ValueError(f"{partitioning.count} partitions need as many runners, not {len(runners)}")
        self.partitioning = partitioning
        self.runners: list[R] = runners

    @property
    def home(self) -> R:
        """The home partition's runner (partition 0; the only one on a ledger of one partition)."""
        return self.runners[0]

    @property
    def clock(self) -> Clock:
        return self.home.clock

    @property
    def actor(self) -> str:
        return self.home.actor

    def for_queue(self, name: str) -> R:
        """The runner of queue ``name``'s partition, looked up already (see ``locate``)."""
        return self.runners[self.partitioning.of_queue(name)]

    def for_id(self, ident: int) -> R:
        """The runner of the partition that handed out this job's or launcher's id."""
        return self.runners[self.partitioning.of_id(ident)]

    def as_actor(self, actor: str, token: str = "") -> Self:
        """This router acting for ``actor`` (as the runner's ``as_actor``).  A ``token`` is checked
        by the partition that holds the tokens: only a ledger of one partition takes one."""
        if token and self.partitioning.count != 1:
            raise ValueError("a token is checked in its commands only on a ledger of one partition")
        if actor == self.actor and token == self.runners[0].token:
            return self
        return type(self)(self.partitioning, [r.as_actor(actor, token) for r in self.runners])

    def _locating(self, names: Iterable[str], create: bool = False) -> Work[dict[str, int]]:
        return locating(self.partitioning, self.runners, names, create)

    def _queue_at(self, route: Route, create: bool = False) -> Work[int | None]:
        """The partition of ``route``'s queue (None: it names none), looked up."""
        if route.queue is None:
            return None
        if (cached := self.partitioning.placed.get(route.queue)) is not None:
            return cached  # the common case: no round trip
        return (yield from self._locating([route.queue], create))[route.queue]

    def _read_where(self, read: Read[Any], queue_at: int | None) -> list[int] | None:
        """The partition a read runs on, or None when it spreads over all."""
        if self.partitioning.count == 1:
            return [0]
        if read.route.spread is not None:
            return None
        where = self.partitioning.of_route(read.route, "a read", queue_at)
        if len(where) > 1:
            raise ValueError(f"a read spans partitions {where}: read each partition's part on its own")
        return where

    # What each router method does, written once (see jobledger.ledger.sync_or_async): the runners'
    # replies-to-be are yielded, a batch's parts and a spread read's as AtOnce.

    def _running(self, call: Call[T]) -> Work[T]:
        queue_at = yield from self._queue_at(call.route, call.script == PLACING)
        plan = _plan(self.partitioning, call, queue_at)
        if len(plan) == 1:
            return (yield self.runners[plan[0][0]].run(call))  # type: ignore[no-any-return]
        results = yield AtOnce(self.runners[p].run(c) for p, c, _ in plan)
        return _joined(call.route, [(indices, r) for (_, _, indices), r in zip(plan, results, strict=True)])  # type: ignore[no-any-return]

    def _running_many(self, calls: list[Call[Any]]) -> Work[list[Any]]:
        placing = {c.route.queue for c in calls if c.route.queue is not None and c.script == PLACING}
        named = {c.route.queue for c in calls if c.route.queue is not None} - placing
        queues = (yield from self._locating(placing, create=True)) if placing else {}
        queues.update((yield from self._locating(named)) if named else {})
        groups, alone = _grouped(self.partitioning, calls, queues)
        piped = yield AtOnce(
            self.runners[p].run_many(calls[i] for i in indices) for p, indices in groups.items()
        )
        results: dict[int, Any] = {}
        for indices, outcomes in zip(groups.values(), piped, strict=True):
            results.update(zip(indices, outcomes, strict=True))
        for i in alone:  # a call that spans partitions: alone, after, in order
            try:
                results[i] = yield from self._running(calls[i])  # its queue looked up above
            except errors.JobLedgerError as exc:
                results[i] = exc
        return [results[i] for i in range(len(calls))]

    def _reading(self, read: Read[T]) -> Work[T]:
        where = self._read_where(read, (yield from self._queue_at(read.route)))
        if where is None:
            assert read.route.spread is not None
            return read.route.spread(list((yield AtOnce(r.read(read) for r in self.runners))))  # type: ignore[no-any-return]
        return (yield self.runners[where[0]].read(read))  # type: ignore[no-any-return]

    def _driving(self, steps: Steps[T]) -> Work[T]:
        return driving(steps, self._reading, self._running, self._running_many)


class Partitioned(_Router[Ledger]):
    """Synchronous router over one :class:`~jobledger.ledger.runner.Ledger` per partition.  Each
    method goes straight to the one runner of a ledger of one partition (every command of an
    unsplit ledger takes that path), else does what :class:`_Router` writes once."""

    def run(self, call: Call[T]) -> T:
        if self.partitioning.count == 1:
            return self.home.run(call)
        return done(self._running(call))

    def run_many(self, calls: Iterable[Call[Any]]) -> list[Any]:
        """Each result, or the exception it raised, in order: the calls of each partition in one
        pipeline, in their order (as on one ledger); a call that spans partitions on its own."""
        if self.partitioning.count == 1:
            return self.home.run_many(calls)
        return done(self._running_many(list(calls)))

    def read(self, read: Read[T]) -> T:
        if self.partitioning.count == 1:
            return self.home.read(read)
        return done(self._reading(read))

    def drive(self, steps: Steps[T]) -> T:
        """As the runner's ``drive``, each step on its partition."""
        if self.partitioning.count == 1:
            return self.home.drive(steps)
        return done(self._driving(steps))

    def locate(self, names: Iterable[str]) -> dict[str, int]:
        """The partition of each queue of ``names``, looked up (cached for :meth:`for_queue` and
        ``partitioning.of_queue``); a name placed nowhere: where a command on it would run."""
        return done(self._locating(names))


class AsyncPartitioned(_Router[AsyncLedger]):
    """Asynchronous router over one :class:`~jobledger.ledger.runner.AsyncLedger` per partition:
    the same methods as :class:`Partitioned`, awaited; the parts of a batch and the reads of a spread
    run at once."""

    async def run(self, call: Call[T]) -> T:
        if self.partitioning.count == 1:
            return await self.home.run(call)
        return await awaited(self._running(call))

    async def run_many(self, calls: Iterable[Call[Any]]) -> list[Any]:
        """As :meth:`Partitioned.run_many`; the partitions' pipelines at once."""
        if self.partitioning.count == 1:
            return await self.home.run_many(calls)
        return await awaited(self._running_many(list(calls)))

    async def read(self, read: Read[T]) -> T:
        if self.partitioning.count == 1:
            return await self.home.read(read)
        return await awaited(self._reading(read))

    async def drive(self, steps: Steps[T]) -> T:
        """As the runner's ``drive``, each step on its partition."""
        if self.partitioning.count == 1:
            return await self.home.drive(steps)
        return await awaited(self._driving(steps))

    async def locate(self, names: Iterable[str]) -> dict[str, int]:
        """As :meth:`Partitioned.locate`, awaited."""
        return await awaited(self._locating(names))

    async def queue_runner(self, name: str) -> AsyncLedger:
        """The runner of queue ``name``'s partition, looked up."""
        return self.runners[(await self.locate([name]))[name]]


def runners_of(ledger: Ledger | Partitioned) -> list[Ledger]:
    """The runner of each partition of ``ledger`` (itself, a ledger of one runner)."""
    return ledger.runners if isinstance(ledger, Partitioned) else [ledger]


def connect(url: str, partitioning: Partitioning, clock: Clock = now_ms, actor: str = LOCAL) -> Partitioned:
    """A router over ``partitioning``'s partitions at ``url``, each through its own client (on a
    Cluster, connected to the node of that partition's slot)."""
    return Partitioned(
        partitioning, [Ledger(sync_client(url, ns), ns, clock, actor) for ns in partitioning.namespaces]
    )


def connect_async(
    url: str, partitioning: Partitioning, clock: Clock = now_ms, actor: str = LOCAL
) -> AsyncPartitioned:
    """As :func:`connect`, async."""
    return AsyncPartitioned(
        partitioning, [AsyncLedger(async_client(url, ns), ns, clock, actor) for ns in partitioning.namespaces]
    )


def open_ledger(
    url: str, namespace: str, partitions: int | None = None, clock: Clock = now_ms, actor: str = LOCAL
) -> Partitioned:
    """The ledger ``namespace`` at ``url``, split as it is stored (or, new, into ``partitions``; by
    default 16 on a Cluster, 1 otherwise), each partition marked before it hands out an id.
    PartitionCountMismatch when ``partitions`` is not the stored count."""
    connecting = partial(connect, url, clock=clock, actor=actor)
    return done(_opening(sync_client(url, namespace), namespace, partitions, connecting))


async def open_ledger_async(
    url: str, namespace: str, partitions: int | None = None, clock: Clock = now_ms, actor: str = LOCAL
) -> AsyncPartitioned:
    """As :func:`open_ledger`, async."""
    connecting = partial(connect_async, url, clock=clock, actor=actor)
    return await awaited(_opening(async_client(url, namespace), namespace, partitions, connecting))


def _opening(
    base: redis.Redis | redis.asyncio.Redis,
    namespace: str,
    partitions: int | None,
    connecting: Callable[[Partitioning], Router],
) -> Work[Router]:
    """:func:`open_ledger` on either kind of client, ``base`` (closed here) reaching the namespace."""
    try:
        default = CLUSTER_PARTITIONS if (yield from asking_cluster(base)) else 1
        partitioning = yield from settling(base, namespace, partitions, default)
    finally:
        yield _closing(base)
    router = connecting(partitioning)
    try:
        for partition, runner in enumerate(router.runners):
            marked = marker_key(partitioning, partition)
            if marked is not None:
                yield runner.client.set(*marked, nx=True)
    except BaseException:  # a cancellation too: the router is nobody's to close
        for runner in router.runners:
            yield _closing(runner.client)
        raise
    return router


def _closing(client: redis.Redis | redis.asyncio.Redis) -> Finishing:
    """Close ``client``: at once, or what to await to its end, cancelled or not."""
    if isinstance(client, redis.asyncio.Redis):
        return Finishing(client.aclose())
    client.close()
    return Finishing(None)


class OpeningLedger:
    """An async ledger opened on first use, for a server that must start while Redis is away: the
    partition count is read (or stored) by the first command or read that reaches Redis, and until
    then each one fails as Redis being unreachable does (a count other than the stored one keeps
    failing: PartitionCountMismatch, an Unavailable).  The same methods as :class:`AsyncPartitioned`,
    awaited; :meth:`opened` gives the router itself.  Once :meth:`aclose` has begun it opens nothing
    more (an opening under way ends first, and what it opened is closed with the rest), so that a
    server's shutdown leaves no connection behind whatever its tasks were doing."""

    def __init__(
        self,
        url: str,
        namespace: str,
        partitions: int | None = None,
        clock: Clock = now_ms,
        observe: Callable[[str, float], None] | None = None,
    ) -> None:
        self.url, self.namespace, self.partitions, self.clock = url, namespace, partitions, clock
        self.observe = observe
        self.actor, self.token = LOCAL, ""
        self._root = self
        self._router: AsyncPartitioned | None = None
        self._acting: AsyncPartitioned | None = None  # the router acting for this view's actor
        self._lock = asyncio.Lock()
        self._closed = False

    async def opened(self) -> AsyncPartitioned:
        """The router (acting for this view's actor), opening the ledger if nobody has yet;
        Unavailable once the ledger is closed."""
        root = self._root
        if root._closed:
            raise errors.Unavailable("the ledger is closed: this process is stopping")
        if self._acting is None:
            if root._router is None:
                async with root._lock:
                    if root._closed:
                        raise errors.Unavailable("the ledger is closed: this process is stopping")
                    if root._router is None:
                        root._router = await self._open()
            self._acting = root._router.as_actor(self.actor, self.token)
        return self._acting

    async def _open(self) -> AsyncPartitioned:
        try:
            router = await open_ledger_async(self.url, self.namespace, self.partitions, self.clock)
        except redis.RedisError as exc:
            raise translate(exc) from exc
        except OSError as exc:
            raise errors.Unavailable(f"Redis is unreachable: {exc}") from exc
        for runner in router.runners:
            runner.observe = self.observe
        return router

    @property
    def router(self) -> AsyncPartitioned | None:
        """The router, once the ledger is open (None before)."""
        return self._root._router

    def as_actor(self, actor: str, token: str = "") -> OpeningLedger:
        """This ledger acting for ``actor``, checking ``token`` in its commands and reads (see the
        runner's ``as_actor``); a view sharing it."""
        if actor == self.actor and token == self.token:
            return self
        view = copy.copy(self)
        view.actor, view.token, view._acting = checked_actor(actor), token, None
        return view

    async def _opened_for(self, scripts: Iterable[str]) -> AsyncPartitioned:
        """:meth:`opened`; when it fails, each command that could not run is observed as a refused
        one is (its attempt counts)."""
        started = time.perf_counter()
        try:
            return await self.opened()
        except errors.Unavailable:
            if self.observe is not None:
                for script in scripts:
                    self.observe(script, time.perf_counter() - started)
            raise

    async def run(self, call: Call[T]) -> T:
        router = self._acting  # once open: straight to the router
        if router is None:
            router = await self._opened_for([call.script])
        return await router.run(call)

    async def run_many(self, calls: Iterable[Call[Any]]) -> list[Any]:
        calls = list(calls)
        return await (await self._opened_for(c.script for c in calls)).run_many(calls)

    async def read(self, read: Read[T]) -> T:
        return await (await self.opened()).read(read)

    async def drive(self, steps: Steps[T]) -> T:
        return await (await self.opened()).drive(steps)

    async def aclose(self) -> None:
        """Close every partition's client (if the ledger was opened, or is being opened: its opening
        ends first), and open nothing more."""
        root = self._root
        root._closed = True
        async with root._lock:
            router = root._router
            if router is not None:
                for runner in router.runners:
                    await runner.client.aclose()

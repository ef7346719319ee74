"""Run commands and reads against one ledger (a namespace on one Redis), sync or async.

The runner owns the four things every command needs: the client, the namespace's key prefix
(``KEYS[1]``), the clock that gives ``now`` (``ARGV[1]``) and the actor, who the events it appends
are recorded as caused by (``ARGV[2]``, which the scripts' prelude takes off: see
:mod:`jobledger.ledger.scripts`).  :meth:`_Base.as_actor` is the same runner acting for another
actor: a server runs each request's commands as the name of the request's token.  Scripts are
registered once per runner and called with EVALSHA (redis-py loads a script again after a server
restart, on NOSCRIPT).  Error replies from scripts become the :mod:`jobledger.ledger.errors` tree;
a lost connection, Unavailable.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import Any, Self, TypeAlias, TypeVar

import redis
import redis.asyncio

from jobledger.ledger import errors
from jobledger.ledger.actors import LOCAL, valid_actor
from jobledger.ledger.calls import Call
from jobledger.ledger.clock import Clock, now_ms, wall_ms
from jobledger.ledger.keys import DEFAULT_NAMESPACE, Keys
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import async_client, sync_client
from jobledger.ledger.scripts import source
from jobledger.ledger.sync_or_async import Work, awaited, done

T = TypeVar("T")

_SCRIPT_SUFFIX = re.compile(r"\s*script: \w+, on @user_script:\d+\.?\s*$")


def translate(exc: redis.RedisError) -> Exception:
    """A redis-py exception -> the jobledger exception it stands for."""
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
        return errors.Unavailable(f"Redis is unreachable: {exc}")
    if isinstance(exc, redis.ResponseError):
        mapped = errors.from_reply(_SCRIPT_SUFFIX.sub("", str(exc)))
        if mapped is not None:
            return mapped
    return exc


def _translated(exc: Exception) -> Exception:
    return translate(exc) if isinstance(exc, redis.RedisError) else exc


def _outcome(call: Call[Any], reply: Any) -> Any:
    return translate(reply) if isinstance(reply, redis.RedisError) else call.parse(reply)


def generation_of(reply: Any) -> int:
    """The live generation from a GET of the ``generation`` key (absent: 0)."""
    return int(reply) if reply else 0


def live_keys(client: redis.Redis, namespace: str) -> Keys:
    """The keys of the namespace's live generation of projections (see :mod:`jobledger.ledger.keys`)."""
    keys = Keys(namespace)
    return keys.with_generation(generation_of(client.get(keys.build("generation"))))


def checked_actor(actor: str) -> str:
    if not valid_actor(actor):
        raise ValueError(f"an actor is 1 to 255 characters, none a control character, not {actor!r}")
    return actor


Op: TypeAlias = Read[Any] | Call[Any] | list[Call[Any]]
#: A driver of several round trips, written once for both runners: a generator that yields Ops and
#: is sent each one's result (a Read's value, a Call's result, a batch's list of results); its return
#: value is what :meth:`Ledger.drive` / :meth:`AsyncLedger.drive` give.
Steps = Generator[Op, Any, T]


def refusals_gathered(steps: Steps[T]) -> Steps[T]:
    """``steps`` with the rule of :meth:`Ledger.drive` for batches: each refused command of a list
    (its outcome an exception) gives the steps None and the work goes on; the refusals are raised
    together at the end (errors.Refused, with the steps' result)."""
    refused: list[Exception] = []
    try:
        op = next(steps)
        while True:
            reply = yield op
            if isinstance(op, list):
                refused += [o for o in reply if isinstance(o, Exception)]
                reply = [None if isinstance(o, Exception) else o for o in reply]
            op = steps.send(reply)
    except StopIteration as stop:
        result: T = stop.value
    if refused:
        raise errors.Refused(refused, result)
    return result


def driving(
    steps: Steps[T],
    reading: Callable[[Read[Any]], Work[Any]],
    running: Callable[[Call[Any]], Work[Any]],
    running_many: Callable[[list[Call[Any]]], Work[list[Any]]],
) -> Work[T]:
    """``steps`` run by a runner or a router, each Op by the work it names (see
    :mod:`jobledger.ledger.sync_or_async`), with the rule of :meth:`Ledger.drive` for batches."""
    work = refusals_gathered(steps)
    reply: Any
    try:
        op = next(work)
        while True:
            if isinstance(op, Read):
                reply = yield from reading(op)
            elif isinstance(op, Call):
                reply = yield from running(op)
            else:
                reply = yield from running_many(op)
            op = work.send(reply)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


class _Base:
    """Everything a runner does, written once as generators that yield what to send to Redis (the
    reply itself on the sync runner, an awaitable of it on the async one) and are sent the reply;
    :class:`Ledger` and :class:`AsyncLedger` only complete them, without or with ``await``.

    Commands go to the ledger's prefix and their scripts find the live generation themselves.
    Reads use ``self.keys``, the generation last seen: each step of a read runs in a MULTI that
    also reads the pointer, and a read that finds it moved is run again with the new keys."""

    #: Called after every command, refused or not, with its script name and seconds taken (metrics).
    observe: Callable[[str, float], None] | None = None

    def __init__(
        self, client: Any, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms, actor: str = LOCAL
    ) -> None:
        self.client = client
        self.keys = Keys(namespace)
        self.clock = clock
        self.actor = checked_actor(actor)
        self._scripts: dict[str, Any] = {}  # registered on first use, shared with as_actor's views

    def as_actor(self, actor: str) -> Self:
        """This runner acting for ``actor``: the commands run through it record ``actor`` in every
        event they append.  A view, cheap to make (it shares the client and the registered scripts,
        and changes nothing of this runner); ValueError for a name that is no actor."""
        if actor == self.actor:
            return self
        view = copy.copy(self)
        view.actor = checked_actor(actor)
        return view

    def _script(self, name: str) -> Any:
        """The registered script ``name``, composed and registered the first time it is run."""
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.client.register_script(source(name))
        return script

    def _running(self, call: Call[T]) -> Work[T]:
        started = time.perf_counter()
        try:
            script = self._script(call.script)
            args = [self.clock(), self.actor, wall_ms(), *call.args]
            return call.parse((yield script(keys=[self.keys.ledger_prefix], args=args)))
        finally:
            if self.observe is not None:
                self.observe(call.script, time.perf_counter() - started)

    def _running_many(self, calls: Iterable[Call[Any]]) -> Work[list[Any]]:
        calls = list(calls)
        pipe = self.client.pipeline(transaction=False)
        now, sent = self.clock(), wall_ms()
        for call in calls:  # queued by hand: the async Script's call is a coroutine even on a pipeline
            script = self._script(call.script)
            pipe.scripts.add(script)  # the pipeline loads the scripts Redis lacks before it runs
            pipe.evalsha(script.sha, 1, self.keys.ledger_prefix, now, self.actor, sent, *call.args)
        replies = yield pipe.execute(raise_on_error=False)
        return [_outcome(c, r) for c, r in zip(calls, replies, strict=True)]

    def _reading(self, read: Read[T]) -> Work[T]:
        first = read
        while True:
            keys = self.keys
            pipe = self.client.pipeline(transaction=True)
            pipe.get(keys.build("generation"))
            for command in read.commands(keys):
                pipe.execute_command(*command)
            replies = yield pipe.execute()
            generation = generation_of(replies[0])
            if generation != keys.generation:
                self.keys = keys.with_generation(generation)
                read = first  # the projections moved to another generation: start again
                continue
            out = read.parse(replies[1:])
            if not isinstance(out, Read):
                return out
            read = out

    def _driving(self, steps: Steps[T]) -> Work[T]:
        return driving(steps, self._reading, self._running, self._running_many)


class Ledger(_Base):
    """Synchronous runner over a ``redis.Redis`` client."""

    def _complete(self, work: Work[T]) -> T:
        return done(work, _translated)

    def run(self, call: Call[T]) -> T:
        """One command; its result, or the exception of its refusal."""
        return self._complete(self._running(call))

    def run_many(self, calls: Iterable[Call[Any]]) -> list[Any]:
        """Many commands in one pipeline (one round trip); each result, or the exception it raised."""
        return self._complete(self._running_many(calls))

    def read(self, read: Read[T]) -> T:
        return self._complete(self._reading(read))

    def drive(self, steps: Steps[T]) -> T:
        """Run ``steps`` to its end; what it returns.  A Read or a Call it yields runs alone and a
        refusal raises at once.  A list of Calls runs in one pipeline and every command of it runs,
        whatever the others do: the steps get None for each refused one and go on, and once they
        are done :class:`~jobledger.ledger.errors.Refused` is raised with every refusal and the
        steps' result.  So one command the ledger refuses neither stops the rest of the work nor
        goes unreported."""
        return self._complete(self._driving(steps))


class AsyncLedger(_Base):
    """Asynchronous runner over a ``redis.asyncio.Redis`` client: the same methods as
    :class:`Ledger`, awaited."""

    def _complete(self, work: Work[T]) -> Awaitable[T]:
        return awaited(work, _translated)

    async def run(self, call: Call[T]) -> T:
        return await self._complete(self._running(call))

    async def run_many(self, calls: Iterable[Call[Any]]) -> list[Any]:
        return await self._complete(self._running_many(calls))

    async def read(self, read: Read[T]) -> T:
        return await self._complete(self._reading(read))

    async def drive(self, steps: Steps[T]) -> T:
        """As :meth:`Ledger.drive`."""
        return await self._complete(self._driving(steps))


def connect(
    url: str, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms, actor: str = LOCAL
) -> Ledger:
    return Ledger(sync_client(url, namespace), namespace, clock, actor)


def connect_async(
    url: str, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms, actor: str = LOCAL
) -> AsyncLedger:
    return AsyncLedger(async_client(url, namespace), namespace, clock, actor)

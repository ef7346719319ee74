"""Run commands and reads against one ledger (a namespace on one Redis), sync or async.

The runner owns the four things every command needs: the client, the namespace's key prefix
(``KEYS[1]``), the clock that gives ``now`` (``ARGV[1]``) and the actor, who the events it appends
are recorded as caused by (``ARGV[2]``, which the scripts' prelude takes off: see
:mod:`jobledger.ledger.scripts`).  :meth:`_Base.as_actor` is the same runner acting for another
actor: a server runs each request's commands as the name of the request's token.

Each command is a Redis Functions library of its own (:func:`jobledger.ledger.scripts.function`),
called with ``FCALL``: its pieces are built once when it is loaded, not at every call as a script's
are.  A server holds the libraries until it is restarted with nothing kept or its functions are
flushed, so they are loaded on demand: a call answered "Function not found" (it did not run) loads
its library and is sent again.  :meth:`Ledger.load_functions` loads every missing one at once, as a
server does when it starts.  A server without Functions (Redis older than 7.0) refuses every
command with :class:`FunctionsMissing`, which says so.  Error replies from the commands become the
:mod:`jobledger.ledger.errors` tree; a lost connection, Unavailable.
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
from jobledger.ledger.scripts import FUNCTION_PREFIX, Function, commands, function
from jobledger.ledger.sync_or_async import Work, awaited, done

T = TypeVar("T")

_SCRIPT_SUFFIX = re.compile(r"\s*script: \w+, on @user_(?:script|function):\d+\.?\s*$")
#: What Redis answers an FCALL of a function it does not hold (restarted with nothing kept, flushed).
_NOT_LOADED = "Function not found"
#: What a server without Functions (older than Redis 7.0) answers an FCALL or a FUNCTION command.
_NO_FUNCTIONS = re.compile(r"unknown command .?(fcall|function)", re.IGNORECASE)


class FunctionsMissing(errors.Unavailable):
    """The server has no Functions: jobledger's commands need Redis 7.0 or later, or Valkey."""


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _not_loaded(reply: Any) -> bool:
    return isinstance(reply, redis.ResponseError) and str(reply).startswith(_NOT_LOADED)


def translate(exc: redis.RedisError) -> Exception:
    """A redis-py exception -> the jobledger exception it stands for."""
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
        return errors.Unavailable(f"Redis is unreachable: {exc}")
    if isinstance(exc, redis.ResponseError):
        if _NO_FUNCTIONS.search(str(exc)):
            return FunctionsMissing(
                "this Redis server has no Functions (FCALL): jobledger needs Redis 7.0 or later, or Valkey"
            )
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
        #: the digest of the token the commands and reads run for ('' none): each command refuses
        #: (Unauthorized) unless the ledger still knows it, and each read checks it in its MULTI
        self.token = ""

    def as_actor(self, actor: str, token: str = "") -> Self:
        """This runner acting for ``actor``: the commands run through it record ``actor`` in every
        event they append.  With ``token`` (a token's digest), each command and read through it first
        checks that the ledger still knows that token, in the same script or MULTI: Unauthorized
        once it is revoked.  A view, cheap to make (it shares the client, and changes nothing of
        this runner); ValueError for a name that is no actor."""
        if actor == self.actor and token == self.token:
            return self
        view = copy.copy(self)
        view.actor, view.token = checked_actor(actor), token
        return view

    def _fcall(self, pipe: Any, function: Function, now: int, sent: int, args: tuple[Any, ...]) -> Any:
        return pipe.fcall(function.name, 1, self.keys.ledger_prefix, now, self.actor, sent, self.token, *args)

    def _running(self, call: Call[T]) -> Work[T]:
        started = time.perf_counter()
        try:
            fn = function(call.script)
            now, sent = self.clock(), wall_ms()
            try:
                reply = yield self._fcall(self.client, fn, now, sent, call.args)
            except redis.ResponseError as exc:
                if not _not_loaded(exc):
                    raise
                yield self.client.function_load(fn.code, replace=True)
                reply = yield self._fcall(self.client, fn, now, sent, call.args)
            return call.parse(reply)
        finally:
            if self.observe is not None:
                self.observe(call.script, time.perf_counter() - started)

    def _running_many(self, calls: Iterable[Call[Any]]) -> Work[list[Any]]:
        calls = list(calls)
        now, sent = self.clock(), wall_ms()
        pipe = self.client.pipeline(transaction=False)
        for call in calls:
            self._fcall(pipe, function(call.script), now, sent, call.args)
        replies = yield pipe.execute(raise_on_error=False)
        missing = [i for i, reply in enumerate(replies) if _not_loaded(reply)]
        if missing:  # none of those ran: loaded, then run (alone, after the rest)
            pipe = self.client.pipeline(transaction=False)
            for name in dict.fromkeys(calls[i].script for i in missing):
                pipe.function_load(function(name).code, replace=True)
            for i in missing:
                self._fcall(pipe, function(calls[i].script), now, sent, calls[i].args)
            again = (yield pipe.execute(raise_on_error=False))[-len(missing) :]
            for i, reply in zip(missing, again, strict=True):
                replies[i] = reply
        return [_outcome(c, r) for c, r in zip(calls, replies, strict=True)]

    def _loading_functions(self) -> Work[int]:
        """Load every command's library the server lacks (one round trip when it has them all: a
        server restarted with nothing kept has none), and delete the libraries of other versions of
        jobledger's commands, so that upgrades do not pile them up; how many were loaded.  A server
        still running another version loads its own again when it next calls one ("Function not
        found": the call did not run), once."""
        held = yield self.client.function_list(library=FUNCTION_PREFIX + "*")
        names = {_text(entry[1]) for entry in held}
        current = [function(name) for name in commands()]
        lacking = [fn for fn in current if fn.name not in names]
        stale = names - {fn.name for fn in current}
        if lacking or stale:
            pipe = self.client.pipeline(transaction=False)
            for name in sorted(stale):
                pipe.function_delete(name)
            for fn in lacking:
                pipe.function_load(fn.code, replace=True)
            replies = yield pipe.execute(raise_on_error=False)
            for reply in replies[len(stale) :]:  # (a deletion refused: another server deleted it first)
                if isinstance(reply, Exception):
                    raise reply
        return len(lacking)

    def _reading(self, read: Read[T]) -> Work[T]:
        first = read
        while True:
            keys = self.keys
            pipe = self.client.pipeline(transaction=True)
            pipe.get(keys.build("generation"))
            if self.token:
                pipe.exists(keys.build("token", digest=self.token))
            for command in read.commands(keys):
                pipe.execute_command(*command)
            replies = yield pipe.execute()
            generation = generation_of(replies[0])
            known = replies.pop(1) if self.token else True
            if generation == keys.generation and not known:
                raise errors.Unauthorized("unknown or revoked token")
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

    def load_functions(self) -> int:
        """Load the commands' libraries the server lacks (see :meth:`_Base._loading_functions`)."""
        return self._complete(self._loading_functions())

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

    async def load_functions(self) -> int:
        return await self._complete(self._loading_functions())

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

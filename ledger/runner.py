"""Run commands and reads against one ledger (a namespace on one Redis), sync or async.

The runner owns the three things every command needs: the client, the namespace's key prefix
(``KEYS[1]``) and the clock that gives ``now`` (``ARGV[1]``).  Scripts are registered once per
runner and called with EVALSHA (redis-py loads a script again after a server restart, on NOSCRIPT).
Error replies from scripts become the :mod:`jobledger.ledger.errors` tree; a lost connection, Unavailable.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import redis
import redis.asyncio

from jobledger.ledger import errors
from jobledger.ledger.clock import Clock, now_ms
from jobledger.ledger.commands import Call
from jobledger.ledger.keys import DEFAULT_NAMESPACE, Keys
from jobledger.ledger.reads import Read
from jobledger.ledger.redis_clients import async_client, sync_client
from jobledger.ledger.scripts import sources

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


def _outcome(call: Call[Any], reply: Any) -> Any:
    return translate(reply) if isinstance(reply, redis.RedisError) else call.parse(reply)


MOVED = object()  # a read step found the projections in another generation than it read


def generation_of(reply: Any) -> int:
    """The live generation from a GET of the ``generation`` key (absent: 0)."""
    return int(reply) if reply else 0


def live_keys(client: redis.Redis, namespace: str) -> Keys:
    """The keys of the namespace's live generation of projections (see :mod:`jobledger.ledger.keys`)."""
    keys = Keys(namespace)
    return keys.with_generation(generation_of(client.get(keys.build("generation"))))


class _Base:
    """Commands go to the ledger's prefix and their scripts find the live generation themselves.
    Reads use ``self.keys``, the generation last seen: each step of a read runs in a MULTI that
    also reads the pointer, and a read that finds it moved is run again with the new keys."""

    def __init__(self, client: Any, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms) -> None:
        self.client = client
        self.keys = Keys(namespace)
        self.clock = clock
        self._scripts = {name: client.register_script(src) for name, src in sources().items()}

    def _pipeline(self, read: Read[Any]) -> tuple[Any, Keys]:
        keys = self.keys
        pipe = self.client.pipeline(transaction=True)
        pipe.get(keys.build("generation"))
        for command in read.commands(keys):
            pipe.execute_command(*command)
        return pipe, keys

    def _result(self, replies: list[Any], keys: Keys, read: Read[T]) -> Any:
        """What a step gave, or MOVED when the generation moved (``self.keys`` is then updated)."""
        generation = generation_of(replies[0])
        if generation != keys.generation:
            self.keys = keys.with_generation(generation)
            return MOVED
        return read.parse(replies[1:])

    def _invoke(self, call: Call[Any], now: int, client: Any) -> Any:
        script = self._scripts[call.script]
        return script(keys=[self.keys.ledger_prefix], args=[now, *call.args], client=client)


class Ledger(_Base):
    """Synchronous runner over a ``redis.Redis`` client."""

    def run(self, call: Call[T]) -> T:
        try:
            return call.parse(self._invoke(call, self.clock(), self.client))
        except redis.RedisError as exc:
            raise translate(exc) from exc

    def run_many(self, calls: Iterable[Call[Any]]) -> list[Any]:
        """Many commands in one pipeline (one round trip); each result, or the exception it raised."""
        calls = list(calls)
        pipe = self.client.pipeline(transaction=False)
        now = self.clock()
        for call in calls:
            self._invoke(call, now, pipe)
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            raise translate(exc) from exc
        return [_outcome(c, r) for c, r in zip(calls, replies, strict=True)]

    def read(self, read: Read[T]) -> T:
        first = read
        try:
            while True:
                pipe, keys = self._pipeline(read)
                out = self._result(pipe.execute(), keys, read)
                if out is MOVED:
                    read = first  # the projections moved to another generation: start again
                elif not isinstance(out, Read):
                    return out
                else:
                    read = out
        except redis.RedisError as exc:
            raise translate(exc) from exc


class AsyncLedger(_Base):
    """Asynchronous runner over a ``redis.asyncio.Redis`` client."""

    #: Called after every command, refused or not, with its script name and seconds taken (metrics).
    observe: Callable[[str, float], None] | None = None

    async def run(self, call: Call[T]) -> T:
        started = time.perf_counter()
        try:
            return call.parse(await self._invoke(call, self.clock(), self.client))
        except redis.RedisError as exc:
            raise translate(exc) from exc
        finally:
            if self.observe is not None:
                self.observe(call.script, time.perf_counter() - started)

    async def read(self, read: Read[T]) -> T:
        first = read
        try:
            while True:
                pipe, keys = self._pipeline(read)
                out = self._result(await pipe.execute(), keys, read)
                if out is MOVED:
                    read = first  # the projections moved to another generation: start again
                elif not isinstance(out, Read):
                    return out
                else:
                    read = out
        except redis.RedisError as exc:
            raise translate(exc) from exc


def connect(url: str, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms) -> Ledger:
    return Ledger(sync_client(url), namespace, clock)


def connect_async(url: str, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms) -> AsyncLedger:
    return AsyncLedger(async_client(url), namespace, clock)

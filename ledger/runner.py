"""Run commands and reads against one ledger (a namespace on one Redis), sync or async.

The runner owns the three things every command needs: the client, the namespace's key prefix
(``KEYS[1]``) and the clock that gives ``now`` (``ARGV[1]``).  Scripts are registered once per
runner and called with EVALSHA (redis-py loads a script again after a server restart, on NOSCRIPT).
Error replies from scripts become the :mod:`ledger.errors` tree; a lost connection, Unavailable.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import redis
import redis.asyncio

from ledger import errors
from ledger.clock import Clock, now_ms
from ledger.commands import Call
from ledger.keys import DEFAULT_NAMESPACE, Keys
from ledger.scripts import sources
from projections.readers import Read

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


class _Base:
    def __init__(self, client: Any, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms) -> None:
        self.client = client
        self.keys = Keys(namespace)
        self.clock = clock
        self._scripts = {name: client.register_script(src) for name, src in sources().items()}

    def _invoke(self, call: Call[Any], now: int, client: Any) -> Any:
        return self._scripts[call.script](keys=[self.keys.prefix], args=[now, *call.args], client=client)


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
        try:
            while True:
                pipe = self.client.pipeline(transaction=False)
                for command in read.commands(self.keys):
                    pipe.execute_command(*command)
                out = read.parse(pipe.execute())
                if not isinstance(out, Read):
                    return out
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
        try:
            while True:
                pipe = self.client.pipeline(transaction=False)
                for command in read.commands(self.keys):
                    pipe.execute_command(*command)
                out = read.parse(await pipe.execute())
                if not isinstance(out, Read):
                    return out
                read = out
        except redis.RedisError as exc:
            raise translate(exc) from exc


def connect(url: str, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms) -> Ledger:
    return Ledger(redis.Redis.from_url(url), namespace, clock)


def connect_async(url: str, namespace: str = DEFAULT_NAMESPACE, clock: Clock = now_ms) -> AsyncLedger:
    return AsyncLedger(redis.asyncio.Redis.from_url(url), namespace, clock)

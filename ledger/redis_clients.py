"""Redis clients as jobledger makes them: every timeout set here, whatever redis-py's defaults are.

redis-py's defaults change between versions (8.x reads with a 5 s socket timeout and resends a
command after a timeout or a dropped connection; 5.x waits for ever and resends nothing), so every
client jobledger creates comes from :func:`sync_client` or :func:`async_client`, which set them:

- a command that has not answered within :data:`COMMAND_TIMEOUT` is reported as Redis being
  unreachable, rather than holding its caller for ever (a stopped or overloaded server);
- a command is never resent by the client: a command is one script that appends events, and a
  resend after a lost answer would append them twice.  Whoever can resend safely does it itself;
- a blocking read (``XREAD BLOCK``) blocks for at most :func:`block_ms` of what it asks, so it
  always answers before the socket timeout of the client it runs on, whoever made that client;
- a client made for a ``namespace`` connects, on a Cluster, to the node serving that namespace's
  slot, whichever node the URL names (:mod:`jobledger.ledger.slot_routing`);
- a pooled connection that Redis closed (a restart) is found before it is handed out, and opened
  again, on every supported version: the first command after Redis is back succeeds;
- an async client packs its commands with hiredis, and writes one that cannot wait at once, in its
  caller's task (:class:`LeanConnection`);
- a connection dropped on an error (a write that timed out, say) throws away what it had not yet
  sent: a command reported as failed never reaches a Redis that comes back later.
"""

from __future__ import annotations

from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio
import redis.connection
from redis.backoff import NoBackoff
from redis.utils import HIREDIS_AVAILABLE

from jobledger.ledger.slot_routing import routed

C = TypeVar("C", redis.Redis, redis.asyncio.Redis)

#: What packs a command as redis-py's sync connections do, where hiredis is installed.
_HIREDIS = redis.connection.HiredisRespSerializer() if HIREDIS_AVAILABLE else None
#: Seconds a command may take to answer before Redis counts as unreachable.
COMMAND_TIMEOUT = 10.0
#: Seconds to establish a connection.
CONNECT_TIMEOUT = 2.0
#: How long (ms) a blocking read is kept short of its client's socket timeout.
BLOCK_MARGIN_MS = 1_000
#: The shortest block a blocking read asks for, however short the client's socket timeout.
MIN_BLOCK_MS = 100


def _options(overrides: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {
        "socket_timeout": COMMAND_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "retry_on_timeout": False,
        **library(),
    }
    options.update(_no_maintenance_notifications())
    options.update(overrides)
    return options


def library() -> dict[str, Any]:
    """What a client's connections report to Redis of their library (CLIENT SETINFO): redis-py's
    name and version, given where redis-py 8 would read the version from the package's metadata
    again for every connection it makes (redis-py 5 reads it once, at import)."""
    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # the oldest supported versions
        return {}
    return {"driver_info": DriverInfo(lib_version=redis.__version__)}


def _no_maintenance_notifications() -> dict[str, Any]:
    """Maintenance notifications off, where redis-py has them: while they are on (redis-py 8's
    default, "auto"), its async pool skips the check that finds a connection the server closed, and
    hands it out again, so the first command after a Redis restart fails on it."""
    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:  # the oldest supported versions have none
        return {}
    return {"maint_notifications_config": MaintNotificationsConfig(enabled=False)}


def sync_client(url: str, namespace: str | None = None, **overrides: Any) -> redis.Redis:
    """A ``redis.Redis`` for ``url`` with jobledger's timeouts and no resends (see the module); with
    ``namespace``, for that namespace's keys, wherever a Cluster keeps them."""
    return _made(redis.Redis.from_url(url, **_options(overrides)), url, namespace)


def async_client(url: str, namespace: str | None = None, **overrides: Any) -> redis.asyncio.Redis:
    """As :func:`sync_client`, a ``redis.asyncio.Redis``, whose connections are lean
    (:class:`LeanConnection`)."""
    client = _made(redis.asyncio.Redis.from_url(url, **_options(overrides)), url, namespace)
    pool = client.connection_pool
    pool.connection_class = _lean(pool.connection_class)
    return client


def _made(client: C, url: str, namespace: str | None) -> C:
    """``client`` routed to ``namespace``'s node and sending each command once."""
    _route(client, url, namespace)
    _no_resend(client)
    return client


class LeanConnection(redis.asyncio.connection.AbstractConnection):
    """An async connection that sends a command for less than redis-py's own does, the same bytes
    by redis-py's own code:

    - packed by hiredis, as redis-py's sync connections pack (its async ones pack in Python, an
      argument at a time, a large part of a worker's cost per no-op job); an argument
      hiredis's packer refuses goes to redis-py's, which packs it or refuses it as it always did;
    - written in its caller's task when the write cannot wait.  redis-py bounds each write by the
      socket timeout with ``asyncio.wait_for``, which before Python 3.12 runs the write as a task of
      its own, with a timer: a task, a timer and two more turns of the loop per command.  A
      command the transport takes whole while it holds nothing back (smaller than its high-water
      mark) cannot wait, so it needs no timeout: redis-py's own code writes it (its errors, its
      disconnect on failure) with the timeout lifted meanwhile.  Any other write is redis-py's,
      timeout and all."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        encoder = self.encoder
        utf8 = (encoder.encoding.lower().replace("_", "-"), encoder.encoding_errors) == ("utf-8", "strict")
        self._hiredis = _HIREDIS if utf8 else None  # which encodes str as UTF-8, strictly

    def pack_command(self, *args: Any) -> list[bytes]:
        if self._hiredis is not None:
            try:
                return self._hiredis.pack(*args)  # type: ignore[no-any-return]
            except redis.DataError:  # what some versions' hiredis packer takes not (a memoryview)
                pass
        return super().pack_command(*args)

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        timeout = self.socket_timeout
        if not timeout or not self._cannot_wait(command):
            return await super().send_packed_command(command, check_health)
        self.socket_timeout = None
        try:
            await super().send_packed_command(command, check_health)
        finally:
            self.socket_timeout = timeout

    async def disconnect(self, nowait: bool = False, *args: Any, **kwargs: Any) -> None:
        """redis-py drops a connection on an error with ``nowait``, but closes its transport
        gracefully, so the bytes it still holds (a command whose write timed out in a stalled Redis)
        are sent once Redis reads again: a command reported as failed would run after all.  Such a
        transport is aborted first, its buffer thrown away."""
        if nowait and self._writer is not None:
            self._writer.transport.abort()
        await super().disconnect(nowait, *args, **kwargs)

    def _cannot_wait(self, command: Any) -> bool:
        writer = self._writer
        if writer is None or not self.is_connected or self.health_check_interval:
            return False
        transport = writer.transport
        if transport.is_closing() or transport.get_write_buffer_size():
            return False
        size = len(command) if isinstance(command, bytes | str) else sum(len(part) for part in command)
        return size <= transport.get_write_buffer_limits()[1]


_lean_classes: dict[type[Any], type[LeanConnection]] = {}


def _lean(cls: type[redis.asyncio.connection.AbstractConnection]) -> type[LeanConnection]:
    """``cls`` sending its commands as :class:`LeanConnection` does (one such class for each)."""
    if cls not in _lean_classes:
        _lean_classes[cls] = type(cls.__name__, (LeanConnection, cls), {})
    return _lean_classes[cls]


def _route(client: redis.Redis | redis.asyncio.Redis, url: str, namespace: str | None) -> None:
    """Route the client's connections to ``namespace``'s node (set on the pool once it is made: some
    versions' ``from_url`` choose the connection class from the URL's scheme over any given)."""
    if namespace is None or not url.startswith(("redis://", "rediss://")):
        return
    options = routed(url, namespace, asynchronous=isinstance(client, redis.asyncio.Redis))
    pool = client.connection_pool
    pool.connection_class = options["connection_class"]
    pool.connection_kwargs["route"] = options["route"]


def _no_resend(client: redis.Redis | redis.asyncio.Redis) -> None:
    """No retry object at all on the client and its connections: every version then sends each
    command once (``retry`` is a constructor argument only in some versions, so it is set here)."""
    kwargs = client.connection_pool.connection_kwargs
    if "retry" in kwargs or hasattr(client, "retry"):
        retry_class = (
            redis.asyncio.retry.Retry if isinstance(client, redis.asyncio.Redis) else redis.retry.Retry
        )
        none = retry_class(NoBackoff(), 0)
        kwargs["retry"] = none
        if hasattr(client, "retry"):
            client.retry = none  # type: ignore[union-attr]


def block_ms(client: redis.Redis | redis.asyncio.Redis, wanted_ms: int) -> int:
    """How long a blocking read on ``client`` may block: ``wanted_ms``, cut to end at least
    :data:`BLOCK_MARGIN_MS` before the client's socket timeout (None: no timeout, no cut)."""
    timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
    if timeout is None:
        return wanted_ms
    return max(MIN_BLOCK_MS, min(wanted_ms, int(timeout * 1000) - BLOCK_MARGIN_MS))


def score_pairs(reply: Any) -> list[tuple[Any, float]]:
    """A raw ``ZRANGE ... WITHSCORES`` reply as (member, score) pairs: redis-py 8 gives pairs,
    older versions a flat list of member, score, member, score..."""
    if not reply:
        return []
    if isinstance(reply[0], (list, tuple)):
        return [(member, float(score)) for member, score in reply]
    return [(reply[i], float(reply[i + 1])) for i in range(0, len(reply), 2)]


def masked_url(url: str) -> str:
    """``url`` fit to print: its password, if any, as ``***`` (``redis://user:***@host:6379/0``)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None:
        return url
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + parts.netloc.rsplit("@", 1)[1]))

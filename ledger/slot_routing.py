"""On a Redis or Valkey Cluster, a ledger's connections go to the node that serves its hash tag.

Every key of a ledger starts with ``{NAMESPACE}:``, so all of them hash to one slot of a Cluster and
every script, ``MULTI`` and blocking read of that ledger is served whole by one node.  A client made for
a namespace (:func:`jobledger.ledger.redis_clients.sync_client` with ``namespace=``) therefore needs no
cluster protocol: each time one of its connections is made, it first asks a node it knows
(``CLUSTER SLOTS``) which node serves that slot, and connects there.  A connection is made again after
any error that broke it, so a node restarted, a failover or a slot moved is followed by the next
connection, with no command ever resent (a ``MOVED`` reply means the script did not run).

Against a server that is not a Cluster, the first probe says so (its ``CLUSTER SLOTS`` is refused) and
the connections go to the URL's server, as they would without this module.

Decided: one slot per namespace, so one namespace's throughput is bounded by one node; namespaces
spread over the nodes.  The URL may name any node of the Cluster.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import redis
import redis.asyncio
import redis.asyncio.connection
import redis.connection
from redis.crc import key_slot

from jobledger.ledger.keys import Keys
from jobledger.ledger.sync_or_async import Work, awaited, done

#: What a server that is not a Cluster answers to ``CLUSTER SLOTS`` (Redis and Valkey alike).
_NOT_A_CLUSTER = "cluster support disabled"


class SlotRoute:
    """Where the keys of one namespace live: shared by every connection of one client.

    It remembers whether the server is a Cluster and the nodes it last heard of, so that a probe can
    go to another node when the URL's is down."""

    def __init__(self, namespace: str) -> None:
        self.slot = key_slot(Keys(namespace).ledger_prefix.encode())
        self.cluster: bool | None = None  # None: not yet asked
        self.nodes: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def candidates(self, seed: tuple[str, int]) -> list[tuple[str, int]]:
        """The nodes to ask, the URL's first."""
        with self._lock:
            return [seed, *(node for node in self.nodes if node != seed)]

    def learn(self, asked: tuple[str, int], reply: Any) -> tuple[str, int]:
        """Read a ``CLUSTER SLOTS`` reply from ``asked``: remember the nodes, return the slot's owner."""
        owner: tuple[str, int] | None = None
        nodes: list[tuple[str, int]] = []
        for entry in reply or []:
            start, end, master = int(entry[0]), int(entry[1]), entry[2]
            node = _address(asked, master)
            if node not in nodes:
                nodes.append(node)
            if start <= self.slot <= end:
                owner = node
        if owner is None:
            raise redis.ConnectionError(
                f"no node of the Cluster serves slot {self.slot} (cluster not ready?)"
            )
        with self._lock:
            self.cluster = True
            self.nodes = nodes
        return owner

    def not_a_cluster(self) -> None:
        with self._lock:
            self.cluster = False


def _address(asked: tuple[str, int], master: Any) -> tuple[str, int]:
    host = master[0].decode() if isinstance(master[0], bytes) else str(master[0])
    return (host or asked[0], int(master[1]))


def _is_refusal(exc: redis.ResponseError) -> bool:
    """Whether the probe's answer means: connect to the URL's server.  A server that is not a Cluster
    says so; an ACL user not allowed ``CLUSTER`` is taken at its URL too (on a Cluster its commands
    for another node's slot are then answered ``MOVED``, which names the node to give instead)."""
    text = str(exc)
    return _NOT_A_CLUSTER in text or text.startswith("NOPERM")


class _Routed:
    """What both kinds of routed connection share: the route, and how to find the slot's owner."""

    #: The plain connection a probe is made with (TLS or not, sync or async).
    _PROBE: ClassVar[type[Any]]
    host: str
    port: int

    def __init__(self, *args: Any, route: SlotRoute, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._route = route
        self._kwargs = dict(kwargs)
        self._seed = (self.host, self.port)

    def _finding_owner(self) -> Work[tuple[str, int]]:
        """The node serving the slot, asked of each node known in turn (see :mod:`.sync_or_async`)."""
        problem: Exception | None = None
        for host, port in self._route.candidates(self._seed):
            probe = self._PROBE(**{**self._kwargs, "host": host, "port": port})
            try:
                yield probe.connect()
                yield probe.send_command("CLUSTER", "SLOTS")
                return self._route.learn((host, port), (yield probe.read_response()))
            except redis.ResponseError as exc:
                if not _is_refusal(exc):
                    raise
                self._route.not_a_cluster()
                return self._seed
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                problem = exc
            finally:
                yield probe.disconnect()
        raise redis.ConnectionError(f"no node of the Cluster answers: {problem}")


class RoutedConnection(_Routed, redis.connection.Connection):
    """A connection that goes to the node serving its route's slot (see the module).  It and
    :class:`AsyncRoutedConnection` stay two classes, each deriving from its kind of redis-py
    connection; they share all but the call that connects."""

    _PROBE: ClassVar[type[Any]] = redis.connection.Connection

    def _connect(self) -> Any:
        if self._route.cluster is not False:
            self.host, self.port = done(self._finding_owner())
        return super()._connect()


class RoutedSSLConnection(RoutedConnection, redis.connection.SSLConnection):
    """:class:`RoutedConnection` over TLS (``rediss://``)."""

    _PROBE = redis.connection.SSLConnection


class AsyncRoutedConnection(_Routed, redis.asyncio.connection.Connection):
    """:class:`RoutedConnection` for ``redis.asyncio``."""

    _PROBE: ClassVar[type[Any]] = redis.asyncio.connection.Connection

    async def _connect(self) -> Any:
        if self._route.cluster is not False:
            self.host, self.port = await awaited(self._finding_owner())
        return await super()._connect()


class AsyncRoutedSSLConnection(AsyncRoutedConnection, redis.asyncio.connection.SSLConnection):
    """:class:`AsyncRoutedConnection` over TLS (``rediss://``)."""

    _PROBE = redis.asyncio.connection.SSLConnection


def routed(url: str, namespace: str, *, asynchronous: bool) -> dict[str, Any]:
    """The client options that route a client for ``url`` to ``namespace``'s node."""
    tls = url.startswith("rediss://")
    if asynchronous:
        cls: type = AsyncRoutedSSLConnection if tls else AsyncRoutedConnection
    else:
        cls = RoutedSSLConnection if tls else RoutedConnection
    return {"connection_class": cls, "route": SlotRoute(namespace)}


def slot_of(namespace: str) -> int:
    """The Cluster slot of every key of ``namespace``."""
    return int(key_slot(Keys(namespace).ledger_prefix.encode()))


def in_slot_of(name: str, namespace: str) -> str:
    """``name`` as the name of a namespace whose keys share ``namespace``'s slot: unchanged if they
    already do, else with the first ``-N`` suffix that makes them.  A scratch or rebuilt namespace is
    named so, to be served by the same node as the ledger it is built from (on a single server the
    suffix is harmless)."""
    want = slot_of(namespace)
    if slot_of(name) == want:
        return name
    n = 0
    while slot_of(f"{name}-{n}") != want:
        n += 1
    return f"{name}-{n}"


def on_cluster(client: redis.Redis) -> bool:
    """Whether ``client`` (made for a namespace) has found its server to be a Cluster."""
    return done(asking_cluster(client))


async def on_cluster_async(client: redis.asyncio.Redis) -> bool:
    """As :func:`on_cluster`, for an async client."""
    return await awaited(asking_cluster(client))


def asking_cluster(client: redis.Redis | redis.asyncio.Redis) -> Work[bool]:
    """:func:`on_cluster` on either kind of client (see :mod:`jobledger.ledger.sync_or_async`)."""
    route = client.connection_pool.connection_kwargs.get("route")
    if isinstance(route, SlotRoute) and route.cluster is None:
        yield client.ping()  # a connection is made, and the route learns what the server is
    return isinstance(route, SlotRoute) and route.cluster is True

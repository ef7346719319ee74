"""A ledger split into partitions, so that it spreads over the nodes of a Redis or Valkey Cluster.

One namespace is one ledger under the hash tag ``{NAMESPACE}``, which a Cluster keeps in one slot on
one node.  Split into ``n`` partitions (``n`` > 1), each partition ``p`` is a whole ledger of its own
under ``{NAMESPACE-p}`` (or ``{NAMESPACE-p.k}``: see :attr:`Partitioning.namespaces`) -- its
stream, its projections, its scripts: every command still checks,
appends and applies in one script on one slot -- and what lives where follows from names alone:

- a queue lives in the partition it was placed in when first created, with its settings, its jobs
  and its launchers (see :mod:`jobledger.ledger.placements`: placements are stored, and cached in
  :attr:`Partitioning.placed`); a ledger made before placements existed put it at
  ``crc32(name) % n``, where it is found;
- a job's id names its partition: partition ``p`` hands out ``p + n``, ``p + 2n``, ... (the
  ``partition`` key of each partition holds ``"n:p"``, which the scripts that hand out ids read), so
  ``id % n`` finds it; a launcher's id likewise;
- what belongs to no queue -- API tokens -- lives in partition 0, the home partition.

With ``n`` = 1 (the default on a single server) the namespace itself is the one partition, exactly
as it always was: no ``partition`` key, ids 1, 2, 3, ...

The count is stored in the base namespace (``{NAMESPACE}:partitions``) by whoever first opens the
ledger, and read by everyone after: a server cannot start with another count, since every id and
every queue's place depends on it.  A namespace that already holds a ledger and no stored count is
a ledger of one partition (it was made before partitions existed).
"""

from __future__ import annotations

import functools
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio

from jobledger.ledger.errors import Unavailable
from jobledger.ledger.keys import Keys
from jobledger.ledger.slot_routing import slot_of
from jobledger.ledger.sync_or_async import Work, done

#: The default count on a Cluster: enough to spread over a few nodes, few enough that reads spanning
#: every partition (tags, queue listings, the event feed) stay cheap.
CLUSTER_PARTITIONS = 16
#: How many slots a Cluster has.
SLOTS = 16384
#: The largest count a ledger may be split into.
MAX_PARTITIONS = 1024


@dataclass(frozen=True)
class Route:
    """Which partition(s) a command or a read concerns, carried by each
    :class:`~jobledger.ledger.commands.Call` and :class:`~jobledger.ledger.reads.Read`: a queue's, a
    job's or a launcher's (by its id), or the home partition's.  A read with ``spread`` runs on every
    partition and ``spread`` makes one answer of their answers, in partition order.  A batch over ids
    of several partitions runs as one call per partition: ``part(indices, with_queue)`` is the call
    for the items at those indices of ``ids`` (``with_queue``: the call of the queue's partition, when
    the route names a queue too), and ``join`` puts the parts' results, each with its indices, back
    into one."""

    queue: str | None = None
    ids: tuple[int, ...] = ()
    home: bool = False
    spread: Callable[[list[Any]], Any] | None = None
    part: Callable[[list[int], bool], Any] | None = None
    join: Callable[[list[tuple[list[int], Any]]], Any] | None = None


#: A command or read that concerns no partition in particular has no route; on a ledger of one
#: partition it runs there, on a split ledger it is a mistake (see the runner).
UNROUTED = Route()
#: Things of the whole ledger that belong to no queue (API tokens): the home partition.
HOME = Route(home=True)


def spread(merge: Callable[[list[Any]], Any]) -> Route:
    """The route of a read over every partition, its answers made one by ``merge``."""
    return Route(spread=merge)


def queue_route(name: str) -> Route:
    return Route(queue=name)


def id_route(ident: int) -> Route:
    return Route(ids=(ident,))


def partition_route(partition: int) -> Route:
    """The route of partition ``partition`` itself (e.g. a read of its stream): ids are found by
    ``id % n``, and ``partition`` < n names it."""
    return Route(ids=(partition,))


class PartitionCountMismatch(Unavailable):
    """The ledger is stored with another partition count than the one asked for: nothing can be
    served until the setting is changed."""


@dataclass(frozen=True)
class Partitioning:
    """Where each thing of a ledger of ``count`` partitions lives."""

    namespace: str
    count: int = 1
    #: The placements this process has looked up, queue name -> partition: a queue never moves, so
    #: an entry never goes stale (see :mod:`jobledger.ledger.placements`).
    placed: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_PARTITIONS:
            raise ValueError(f"partitions must be 1 to {MAX_PARTITIONS}, not {self.count}")

    @functools.cached_property
    def namespaces(self) -> list[str]:
        """Each partition's namespace, in partition order: ``NAMESPACE-p``, or ``NAMESPACE-p.k`` with
        the first ``k`` that puts it in the ``p``-th of ``count`` equal ranges of the Cluster's 16,384
        slots, so that the partitions lie evenly over the slots and a Cluster whose nodes serve equal
        ranges serves equal numbers of them."""
        if self.count == 1:
            return [self.namespace]
        names = []
        for p in range(self.count):
            low, high = p * SLOTS // self.count, (p + 1) * SLOTS // self.count
            name, k = f"{self.namespace}-{p}", 0
            while not low <= slot_of(name) < high:
                name, k = f"{self.namespace}-{p}.{k}", k + 1
            names.append(name)
        return names

    def index_of(self, namespace: str) -> int | None:
        """Which partition ``namespace`` is (None: the ledger itself, not split), read from its name
        alone, whatever the count: ``NAMESPACE-p`` or ``NAMESPACE-p.k`` is partition ``p``.
        :class:`ValueError` for a namespace of another ledger."""
        if namespace == self.namespace:
            return None
        match = re.fullmatch(re.escape(self.namespace) + r"-(\d+)(?:\.\d+)?", namespace)
        if match is None:
            raise ValueError(f"{namespace!r} is not a partition of the ledger {self.namespace!r}")
        return int(match.group(1))

    def of_queue(self, name: str) -> int:
        """The partition of queue ``name`` (and of its jobs and launchers), as looked up already
        (:func:`jobledger.ledger.placements.locating`, which every router command does first);
        LookupError when this process has not looked it up."""
        if self.count == 1:
            return 0
        if (partition := self.placed.get(name)) is None:
            raise LookupError(f"the partition of queue {name!r} has not been looked up")
        return partition

    def placed_or_every(self, name: str) -> list[int]:
        """The partition of queue ``name`` when looked up already, else every partition (for what
        only narrows a read to it, such as the event feed's)."""
        partition = 0 if self.count == 1 else self.placed.get(name)
        return list(range(self.count)) if partition is None else [partition]

    def hashed(self, name: str) -> int:
        """Where a ledger made before placements put queue ``name``, and where a name placed nowhere
        is routed: a hash of the name."""
        return zlib.crc32(name.encode()) % self.count

    def of_id(self, ident: int) -> int:
        """The partition that handed out a job's or a launcher's id."""
        return ident % self.count

    def of_route(self, route: Route, what: str, queue_at: int | None = None) -> list[int]:
        """The partitions ``route`` touches, in order (its queue's: ``queue_at``, else as looked up);
        ``what`` names the command or read for the error when it names none."""
        if self.count == 1:
            return [0]
        found = {self.of_id(i) for i in route.ids}
        if route.queue is not None:
            found.add(self.of_queue(route.queue) if queue_at is None else queue_at)
        if route.home:
            found.add(0)
        if not found:
            raise ValueError(f"{what} names no partition: it cannot run on a ledger split into partitions")
        return sorted(found)

    def marker(self, partition: int) -> str | None:
        """What the ``partition`` key of partition ``partition`` holds (None: no key, one partition)."""
        return None if self.count == 1 else f"{self.count}:{partition}"


def node_groups(partitioning: Partitioning, slots: Any) -> list[str]:
    """Each partition's node ("host:port"), in partition order, read from a ``CLUSTER SLOTS``
    reply."""
    ranges = [(int(e[0]), int(e[1]), f"{_text(e[2][0])}:{_text(e[2][1])}") for e in slots or []]
    out = []
    for namespace in partitioning.namespaces:
        slot = slot_of(namespace)
        out.append(next((node for low, high, node in ranges if low <= slot <= high), "?"))
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _stored_count(reply: Any) -> int | None:
    return int(reply) if reply is not None else None


def _refusal(namespace: str, stored: int, wanted: int) -> PartitionCountMismatch:
    return PartitionCountMismatch(
        f"the ledger '{namespace}' is split into {stored} partition(s); it cannot be opened with "
        f"{wanted}: leave the partitions setting out, or set it to {stored}"
    )


def settling(
    client: redis.Redis | redis.asyncio.Redis, namespace: str, wanted: int | None, default: int = 1
) -> Work[Partitioning]:
    """:func:`settle` on either kind of client (see :mod:`jobledger.ledger.sync_or_async`)."""
    base = Keys(namespace)
    stored = _stored_count((yield client.get(base.build("partitions"))))
    if stored is None:
        existing = yield client.exists(base.build("events"))
        count = 1 if existing else (wanted or default)
        yield client.set(base.build("partitions"), count, nx=True)
        stored = _stored_count((yield client.get(base.build("partitions"))))
        assert stored is not None
    if wanted is not None and wanted != stored:
        raise _refusal(namespace, stored, wanted)
    return Partitioning(namespace, stored)


def settle(client: redis.Redis, namespace: str, wanted: int | None, default: int = 1) -> Partitioning:
    """The partitioning of ``namespace``: the stored count, or, when none is stored yet, ``wanted``
    (else ``default``; a namespace holding a ledger already: 1), stored now for everyone after.
    ``client`` must reach the base namespace's slot.  PartitionCountMismatch when ``wanted`` is not
    the stored count."""
    return done(settling(client, namespace, wanted, default))


def marker_key(partitioning: Partitioning, partition: int) -> tuple[str, str] | None:
    """Partition ``partition``'s ``partition`` key and what it holds, to be written once (SET NX)
    before it hands out any id; None for a ledger of one partition, which has no such key."""
    marker = partitioning.marker(partition)
    if marker is None:
        return None
    return Keys(partitioning.namespaces[partition]).build("partition"), marker

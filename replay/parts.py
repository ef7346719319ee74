"""A ledger's partitions as replay, verify, export and import work on them: each partition's namespace
with a client of its own (on a Cluster, connected to that namespace's node), the count a namespace
is stored with, read without storing one, and a target split as its source.

A ledger of one partition is one part: the namespace itself, as before partitions existed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning, marker_key, settle
from jobledger.ledger.redis_clients import sync_client
from jobledger.replay.rebuild import NamespaceNotEmpty

#: The keys a ledger holds before its first event: its count, each partition's marker.
_BOOKKEEPING = ("partitions", "partition")


@dataclass(frozen=True)
class Part:
    """Partition ``index`` of a ledger: its namespace, and a client that reaches it."""

    index: int
    namespace: str
    client: redis.Redis


def stored_count(client: redis.Redis, namespace: str) -> int | None:
    """The partition count stored for ``namespace`` (None: none is; a ledger made before partitions,
    or no ledger yet).  Nothing is written."""
    raw = client.get(Keys(namespace).build("partitions"))
    return None if raw is None else int(raw)


@contextmanager
def parts_of(url: str, partitioning: Partitioning) -> Iterator[list[Part]]:
    """A part per partition of ``partitioning``, each with its client (closed after the block)."""
    parts = [Part(p, ns, sync_client(url, ns)) for p, ns in enumerate(partitioning.namespaces)]
    try:
        yield parts
    finally:
        for part in parts:
            part.client.close()


def ensure_empty_ledger(parts: list[Part]) -> None:
    """Every part holds no key but the ledger's count and markers (which a server stores when it
    first opens a namespace); NamespaceNotEmpty otherwise."""
    for part in parts:
        keys = Keys(part.namespace)
        for raw in part.client.scan_iter(match=keys.pattern(), count=1000):
            relative = (raw.decode() if isinstance(raw, bytes) else str(raw))[len(keys.prefix) :]
            if relative not in _BOOKKEEPING:
                raise NamespaceNotEmpty(f"namespace '{part.namespace}' is not empty; it needs an empty one")


def mark(url: str, parts: list[Part], partitioning: Partitioning) -> None:
    """Store ``partitioning``'s count in its base namespace and each part's marker, as opening the
    ledger does, so that a server opens what was written as split this way.  Nothing is stored for
    a ledger of one partition, which has neither."""
    if partitioning.count == 1:
        return
    base = sync_client(url, partitioning.namespace)  # on a Cluster, the base namespace's own node
    try:
        settle(base, partitioning.namespace, partitioning.count, partitioning.count)
    finally:
        base.close()
    for part in parts:
        marked = marker_key(partitioning, part.index)
        if marked is not None:
            part.client.set(*marked, nx=True)

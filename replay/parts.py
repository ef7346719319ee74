"""A ledger's partitions as replay, verify, export and import work on them: each partition's namespace
with a client of its own (on a Cluster, connected to that namespace's node), the count a namespace
is stored with, read without storing one, and a target split as its source.

A ledger of one partition is one part: the namespace itself, as before partitions existed.

Rebuilding a split ledger (:func:`rebuild_parts`) folds the partitions that live on different nodes
at once, a thread per node: each node runs its own scripts, so the rebuild takes the time of the
busiest node rather than the sum.  The partitions of one node are folded one after the other (one
server runs one script at a time: more threads would only take turns).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning, marker_key, settle
from jobledger.ledger.redis_clients import sync_client
from jobledger.projections.archive import ArchiveSource
from jobledger.replay.rebuild import NamespaceNotEmpty, rebuild

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


@dataclass(frozen=True)
class PartRebuild:
    """One partition's rebuild: its events (``source``, up to ``until``) into ``target``."""

    source: Part
    target: Part
    until: str | None


class RebuildStopped(Exception):
    """A partition's rebuild stopped between two batches because another one failed or was stopped."""


def node_of(client: redis.Redis) -> tuple[object, ...]:
    """The server a client reaches (its host, port, socket path and database)."""
    kwargs = client.connection_pool.connection_kwargs
    return tuple(kwargs.get(name) for name in ("host", "port", "path", "db"))


def rebuild_parts(
    work: list[PartRebuild],
    batch: int = 2000,
    progress: Callable[[int], None] | None = None,
    archive: ArchiveSource | None = None,
) -> int:
    """Rebuild every partition of ``work``, those of different nodes at once (a thread per node, see
    the module's docstring); the number of events applied.  ``progress`` gets the events applied so
    far, in all.  The first failure (or an interrupt of the caller) stops the other partitions at
    their next batch and is raised once they have stopped."""
    nodes: dict[tuple[object, ...], list[PartRebuild]] = {}
    for item in work:
        nodes.setdefault(node_of(item.target.client), []).append(item)
    done = [0] * len(work)
    index = {id(item): i for i, item in enumerate(work)}
    lock, stopping = threading.Lock(), threading.Event()

    def advanced(i: int, count: int) -> None:
        if stopping.is_set():
            raise RebuildStopped("stopped")
        with lock:
            done[i] = count
            if progress:
                progress(sum(done))

    def fold_node(items: list[PartRebuild]) -> int:
        applied = 0
        for item in items:
            step = functools.partial(advanced, index[id(item)])
            applied += rebuild(
                item.source.client, item.source.namespace, item.target.namespace, item.until, batch,
                step, into=item.target.client, archive=archive,
            )  # fmt: skip
        return applied

    if len(nodes) <= 1:
        return sum(fold_node(items) for items in nodes.values())
    with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="replay-node") as pool:
        futures = [pool.submit(fold_node, items) for items in nodes.values()]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
        finally:
            if not all(f.done() for f in futures):  # a failure, or an interrupt here
                stopping.set()
            wait(futures)
        failed = [exc for f in futures if (exc := f.exception()) and not isinstance(exc, RebuildStopped)]
        if failed:
            raise failed[0]
        return sum(f.result() for f in futures)

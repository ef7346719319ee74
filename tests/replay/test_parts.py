"""Rebuilding a split ledger: the partitions of different nodes are folded at once, a thread per node,
each giving exactly its live projections; a failure in one stops the others.  Two databases of the
test server stand for two nodes (a client's node is its host, port and database)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay import parts as parts_module
from jobledger.replay.compare import compare
from jobledger.replay.parts import Part, PartRebuild, node_of, rebuild_parts
from jobledger.replay.rebuild import NamespaceNotEmpty
from jobledger.replay.verify import drop_namespace
from tests.support.replay import workload


@pytest.fixture
def other_db(client: redis.Redis, redis_url: str) -> Iterator[redis.Redis]:
    """A client of another database of the test server: another node, as far as the rebuild knows."""
    if client.info("server").get("redis_mode") == "cluster":
        pytest.skip("a Cluster has one database")
    other = redis.Redis.from_url(redis_url, db=1)
    yield other
    other.close()


def _two_ledgers(client: redis.Redis, other: redis.Redis, namespace: str) -> list[PartRebuild]:
    work = []
    for index, c in enumerate((client, other)):
        source = f"{namespace}-p{index}"
        workload(Ledger(c, source))
        work.append(PartRebuild(Part(index, source, c), Part(index, f"{source}-rebuilt", c), None))
    return work


def _drop(work: list[PartRebuild]) -> None:
    for item in work:
        drop_namespace(item.source.client, item.source.namespace)
        drop_namespace(item.target.client, item.target.namespace)


def test_partitions_of_two_nodes_are_rebuilt_at_once_each_exactly(
    client: redis.Redis, other_db: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _two_ledgers(client, other_db, namespace)
    both = threading.Barrier(2, timeout=10)  # broken (and the test failed) unless both folds run at once
    real = parts_module.rebuild

    def together(*args: Any, **kwargs: Any) -> int:
        both.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(parts_module, "rebuild", together)
    seen: list[int] = []
    try:
        assert node_of(client) != node_of(other_db)
        applied = rebuild_parts(work, batch=7, progress=seen.append)
        total = sum(int(item.source.client.xlen(Keys(item.source.namespace).events)) for item in work)
        assert applied == total and seen[-1] == total and seen == sorted(seen)
        for item in work:
            assert compare(item.source.client, item.source.namespace, item.target.namespace) == []
    finally:
        _drop(work)


def test_a_failed_partition_stops_the_others_and_is_raised(
    client: redis.Redis, other_db: redis.Redis, namespace: str
) -> None:
    work = _two_ledgers(client, other_db, namespace)
    try:
        other_db.set(f"{{{work[1].target.namespace}}}:stray", "1")  # the second target is not empty
        with pytest.raises(NamespaceNotEmpty):
            rebuild_parts(work, batch=7)
    finally:
        _drop(work)


def test_partitions_of_one_node_are_rebuilt_one_after_the_other(
    client: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _two_ledgers(client, client, namespace)
    threads: set[str] = set()
    real = parts_module.rebuild

    def recorded(*args: Any, **kwargs: Any) -> int:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(parts_module, "rebuild", recorded)
    try:
        rebuild_parts(work, batch=50)
        assert threads == {threading.current_thread().name}
        for item in work:
            assert compare(client, item.source.namespace, item.target.namespace) == []
    finally:
        _drop(work)

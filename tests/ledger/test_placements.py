"""Where the queues of a ledger split into partitions live: placed when first created where the
fewest are, stored so that every process agrees, assigned once however many create at once, cached,
and found where a ledger made before placements put them."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
import redis

from jobledger.ledger import commands
from jobledger.ledger.errors import NotFound
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned, open_ledger, open_ledger_async
from jobledger.ledger.placements import ASSIGN, placement_keys
from jobledger.ledger.requests import JobOptions, QueueSettings

NAMES = [f"queue-{n}" for n in range(30)]


def close(router: Partitioned) -> None:
    for runner in router.runners:
        runner.client.close()


def counting(router: Partitioned, command: str) -> list[Any]:
    """The calls of ``command`` (a method of the home partition's client) made from now on."""
    client, calls = router.runners[0].client, []
    original = getattr(client, command)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    setattr(client, command, counted)
    return calls


def stored(client: redis.Redis, router: Partitioned) -> dict[str, int]:
    found = client.hgetall(placement_keys(router.partitioning)[0])
    return {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in found.items()}


def test_thirty_queues_over_sixteen_partitions_differ_by_one_at_most(redis_url: str, namespace: str) -> None:
    router = open_ledger(redis_url, namespace, 16)
    try:
        for name in NAMES:
            router.run(commands.put_queue(name, QueueSettings()))
        per_partition = Counter(router.partitioning.of_queue(name) for name in NAMES)
        assert set(per_partition) == set(range(16))
        assert max(per_partition.values()) - min(per_partition.values()) <= 1
        for name in NAMES:  # each queue's settings are in its partition's namespace
            runner = router.for_queue(name)
            assert runner.client.exists(runner.keys.queue(name)) == 1
    finally:
        close(router)


def test_a_placement_is_stored_and_every_process_finds_it(
    redis_url: str, namespace: str, client: redis.Redis
) -> None:
    first, second = open_ledger(redis_url, namespace, 4), open_ledger(redis_url, namespace, 4)
    try:
        for name in NAMES[:6]:
            first.run(commands.put_queue(name, QueueSettings()))
        assert stored(client, first) == {name: first.partitioning.of_queue(name) for name in NAMES[:6]}
        for name in NAMES[:6]:
            job = second.run(commands.create_job(name, JobOptions()))
            assert job.id % 4 == first.partitioning.of_queue(name) == second.partitioning.of_queue(name)
    finally:
        close(first)
        close(second)


def test_a_lookup_is_cached_and_a_queue_nowhere_is_not(redis_url: str, namespace: str) -> None:
    router, other = open_ledger(redis_url, namespace, 4), open_ledger(redis_url, namespace, 4)
    try:
        router.run(commands.put_queue("q", QueueSettings()))
        asked = counting(other, "hmget")
        for _ in range(3):
            other.run(commands.create_job("q", JobOptions()))
        assert len(asked) == 1  # looked up once, then known
        for _ in range(2):
            with pytest.raises(NotFound):
                other.run(commands.create_job("nowhere", JobOptions()))
        assert len(asked) == 3 and "nowhere" not in other.partitioning.placed
    finally:
        close(router)
        close(other)


def test_two_servers_creating_the_same_queues_at_once_agree(redis_url: str, namespace: str) -> None:
    async def scenario() -> list[dict[str, int]]:
        routers = [await open_ledger_async(redis_url, namespace, 8) for _ in range(2)]
        try:
            await asyncio.gather(
                *(r.run(commands.put_queue(name, QueueSettings())) for name in NAMES for r in routers)
            )
            return [dict(r.partitioning.placed) for r in routers]
        finally:
            for router in routers:
                for runner in router.runners:
                    await runner.client.aclose()

    first, second = asyncio.run(scenario())
    assert first == second and set(first) == set(NAMES)
    router = open_ledger(redis_url, namespace, 8)
    try:
        for name in NAMES:  # each queue exists in exactly the one partition it was placed in
            held = [p for p, r in enumerate(router.runners) if r.client.exists(r.keys.queue(name))]
            assert held == [first[name]]
        load = router.runners[0].client.hgetall(placement_keys(router.partitioning)[1])
        assert sum(int(v) for v in load.values()) == len(NAMES)  # each name counted once
    finally:
        close(router)


def test_a_queue_of_a_ledger_made_before_placements_is_found_where_its_hash_put_it(
    redis_url: str, namespace: str, client: redis.Redis
) -> None:
    router = open_ledger(redis_url, namespace, 4)
    try:
        names = NAMES[:8]
        for name in names:  # as an older version made them: straight into the hash's partition
            router.runners[router.partitioning.hashed(name)].run(commands.put_queue(name, QueueSettings()))
        assert stored(client, router) == {}
        fresh = open_ledger(redis_url, namespace, 4)
        try:
            for name in names:
                job = fresh.run(commands.create_job(name, JobOptions()))
                assert job.id % 4 == fresh.partitioning.hashed(name)
            fresh.run(commands.put_queue(names[0], QueueSettings(timeout=5_000)))  # an update stays put
            assert fresh.partitioning.of_queue(names[0]) == fresh.partitioning.hashed(names[0])
        finally:
            close(fresh)
        assert stored(client, router) == {name: router.partitioning.hashed(name) for name in names}
    finally:
        close(router)


def test_a_queue_deleted_and_created_again_keeps_its_partition(redis_url: str, namespace: str) -> None:
    router = open_ledger(redis_url, namespace, 4)
    try:
        for name in NAMES[:3]:
            router.run(commands.put_queue(name, QueueSettings()))
        where = router.partitioning.of_queue(NAMES[2])
        router.run(commands.delete_queue(NAMES[2]))
        fresh = open_ledger(redis_url, namespace, 4)
        try:
            fresh.run(commands.put_queue(NAMES[2], QueueSettings()))
            assert fresh.partitioning.of_queue(NAMES[2]) == where
        finally:
            close(fresh)
    finally:
        close(router)


def test_a_ledger_of_one_partition_stores_no_placement_and_asks_nothing(
    redis_url: str, namespace: str, client: redis.Redis
) -> None:
    router = open_ledger(redis_url, namespace)
    try:
        asked, evals = counting(router, "hmget"), counting(router, "eval")
        router.run(commands.put_queue("q", QueueSettings()))
        router.run(commands.create_job("q", JobOptions()))
        assert asked == [] and evals == [] and router.partitioning.placed == {}
        assert client.keys(f"*{namespace}*#*") == []
        assert client.exists(Keys(namespace).queue("q")) == 1
    finally:
        close(router)


def test_a_new_queue_goes_to_the_node_with_fewest_then_its_partition_with_fewest(
    client: redis.Redis, namespace: str
) -> None:
    """Sixteen partitions lying 6 / 5 / 5 over three nodes: thirty queues fall 10 / 10 / 10."""
    nodes = ["a"] * 6 + ["b"] * 5 + ["c"] * 5
    keys = [f"{{{namespace}-0}}#placed", f"{{{namespace}-0}}#load"]
    placed = [int(client.eval(ASSIGN, 2, *keys, name, "", *nodes)) for name in NAMES]
    per_node = Counter(nodes[p] for p in placed)
    assert per_node == {"a": 10, "b": 10, "c": 10}
    per_partition = Counter(placed)
    assert max(per_partition.values()) - min(per_partition.values()) <= 1
    assert int(client.eval(ASSIGN, 2, *keys, NAMES[0], "3", *nodes)) == placed[0]  # assigned once
    client.delete(*keys)

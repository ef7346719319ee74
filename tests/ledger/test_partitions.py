"""A ledger split into partitions, on one server: each partition is a whole ledger under its own hash
tag, a queue's commands run in its partition, ids name their partition, reads that span queues fan
out, batches over jobs of several partitions are split and put back in order, the count is stored and
another refused, and each partition replays to exactly its projections."""

from __future__ import annotations

import asyncio

import pytest
import redis

from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import AsyncPartitioned, Partitioned, open_ledger, open_ledger_async
from jobledger.ledger.partitions import PartitionCountMismatch, Partitioning
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.watch import LedgerWatch, queue_topic
from jobledger.projections import readers, tokens
from jobledger.replay.placement import misplaced
from jobledger.replay.verify import verify

QUEUES = [f"q{n}" for n in range(12)]


def split(redis_url: str, namespace: str, count: int = 4) -> Partitioned:
    return open_ledger(redis_url, namespace, count)


def close(router: Partitioned) -> None:
    for runner in router.runners:
        runner.client.close()


def with_jobs(router: Partitioned, per_queue: int = 3) -> dict[str, list[int]]:
    made: dict[str, list[int]] = {}
    for name in QUEUES:
        router.run(commands.put_queue(name, QueueSettings(timeout=60_000)))
        made[name] = [
            router.run(commands.create_job(name, JobOptions(tags=["all", name]))).id for _ in range(per_queue)
        ]
    return made


def test_queues_spread_over_the_partitions_and_each_id_names_its_own(redis_url: str, namespace: str) -> None:
    router = split(redis_url, namespace)
    try:
        made = with_jobs(router)
        where = {name: router.partitioning.of_queue(name) for name in QUEUES}
        assert len(set(where.values())) > 1  # twelve queues do not all hash to one of four
        for name, ids in made.items():
            assert [i % 4 for i in ids] == [where[name]] * 3
            assert ids == sorted(ids) and len(set(ids)) == 3
            # the queue's keys and its jobs' are in its partition's namespace, and nowhere else
            mine = Keys(router.partitioning.namespaces[where[name]])
            assert router.runners[0].client.exists(mine.queue(name), *(mine.job(i) for i in ids)) == 4
            assert router.run(commands.create_job(name, JobOptions())).id % 4 == where[name]
        all_ids = sorted(i for ids in made.values() for i in ids)
        assert len(set(all_ids)) == len(all_ids)
        assert router.read(readers.tagged("all")) == all_ids
        assert router.read(readers.queue_names()) == sorted(QUEUES)
        info = router.read(readers.info())
        assert list(info["queues"]) == sorted(QUEUES)
        assert info["statistics"]["total_jobs_created"] == len(all_ids) + len(QUEUES)
        assert router.read(readers.status_counts(QUEUES[:2]))[QUEUES[1]]["queued"] == 4
        assert router.read(readers.job(made["q5"][1]))["queue"] == "q5"
        with pytest.raises(NotFound):
            router.read(readers.job(10_000 + 4 * 1000 + 1))
        # a read over the home partition and a job of another cannot run as one read
        with pytest.raises(ValueError, match="spans partitions"):
            router.read(tokens.token("0" * 64, next(ids[0] for name, ids in made.items() if where[name])))
    finally:
        close(router)


def test_a_batch_over_jobs_of_several_partitions_is_split_and_answered_in_order(
    redis_url: str, namespace: str
) -> None:
    router = split(redis_url, namespace)
    try:
        made = with_jobs(router, per_queue=1)
        started = [router.run(commands.fetch_jobs(name))[0] for name in QUEUES]
        updates = [(job.id, JobUpdate(status="completed", attempt=job.attempt)) for job in started]
        updates.insert(5, (started[0].id, JobUpdate(status="completed", attempt=99)))  # a stale attempt
        outcomes = router.run(commands.update_jobs(updates))
        assert isinstance(outcomes[5], Conflict)
        assert [o for i, o in enumerate(outcomes) if i != 5] == [1] * len(QUEUES)
        assert all(router.read(readers.job_status(ids[0])) == "completed" for ids in made.values())

        # updates in several partitions, the fetch in yet another queue's
        more = {name: router.run(commands.create_job(name, JobOptions())).id for name in QUEUES}
        running = [router.run(commands.fetch_jobs(name))[0] for name in QUEUES[:6]]
        done = [(job.id, JobUpdate(status="completed", attempt=job.attempt)) for job in running]
        answer = router.run(commands.update_and_fetch(done, "q11", 1))
        assert answer.outcomes == [1] * 6
        assert not isinstance(answer.fetched, Exception)
        assert [job.id for job in answer.fetched] == [more["q11"]]
    finally:
        close(router)


def test_the_count_is_stored_once_and_another_is_refused(redis_url: str, namespace: str) -> None:
    close(split(redis_url, namespace, 4))
    with pytest.raises(PartitionCountMismatch, match="split into 4 partition"):
        open_ledger(redis_url, namespace, 8)
    again = open_ledger(redis_url, namespace)  # no count asked: the stored one
    assert again.partitioning == Partitioning(namespace, 4)
    close(again)


def test_a_ledger_made_before_partitions_is_one_partition(redis_url: str, namespace: str) -> None:
    old = Ledger(redis.Redis.from_url(redis_url), namespace)
    old.run(commands.put_queue("q", QueueSettings()))
    first = old.run(commands.create_job("q", JobOptions())).id
    router = open_ledger(redis_url, namespace, None)
    try:
        assert router.partitioning.count == 1
        assert router.run(commands.create_job("q", JobOptions())).id == first + 1
        with pytest.raises(PartitionCountMismatch):
            open_ledger(redis_url, namespace, 16)
    finally:
        close(router)
        old.client.close()


def test_each_partition_replays_to_exactly_its_projections(redis_url: str, namespace: str) -> None:
    router = split(redis_url, namespace, 3)
    try:
        with_jobs(router, per_queue=2)
        for name in QUEUES[:7]:
            (job,) = router.run(commands.fetch_jobs(name))
            router.run(commands.update_job(job.id, JobUpdate(status="failed", attempt=job.attempt)))
        client = router.runners[0].client
        for partition_namespace in router.partitioning.namespaces:
            assert misplaced(client, partition_namespace) == []
            assert verify(client, partition_namespace).ok
    finally:
        close(router)


def watch_wakes_each_partition(url: str, namespace: str, count: int, queues: list[str]) -> list[bool]:
    """For one queue of each partition of a ledger of ``count``: whether a watch subscribed to it is
    woken by a job created there."""

    async def scenario() -> list[bool]:
        router: AsyncPartitioned = await open_ledger_async(url, namespace, count)
        watch = LedgerWatch(router, block=200)
        try:
            for name in queues[:count]:  # a new queue goes where the fewest are: one in each
                await router.run(commands.put_queue(name, QueueSettings()))
            one_each = {router.partitioning.of_queue(name): name for name in queues[:count]}
            assert len(one_each) == count
            woken = []
            for name in one_each.values():
                with watch.subscribe([queue_topic(name)]) as sub:
                    await asyncio.sleep(0.05)  # the follower of its partition reads from now on
                    await router.run(commands.create_job(name, JobOptions()))
                    woken.append(await sub.wait(5))
            return woken
        finally:
            await watch.close()
            for runner in router.runners:
                await runner.client.aclose()

    return asyncio.run(scenario())


def test_a_watch_wakes_the_waiter_of_a_queue_in_any_partition(redis_url: str, namespace: str) -> None:
    assert watch_wakes_each_partition(redis_url, namespace, 4, QUEUES) == [True] * 4


def test_a_batch_runs_each_partitions_calls_in_their_order(redis_url: str, namespace: str) -> None:
    """As a pipeline on one ledger: of two creates holding one unique_key, the first creates."""

    async def scenario() -> list[tuple[bool, bool]]:
        router = await open_ledger_async(redis_url, namespace, 3)
        try:
            for name in QUEUES[:3]:
                await router.run(commands.put_queue(name, QueueSettings()))
            seen = []
            for n in range(20):
                calls = [
                    commands.create_job(name, JobOptions(unique_key=f"k{n}"))
                    for name in QUEUES[:3]
                    for _ in range(2)
                ]
                made = await router.run_many(calls)
                seen += [(made[i].created, made[i + 1].created) for i in range(0, len(made), 2)]
            return seen
        finally:
            for runner in router.runners:
                await runner.client.aclose()

    assert set(asyncio.run(scenario())) == {(True, False)}
    router = split(redis_url, namespace, 3)
    try:
        made = router.run_many([commands.create_job("q0", JobOptions(unique_key="s")) for _ in range(2)])
        assert [m.created for m in made] == [True, False]
    finally:
        close(router)

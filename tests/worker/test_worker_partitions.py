"""The Worker over Redis on a ledger split into partitions: it fetches each queue in its partition,
finishes jobs of several partitions in the calls the router splits, waits on its queues' partitions
and learns there that a job it runs was cancelled."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from jobledger.ledger import commands
from jobledger.ledger.partitioned import Partitioned, open_ledger
from jobledger.ledger.placements import pin
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.projections import readers
from jobledger.worker.worker import JobContext, Worker
from tests.support.live_server import eventually
from tests.worker.worker_support import working

COUNT = 4


@pytest.fixture
def split(redis_url: str, namespace: str) -> Iterator[Partitioned]:
    router = open_ledger(redis_url, namespace, COUNT)
    try:
        yield router
    finally:
        for runner in router.runners:
            runner.client.close()


def queues_in_two_partitions(router: Partitioned) -> tuple[str, str]:
    names = [f"q{n}" for n in range(20)]
    first, where = names[0], router.partitioning.hashed
    other = next(n for n in names if where(n) != where(first))
    for name in (first, other):
        pin(router.runners[0].client, router.partitioning, name, where(name))
    return first, other


def statuses(router: Partitioned, ids: list[int]) -> list[str]:
    return [router.read(readers.job_status(i)) for i in ids]


def test_a_redis_worker_completes_jobs_of_queues_in_different_partitions(
    split: Partitioned, redis_url: str, namespace: str
) -> None:
    a, b = queues_in_two_partitions(split)
    for name in (a, b):
        split.run(commands.put_queue(name, QueueSettings()))
    ids = [split.run(commands.create_job(name, JobOptions(input=name))).id for name in [a, b] * 5]
    assert {i % COUNT for i in ids} == {split.partitioning.of_queue(a), split.partitioning.of_queue(b)}
    seen: list[tuple[str, object]] = []

    async def handler(job: JobContext) -> str:
        seen.append((job.queue, job.input))
        return f"done {job.id}"

    worker = Worker(
        handler, [a, b], concurrency=2, transport="redis", redis_url=redis_url, namespace=namespace
    )
    with working(worker):
        eventually(lambda: statuses(split, ids) == ["completed"] * len(ids))
        # idle now, waiting on both partitions: a new job in the second queue's is taken at once
        late = split.run(commands.create_job(b, JobOptions(input="late"))).id
        eventually(lambda: split.read(readers.job_status(late)) == "completed", timeout=5)
    assert sorted(seen) == sorted([(a, a), (b, b)] * 5 + [(b, "late")])
    assert [split.read(readers.job(i))["output"] for i in ids] == [f"done {i}" for i in ids]
    assert worker.counts["completed"] == 11


def test_a_redis_worker_learns_its_job_was_cancelled_in_the_jobs_partition(
    split: Partitioned, redis_url: str, namespace: str
) -> None:
    _, b = queues_in_two_partitions(split)
    split.run(commands.put_queue(b, QueueSettings()))
    job_id = split.run(commands.create_job(b, JobOptions())).id
    assert split.partitioning.of_id(job_id) != 0
    running, released = threading.Event(), threading.Event()

    def handler(job: JobContext) -> None:
        running.set()
        deadline = time.monotonic() + 10
        while not job.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)  # a plain handler looks at ctx.cancelled now and then
        if job.cancelled:
            released.set()

    worker = Worker(handler, [b], transport="redis", redis_url=redis_url, namespace=namespace)
    with working(worker):
        assert running.wait(10)
        split.run(commands.update_job(job_id, JobUpdate(status="cancelled")))
        assert released.wait(10), "the worker never saw the cancellation"
    assert split.read(readers.job_status(job_id)) == "cancelled"
    assert worker.counts["cancelled"] == 1

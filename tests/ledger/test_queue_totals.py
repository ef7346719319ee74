"""Each queue's lifetime totals and wait / run time histograms, kept by the appliers: they move as jobs
move (created, started, completed, failed, timed out, cancelled, handed back, expired), outlive the
jobs they counted, are the same on a ledger split into four partitions, and replay gives them
exactly; each queue's oldest queued job is found whatever its priority or quota lane."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.partitioned import Partitioned, open_ledger
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.projections import readers
from jobledger.projections.queue_totals import DURATION_BUCKETS_MS, OUTCOMES, QueueTotals, queue_totals
from jobledger.replay.placement import misplaced
from jobledger.replay.verify import verify
from jobledger.scheduler.loop import tick
from tests.support.ledger import START_MS, frozen_clock, one_queue_per_partition


@pytest.fixture(params=[1, 4], ids=["one partition", "four partitions"])
def router(request: pytest.FixtureRequest, redis_url: str, namespace: str) -> Iterator[Partitioned]:
    ledger = open_ledger(redis_url, namespace, request.param)
    yield ledger
    for runner in ledger.runners:
        runner.client.close()


def started(ledger: Partitioned, queue: str) -> commands.Fetched:
    (job,) = ledger.run(commands.fetch_jobs(queue))
    return job


def live_through_every_outcome(ledger: Partitioned, clock: FrozenDateTimeFactory, queues: list[str]) -> None:
    """Each queue: five jobs at START; one waits 2 s and runs 3 s (completed), one waits 5 s and fails
    at once, one waits 5 s and is handed back (it waits again, from then), one is cancelled while
    queued, the last waits 6 s and times out after its 10 s; the four that ended expire a minute
    later."""
    for q in queues:
        ledger.run(commands.put_queue(q, QueueSettings(timeout=10, expires_after=60)))
    jobs = {q: [ledger.run(commands.create_job(q, JobOptions())).id for _ in range(5)] for q in queues}
    clock.tick(2)
    first = {q: started(ledger, q) for q in queues}
    clock.tick(3)
    for q in queues:
        ledger.run(commands.update_job(first[q].id, JobUpdate(status="completed", attempt=first[q].attempt)))
        second = started(ledger, q)
        ledger.run(commands.update_job(second.id, JobUpdate(status="failed", attempt=second.attempt)))
        third = started(ledger, q)
        ledger.run(commands.return_job(third.id, third.attempt))
        ledger.run(commands.update_job(jobs[q][3], JobUpdate(status="cancelled")))
    clock.tick(1)
    for q in queues:
        assert started(ledger, q).id == jobs[q][4]  # the handed-back job waits at the back
    clock.tick(10)
    assert len(tick(ledger)["timeouts"]) == len(queues)
    clock.tick(60)
    assert len(tick(ledger)["expiry"]) == 4 * len(queues)


def test_totals_move_as_jobs_move_and_outlive_them(router: Partitioned, namespace: str) -> None:
    queues = one_queue_per_partition(namespace, len(router.runners))
    with frozen_clock() as clock:
        live_through_every_outcome(router, clock, queues)

    totals = router.read(queue_totals(queues))
    expected = {"created": 5, "started": 4, "completed": 1, "failed": 1, "timed_out": 1,
                "cancelled": 1, "expired": 4, "returned": 1}  # fmt: skip
    assert set(expected) == set(OUTCOMES)
    for q in queues:
        mine = totals[q]
        assert mine.outcomes == expected, q
        # waits: 2 s, 5 s, 5 s (then handed back), 6 s
        assert mine.wait.sum_ms == 18_000
        assert dict(mine.wait.cumulative())[1.0] == 0
        assert dict(mine.wait.cumulative())[2.5] == 1
        assert dict(mine.wait.cumulative())[5.0] == 3
        assert dict(mine.wait.cumulative())[10.0] == mine.wait.count == 4
        # runs: 3 s, 0 s, 10 s (timed out); the handed-back attempt and the cancelled job never ran to an end
        assert mine.run.sum_ms == 13_000
        assert dict(mine.run.cumulative())[0.005] == 1
        assert dict(mine.run.cumulative())[5.0] == 2
        assert dict(mine.run.cumulative())[10.0] == dict(mine.run.cumulative())[math.inf] == 3
    counts = router.read(readers.status_counts(queues))
    assert all(counts[q]["completed"] == 0 and counts[q]["queued"] == 1 for q in queues)  # expired: gone
    # the handed-back job, queued again 5 s after START
    assert router.read(readers.oldest_queued(queues)) == dict.fromkeys(queues, START_MS + 5000)

    client = router.runners[0].client
    for partition in router.partitioning.namespaces:
        assert misplaced(client, partition) == []
        assert verify(client, partition).ok  # replay rebuilds the totals exactly


def test_a_queue_nothing_happened_in_has_zero_totals(router: Partitioned) -> None:
    router.run(commands.put_queue("quiet", QueueSettings()))
    assert router.read(queue_totals(["quiet", "never"])) == {"quiet": QueueTotals(), "never": QueueTotals()}
    assert router.read(readers.oldest_queued(["quiet"])) == {"quiet": None}


def test_the_buckets_are_those_the_appliers_declare() -> None:
    assert DURATION_BUCKETS_MS[0] == 5 and DURATION_BUCKETS_MS[-1] == 86_400_000
    assert list(DURATION_BUCKETS_MS) == sorted(set(DURATION_BUCKETS_MS))
    assert len(QueueTotals().wait.cumulative()) == len(DURATION_BUCKETS_MS) + 1


def test_the_oldest_queued_job_whatever_its_priority_or_lane(router: Partitioned) -> None:
    """The oldest job waits behind newer ones of higher priority, or in a quota lane: still found;
    once it starts, the next oldest is; a retried job joins again when it is requeued."""
    router.run(commands.put_queue("q", QueueSettings(retries=1, retry_delays=[0])))
    with frozen_clock() as clock:
        low = router.run(commands.create_job("q", JobOptions())).id
        clock.tick(1)
        router.run(commands.create_job("q", JobOptions(priority=5)))
        laned = router.run(commands.create_job("q", JobOptions(quota_key="k"))).id
        assert router.read(readers.oldest_queued(["q"])) == {"q": START_MS}
        router.run(commands.update_job(low, JobUpdate(status="cancelled")))
        assert router.read(readers.oldest_queued(["q"])) == {"q": START_MS + 1000}
        for _ in range(2):
            started(router, "q")
        clock.tick(1)
        router.run(commands.update_job(laned, JobUpdate(status="failed")))
        tick(router)  # the retry: laned joins the queue again, now
        assert router.read(readers.oldest_queued(["q"])) == {"q": START_MS + 2000}
        assert router.read(queue_totals(["q"]))["q"].outcomes["failed"] == 1

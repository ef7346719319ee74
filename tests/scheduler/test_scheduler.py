"""The scheduler is just another client (invariant 5): two instances checking one ledger at the same
moment time out, retry and expire each job exactly once; a check with nothing due writes nothing."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.commands import Call
from jobledger.ledger.requests import JobOptions, JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import CHECKS, check, tick
from tests.support import assert_well_placed, events, fetch, put_queue, run_tick, unchanged

JOBS = 300
SCHEDULERS = 2


def start_jobs(ledger: Ledger, count: int = JOBS) -> list[int]:
    """``count`` running jobs of queue "q" (timeout 10s, one retry after 5s, expiry 1m)."""
    put_queue(ledger, "q", timeout="10s", retries=1, retry_delays=["5s"], expires_after="1m")
    ids = [c.id for c in ledger.run_many(commands.create_job("q", JobOptions(input=i)) for i in range(count))]
    fetched = fetch(ledger, count=count)
    assert sorted(f.id for f in fetched) == sorted(ids)
    return ids


def race(redis_url: str, namespace: str, batch: int) -> list[dict[str, list[int]]]:
    """Run ``tick`` from SCHEDULERS threads at once, each with its own client and Ledger."""
    barrier = threading.Barrier(SCHEDULERS)

    def scheduler() -> dict[str, list[int]]:
        with redis.Redis.from_url(redis_url) as client:
            ledger = Ledger(client, namespace)
            barrier.wait(timeout=30)
            return tick(ledger, batch)

    with ThreadPoolExecutor(SCHEDULERS) as pool:
        futures = [pool.submit(scheduler) for _ in range(SCHEDULERS)]
        return [future.result(timeout=60) for future in futures]


def once_each(ledger: Ledger, ids: list[int], event_type: str, expected: int = 1) -> None:
    """Every job in ``ids`` has exactly ``expected`` events of ``event_type``, and no other job any."""
    counts = Counter(
        int(e["job"]) for e in events(ledger.client, ledger.keys.namespace) if e["type"] == event_type
    )
    assert counts == Counter({job_id: expected for job_id in ids})


def handled(results: list[dict[str, list[int]]], check: str) -> list[int]:
    """Every id a check reported across the schedulers (a duplicate would show twice)."""
    return sorted(job_id for result in results for job_id in result[check])


@pytest.mark.parametrize("batch", [500, 7])
def test_two_schedulers_time_out_retry_and_expire_each_job_once(
    ledger: Ledger, redis_url: str, namespace: str, frozen: FrozenDateTimeFactory, batch: int
) -> None:
    ids = start_jobs(ledger)

    frozen.tick(10)
    results = race(redis_url, namespace, batch)
    assert handled(results, "timeouts") == sorted(ids)
    once_each(ledger, ids, "job_timed_out")

    frozen.tick(5)
    results = race(redis_url, namespace, batch)
    assert handled(results, "retries") == sorted(ids)
    once_each(ledger, ids, "job_requeued")

    assert len(fetch(ledger, count=JOBS)) == JOBS
    frozen.tick(10)  # second timeout: no retry left, so each job ends
    race(redis_url, namespace, batch)
    once_each(ledger, ids, "job_timed_out", expected=2)
    once_each(ledger, ids, "job_ended", expected=0)

    frozen.tick(60)
    results = race(redis_url, namespace, batch)
    assert handled(results, "expiry") == sorted(ids)
    once_each(ledger, ids, "job_expired")
    assert_well_placed(ledger)
    assert ledger.client.zcard(ledger.keys.build("due_expire")) == 0


def test_a_check_with_nothing_due_appends_nothing(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    ids = start_jobs(ledger, 15)  # 5 stay running (timeout at 10s)
    failed, completed = ids[:5], ids[5:10]
    for job_id in failed:  # retry due at 5s
        ledger.run(commands.update_job(job_id, JobUpdate(status="failed")))
    for job_id in completed:  # expiry due at 1m
        ledger.run(commands.update_job(job_id, JobUpdate(status="completed")))
    frozen.tick(4.999)
    with unchanged(ledger):
        assert run_tick(ledger) == {"releases": [], "queued": [], "timeouts": [], "retries": [], "expiry": [],
                                    "events": [], "launchers": []}  # fmt: skip
    frozen.tick(0.001)
    assert sorted(run_tick(ledger)["retries"]) == sorted(failed)


def test_an_empty_ledger_check_appends_nothing(ledger: Ledger) -> None:
    with unchanged(ledger):
        assert run_tick(ledger) == {"releases": [], "queued": [], "timeouts": [], "retries": [], "expiry": [],
                                    "events": [], "launchers": []}  # fmt: skip
    assert not ledger.client.exists(ledger.keys.events)


T = TypeVar("T")


class CountingLedger(Ledger):
    """A real Ledger that counts the commands (scripts) it runs."""

    scripts: Counter[str]

    def run(self, call: Call[T]) -> T:
        self.scripts[call.script] += 1
        return super().run(call)


def test_an_idle_check_reads_its_deadline_set_and_runs_no_script(
    client: redis.Redis, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    ledger = CountingLedger(client, namespace)
    ledger.scripts = Counter()
    start_jobs(ledger, 5)  # running, none due for a while
    ledger.scripts.clear()
    assert all(check(ledger, name) == [] for name in CHECKS)
    assert ledger.scripts == Counter(), "nothing due: no check script ran"
    frozen.tick(3600)
    assert len(check(ledger, "timeouts")) == 5
    assert ledger.scripts == Counter({"check_timeouts": 1})

"""The scheduler is just another client (invariant 5): two instances checking one ledger at the same
moment time out, retry and expire each job exactly once; a check with nothing due writes nothing."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands, errors
from jobledger.ledger.clock import Clock, now_ms
from jobledger.ledger.redis_clients import async_client
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import AsyncLedger, Ledger, Steps
from jobledger.projections import readers
from jobledger.scheduler.loop import BATCH, CHECKS, _tick_steps, check, tick
from tests.support.ledger import assert_well_placed, events, fetch, put_queue, run_tick, unchanged

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
                                    "idempotency": [], "events": [], "launchers": []}  # fmt: skip
    frozen.tick(0.001)
    assert sorted(run_tick(ledger)["retries"]) == sorted(failed)


def test_an_empty_ledger_check_appends_nothing(ledger: Ledger) -> None:
    with unchanged(ledger):
        assert run_tick(ledger) == {"releases": [], "queued": [], "timeouts": [], "retries": [], "expiry": [],
                                    "idempotency": [], "events": [], "launchers": []}  # fmt: skip
    assert not ledger.client.exists(ledger.keys.events)


T = TypeVar("T")


def test_an_idle_check_reads_its_deadline_set_and_runs_no_script(
    client: redis.Redis, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    ledger = Ledger(client, namespace)
    start_jobs(ledger, 5)  # running, none due for a while
    scripts: Counter[str] = Counter()
    ledger.observe = lambda script, _seconds: scripts.update([script])  # every command the runner runs
    assert all(check(ledger, name) == [] for name in CHECKS)
    assert scripts == Counter(), "nothing due: no check script ran"
    frozen.tick(3600)
    assert len(check(ledger, "timeouts")) == 5
    assert scripts == Counter({"check_timeouts": 1})


def _batch_with_a_refusal() -> Steps[tuple[list[object], int]]:
    """A batch of four creations, the third on a queue that does not exist, then a read."""
    created = yield [commands.create_job("q" if n != 2 else "nowhere", JobOptions(input=n)) for n in range(4)]
    size = yield readers.queue_size("q")
    return [c.id if c is not None else None for c in created], size


def _drive_both(
    redis_url: str, namespace: str, steps: Callable[[], Steps[T]], clock: Clock = now_ms
) -> tuple[Any, Any]:
    """What ``steps`` gives (or raises) on the sync runner in one namespace and on the async runner
    in another, both fresh with queue "q" (timeout 10s)."""

    def outcome(run: Callable[[], T]) -> Any:
        try:
            return run()
        except errors.JobLedgerError as exc:
            return exc

    with redis.Redis.from_url(redis_url) as client:
        sync = Ledger(client, f"{namespace}-sync", clock)
        put_queue(sync, "q", timeout="10s")
        by_sync = outcome(lambda: sync.drive(steps()))

    async def on_async() -> Any:
        aio = AsyncLedger(async_client(redis_url), f"{namespace}-async", clock)
        try:
            await aio.run(commands.put_queue("q", QueueSettings.model_validate({"timeout": "10s"})))
            try:
                return await aio.drive(steps())
            except errors.JobLedgerError as exc:
                return exc
        finally:
            await aio.client.aclose()

    return by_sync, asyncio.run(on_async())


def test_a_refused_command_of_a_batch_neither_stops_the_others_nor_is_lost(
    redis_url: str, namespace: str
) -> None:
    by_sync, by_async = _drive_both(redis_url, namespace, _batch_with_a_refusal)
    for refused in (by_sync, by_async):
        assert isinstance(refused, errors.Refused)
        assert [type(r) for r in refused.refusals] == [errors.NotFound]
        assert refused.result == ([1, 2, None, 3], 3), "the others ran, and the steps went on to the read"
    assert str(by_sync) == str(by_async)


def test_the_checks_give_the_same_on_both_runners(redis_url: str, namespace: str) -> None:
    moment = [1_700_000_000_000]

    def checks() -> Steps[tuple[list[int], dict[str, list[int]]]]:
        yield [commands.create_job("q", JobOptions(input=n)) for n in range(5)]
        started = yield commands.fetch_jobs("q", 3)
        moment[0] += 11_000  # past the running jobs' timeout
        return [f.id for f in started], (yield from _tick_steps(lambda: moment[0], BATCH))

    by_sync, by_async = _drive_both(redis_url, namespace, checks, lambda: moment[0])
    assert by_sync == by_async
    started, handled = by_sync
    assert sorted(handled.pop("timeouts")) == sorted(started) and len(started) == 3
    assert handled == {name: [] for name in [*CHECKS, "events", "launchers"] if name != "timeouts"}

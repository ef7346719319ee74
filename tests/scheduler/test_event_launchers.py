"""Event launchers on the ledger: a job of one queue completing chains a job on another; debounce
gives one job per burst of matches; a launcher never fires on events from before it existed, on
launcher events, or on the jobs it created; the follower's positions; the async checks."""

from __future__ import annotations

import asyncio

import redis.asyncio
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.durations import format_time
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.scheduler import launchers as launcher_checks
from jobledger.scheduler.loop import tick
from tests.scheduler.launcher_support import (
    advance_to,
    complete_job,
    data_of,
    launched,
    new_launcher,
    view,
)
from tests.support.ledger import (
    START,
    assert_well_placed,
    at,
    create,
    events,
    fetch_one,
    later,
    put_queue,
    raw_job,
    update,
)


def test_event_launcher_chains_a_job_when_a_job_of_a_queue_completes(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    for name in ("A", "B", "C"):
        put_queue(ledger, name)
    complete_job(ledger, "A")  # before the launcher: never a trigger
    lid = new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"}, queue="B",
                       template={"input": {"chained": True}})  # fmt: skip
    assert tick(ledger)["events"] == []
    complete_job(ledger, "C")
    failed = create(ledger, "A", retries=0)
    assert fetch_one(ledger, "A").id == failed
    update(ledger, failed, status="failed")
    assert tick(ledger)["events"] == [] and launched(ledger, lid) == []

    frozen.tick(1)
    trigger = complete_job(ledger, "A")
    assert tick(ledger)["events"] == [lid]
    [job_id] = launched(ledger, lid)
    assert raw_job(ledger, job_id)["queue"] == "B" and raw_job(ledger, job_id)["input"] == '{"chained":true}'
    assert data_of(ledger, "launcher_fired") == [
        {"launcher": lid, "due_at": at(1), "job": job_id, "missed": 0, "trigger": trigger}
    ]
    assert tick(ledger)["events"] == []
    assert len(launched(ledger, lid)) == 1
    assert_well_placed(ledger)


def test_a_launcher_never_feeds_on_the_jobs_it_creates(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "B")
    lid = new_launcher(ledger, "@event", {"type": "job_created", "queue": "B"}, queue="B")
    create(ledger, "B")
    assert tick(ledger)["events"] == [lid]
    assert tick(ledger)["events"] == []
    assert tick(ledger)["events"] == []
    assert len(launched(ledger, lid)) == 1


def test_debounce_gives_one_job_after_the_matches_stop(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "A")
    put_queue(ledger, "B")
    lid = new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"}, queue="B", debounce="10s")
    triggers = []
    for second in (0, 4, 8):
        frozen.move_to(START + later(second))
        triggers.append(complete_job(ledger, "A"))
        assert tick(ledger)["events"] == [lid]
    assert [d["due_at"] for d in data_of(ledger, "launcher_triggered")] == [at(10), at(14), at(18)]
    assert view(ledger, lid)["next_at"] == format_time(at(18))
    assert advance_to(ledger, frozen, 17.999)["launchers"] == []
    assert launched(ledger, lid) == []
    assert advance_to(ledger, frozen, 18)["launchers"] == [lid]
    assert len(launched(ledger, lid)) == 1
    assert data_of(ledger, "launcher_fired")[0]["trigger"] == triggers[-1]
    assert advance_to(ledger, frozen, 100)["launchers"] == []
    assert len(launched(ledger, lid)) == 1


def test_debounce_read_late_still_fires_once_per_burst(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "A")
    put_queue(ledger, "B")
    lid = new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"}, queue="B", debounce="10s")
    complete_job(ledger, "A")
    frozen.move_to(START + later(20))
    complete_job(ledger, "A")  # the first burst was over at 10s, before this one
    advance_to(ledger, frozen, 25)
    assert len(launched(ledger, lid)) == 1
    advance_to(ledger, frozen, 30)
    assert [d["due_at"] for d in data_of(ledger, "launcher_fired")] == [at(10), at(30)]


def test_the_follower_remembers_how_far_it_read(ledger: Ledger) -> None:
    put_queue(ledger, "A")
    put_queue(ledger, "B")
    first = new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"}, queue="B")
    positions: dict[int, str] = {}
    assert launcher_checks.follow_event_launchers(ledger, positions) == []
    assert positions == {first: events(ledger.client, ledger.keys.namespace)[-1]["id"]}
    second = new_launcher(ledger, "@event", {"type": "job_completed"}, queue="B")  # after that position
    complete_job(ledger, "A")
    assert sorted(launcher_checks.follow_event_launchers(ledger, positions, batch=2)) == [first, second]
    ledger.run(commands.delete_launcher(first))
    assert launcher_checks.follow_event_launchers(ledger, positions) == []
    assert list(positions) == [second]


def test_the_async_checks_follow_events_then_fire(
    ledger: Ledger, redis_url: str, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "A")
    put_queue(ledger)
    every = new_launcher(ledger, "@interval", "10s")
    chained = new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"})
    positions: dict[int, str] = {}

    async def check() -> int:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await launcher_checks.check_launchers(AsyncLedger(client, namespace), positions)
        finally:
            await client.aclose()

    frozen.tick(10)
    complete_job(ledger, "A")
    assert asyncio.run(check()) == 2
    assert len(launched(ledger, every)) == 1 and len(launched(ledger, chained)) == 1
    assert asyncio.run(check()) == 0
    assert set(positions) == {chained}

"""Timed launchers on the ledger: cron, interval and at launchers fired by ``jobledger.scheduler.loop.tick``
on a frozen clock; catch-up after downtime, max_pending and the other skips, deletion, the
commands' own checks, two schedulers racing; and the pending sets and firing times kept where
placement expects them.  (Event launchers: ``test_event_launchers.py``.)"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.durations import format_time
from jobledger.ledger.errors import BadRequest, NotFound
from jobledger.ledger.launchers import catch_up, first_at, parse_cron
from jobledger.ledger.runner import Ledger
from jobledger.replay.placement import misplaced
from jobledger.scheduler.loop import tick
from tests.scheduler.launcher_support import (
    advance_to,
    complete_job,
    data_of,
    launched,
    new_launcher,
    pending,
    view,
)
from tests.support.ledger import (
    START,
    START_MS,
    assert_well_placed,
    at,
    events,
    fetch_one,
    later,
    put_queue,
    raw_job,
    refused,
    unchanged,
    update,
)

# --- timed launchers ---------------------------------------------------------------------------------


def test_cron_with_six_fields_fires_on_the_seconds_it_names(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@cron", "*/15 * * * * *", template={"input": {"n": 1}, "timeout": "1m"})
    assert view(ledger, lid)["next_at"] == format_time(at(15))
    assert advance_to(ledger, frozen, 14.999)["launchers"] == []
    assert launched(ledger, lid) == []

    assert advance_to(ledger, frozen, 15)["launchers"] == [lid]
    [job_id] = launched(ledger, lid)
    assert raw_job(ledger, job_id)["launcher"] == str(lid)
    assert raw_job(ledger, job_id)["input"] == '{"n":1}' and raw_job(ledger, job_id)["timeout"] == "60000"
    assert data_of(ledger, "launcher_fired") == [
        {"launcher": lid, "due_at": at(15), "next_at": at(30), "job": job_id, "missed": 0}
    ]
    assert advance_to(ledger, frozen, 29)["launchers"] == []
    assert advance_to(ledger, frozen, 30)["launchers"] == [lid]
    assert len(launched(ledger, lid)) == 2
    assert view(ledger, lid)["fired"] == 2
    assert_well_placed(ledger)


@pytest.mark.parametrize(
    ("expression", "first"),
    [
        ("0 30 9 ? JAN-MAR MON-FRI", "2030-01-01T09:30:00"),  # START is a Tuesday
        ("0 0 12 1 FEB ?", "2030-02-01T12:00:00"),
        ("0 0 0 ? * SUN", "2030-01-06T00:00:00"),
        ("0 0 0 ? * sat,sun", "2030-01-05T00:00:00"),
        ("30 0 0 * * *", "2030-01-01T00:00:30"),  # seconds come first
        ("0 0 0 1 1 *", "2031-01-01T00:00:00"),  # strictly after now
        ("0 0 0 29 2 ?", "2032-02-29T00:00:00"),
        ("30 9 ? JAN-MAR MON-FRI", "2030-01-01T09:30:00"),  # five fields: minute first, second 0
        ("*/5 * * * *", "2030-01-01T00:05:00"),
        ("0 0 1 1 *", "2031-01-01T00:00:00"),
    ],
)
def test_cron_first_times_with_question_marks_and_names(expression: str, first: str) -> None:
    assert format_time(first_at("@cron", parse_cron(expression), START_MS)) == first + ".000000Z"


@pytest.mark.parametrize(
    ("expression", "stored"),
    [
        ("*/5 * * * *", "0 */5 * * * *"),
        (" 30  9 ? * MON-FRI ", "0 30 9 ? * MON-FRI"),
        ("15 * * * * *", "15 * * * * *"),
    ],
)
def test_five_fields_are_minute_first_and_stored_as_six_with_second_0(expression: str, stored: str) -> None:
    assert parse_cron(expression) == stored


@pytest.mark.parametrize("expression", ["* * * *", "* * * * * * *", "61 * * * *", "* * * FOO *"])
def test_other_field_counts_and_bad_five_field_expressions_are_refused(expression: str) -> None:
    with pytest.raises(ValueError, match=r"five|six|not valid"):
        parse_cron(expression)


def test_cron_with_names_fires_months_later(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@cron", "0 0 12 1 FEB ?")
    frozen.move_to("2030-02-01T11:59:59Z")
    assert tick(ledger)["launchers"] == []
    frozen.move_to("2030-02-01T12:00:00Z")
    assert tick(ledger)["launchers"] == [lid]
    assert view(ledger, lid)["next_at"] == "2031-02-01T12:00:00.000000Z"


def test_interval_fires_every_interval_from_creation(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@interval", "30m10s")
    assert view(ledger, lid)["arguments"] == "30m10s"
    assert advance_to(ledger, frozen, 1809)["launchers"] == []
    assert advance_to(ledger, frozen, 1810)["launchers"] == [lid]
    assert advance_to(ledger, frozen, 3620)["launchers"] == [lid]
    assert [d["due_at"] for d in data_of(ledger, "launcher_fired")] == [at(1810), at(3620)]
    assert view(ledger, lid)["next_at"] == format_time(at(5430))


def test_at_fires_once(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@at", format_time(at(60)))
    assert advance_to(ledger, frozen, 59)["launchers"] == []
    assert advance_to(ledger, frozen, 60)["launchers"] == [lid]
    assert advance_to(ledger, frozen, 86_400)["launchers"] == []
    assert len(launched(ledger, lid)) == 1
    assert view(ledger, lid)["next_at"] is None and view(ledger, lid)["fired"] == 1
    assert ledger.client.zcard(ledger.keys.build("due_launch")) == 0


def test_catch_up_after_a_long_gap_fires_once_with_the_missed_count(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    every = new_launcher(ledger, "@interval", "10s")
    cron = new_launcher(ledger, "@cron", "*/10 * * * * *")
    assert sorted(advance_to(ledger, frozen, 3605)["launchers"]) == [every, cron]
    fired = data_of(ledger, "launcher_fired")
    assert [(d["launcher"], d["due_at"], d["missed"], d["next_at"]) for d in fired] == [
        (every, at(10), 359, at(3610)),
        (cron, at(10), 359, at(3610)),
    ]
    assert len(launched(ledger, every)) == 1 and len(launched(ledger, cron)) == 1
    assert catch_up("@interval", "10s", at(10), at(10)) == (at(20), 0)


# --- limits --------------------------------------------------------------------------------------------


def test_max_pending_skips_while_its_jobs_have_not_ended(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@interval", "10s", max_pending=1)
    advance_to(ledger, frozen, 10)
    [first] = launched(ledger, lid)
    assert pending(ledger, lid) == {first}

    assert advance_to(ledger, frozen, 20)["launchers"] == [lid]
    assert launched(ledger, lid) == [first]
    assert data_of(ledger, "launcher_skipped") == [
        {"launcher": lid, "due_at": at(20), "next_at": at(30), "reason": "max_pending"}
    ]
    assert fetch_one(ledger).id == first
    update(ledger, first, status="completed")
    assert pending(ledger, lid) == set()
    advance_to(ledger, frozen, 30)
    assert len(launched(ledger, lid)) == 2
    assert view(ledger, lid)["skipped"] == 1 and view(ledger, lid)["fired"] == 2


def test_a_missing_queue_or_a_held_unique_key_skips(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "gone")
    put_queue(ledger)
    lost = new_launcher(ledger, "@interval", "10s", queue="gone")
    unique = new_launcher(ledger, "@interval", "10s", template={"unique_key": "u"})
    ledger.run(commands.delete_queue("gone"))
    advance_to(ledger, frozen, 10)
    advance_to(ledger, frozen, 20)
    reasons = [(d["launcher"], d["due_at"], d["reason"]) for d in data_of(ledger, "launcher_skipped")]
    assert reasons == [
        (lost, at(10), "queue_missing"),
        (lost, at(20), "queue_missing"),
        (unique, at(20), "unique_key"),
    ]
    assert launched(ledger, lost) == [] and len(launched(ledger, unique)) == 1
    assert view(ledger, lost)["next_at"] == format_time(at(30))


def test_pending_sets_follow_the_jobs(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, retries=1, timeout="10s", expires_after="1m")
    lid = new_launcher(ledger, "@interval", "1s")
    advance_to(ledger, frozen, 1)
    advance_to(ledger, frozen, 2)
    one, two = launched(ledger, lid)
    assert pending(ledger, lid) == {one, two}
    assert fetch_one(ledger).id == one
    update(ledger, one, status="failed")  # a retry is left: not ended
    assert pending(ledger, lid) == {one, two}
    ledger.run(commands.delete_job(two))
    assert pending(ledger, lid) == {one}
    update(ledger, one, status="cancelled")
    assert pending(ledger, lid) == set()
    update(ledger, one, status="queued")  # a manual requeue: pending again
    assert pending(ledger, lid) == {one}
    assert_well_placed(ledger)
    ledger.run(commands.delete_launcher(lid))
    update(ledger, one, status="cancelled")
    assert raw_job(ledger, one)["launcher"] == str(lid)  # its jobs keep the id
    assert_well_placed(ledger)


# --- commands ------------------------------------------------------------------------------------------


def test_fire_and_trigger_do_nothing_unless_due(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@interval", "10s")
    event_lid = new_launcher(ledger, "@event", {"type": "job_created"})
    frozen.tick(10)
    with unchanged(ledger):
        assert ledger.run(commands.fire_launcher(lid, at(9), at(20))) == 0  # not its next_at
        assert ledger.run(commands.fire_launcher(lid + 100, at(10), at(20))) == 0  # no such launcher
        last = events(ledger.client, ledger.keys.namespace)[-1]["id"]
        assert ledger.run(commands.trigger_launcher(event_lid, last)) == 0  # its own creation
        assert ledger.run(commands.trigger_launcher(lid, last)) == 0  # not an @event launcher
    refused(ledger, commands.fire_launcher(lid, at(10), at(10)), BadRequest)
    assert ledger.run(commands.fire_launcher(lid, at(10), at(20))) == 1
    assert ledger.run(commands.fire_launcher(lid, at(10), at(20))) == 0


def test_deleting_a_launcher_stops_it(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@interval", "10s")
    advance_to(ledger, frozen, 10)
    assert ledger.run(commands.delete_launcher(lid)) == 1
    assert advance_to(ledger, frozen, 3600)["launchers"] == []
    assert len(launched(ledger, lid)) == 1
    assert not list(ledger.client.scan_iter(match=ledger.keys.prefix + "launcher:*"))
    assert ledger.client.zcard(ledger.keys.build("due_launch")) == 0
    refused(ledger, commands.delete_launcher(lid), NotFound)
    assert_well_placed(ledger)


def test_placement_sees_a_wrong_pending_set_or_firing_time(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger, "@interval", "10s")
    assert_well_placed(ledger)
    ledger.client.sadd(ledger.keys.build("launcher_pending", id=lid), 99)
    ledger.client.zadd(ledger.keys.build("due_launch"), {str(lid): 5})
    ledger.client.sadd(ledger.keys.build("launcher_pending", id=77), 1)
    problems = misplaced(ledger.client, ledger.keys.namespace)
    assert len(problems) == 3, problems
    assert any("due:launch" in p for p in problems) and any("launcher 77" in p for p in problems)


# --- schedulers racing -----------------------------------------------------------------------------


def race(redis_url: str, namespace: str, schedulers: int = 2) -> None:
    """``tick`` from several threads at once, each with its own client."""
    barrier = threading.Barrier(schedulers)

    def scheduler() -> None:
        with redis.Redis.from_url(redis_url) as client:
            ledger = Ledger(client, namespace)
            barrier.wait(timeout=30)
            tick(ledger, batch=7)

    with ThreadPoolExecutor(schedulers) as pool:
        for future in [pool.submit(scheduler) for _ in range(schedulers)]:
            future.result(timeout=60)


def test_two_schedulers_fire_each_due_time_once(
    ledger: Ledger, redis_url: str, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "A")
    put_queue(ledger)
    timed = [new_launcher(ledger, "@interval", "10s") for _ in range(30)]
    timed += [new_launcher(ledger, "@cron", "*/10 * * * * *") for _ in range(10)]
    chained = [new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"}) for _ in range(5)]
    for second in (10, 20):
        frozen.move_to(START + later(second))
        complete_job(ledger, "A")
        race(redis_url, namespace)
        fired = Counter((d["launcher"], d["due_at"]) for d in data_of(ledger, "launcher_fired"))
        assert all(count == 1 for count in fired.values()), fired
        assert {lid for lid, due in fired if due == at(second)} == set(timed) | set(chained)
    assert ledger.client.zcard(ledger.keys.queued_ids("q")) == 2 * (len(timed) + len(chained))
    assert_well_placed(ledger)

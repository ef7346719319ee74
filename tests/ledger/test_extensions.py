"""jobledger's job extensions through the ledger: priority, scheduled jobs (run_at,
delay), unique keys, pausing a queue.  Progress, errors and retry by kind are in
``test_extensions_runs.py``; backoff, max_queued_time and retry_at in ``test_extensions_retry.py``."""

from __future__ import annotations

from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory
from pydantic import ValidationError

from jobledger.ledger import commands
from jobledger.ledger.commands import Created
from jobledger.ledger.durations import format_time
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.requests import JobOptions, JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from tests.ledger.extension_support import when
from tests.support.ledger import (
    assert_well_placed,
    at,
    create,
    event_types,
    events,
    fetch,
    fetch_one,
    job,
    put_queue,
    refused,
    run_tick,
    status,
    stream_length,
    unchanged,
    update,
)


def fetched_ids(ledger: Ledger, queue: str = "q", count: int = 100) -> list[int]:
    return [f.id for f in fetch(ledger, queue, count)]


def queued_ids(ledger: Ledger, queue: str = "q") -> list[int]:
    return ledger.read(readers.queue_job_ids(queue))["queued"]


def length(ledger: Ledger) -> int:
    return stream_length(ledger.client, ledger.keys.namespace)


# --- priority -----------------------------------------------------------------------------------


def test_higher_priority_first_then_fifo_within_one_priority(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    low1, mid1, top, mid2, low2, high = (create(ledger, priority=p) for p in (0, 5, 100, 5, 0, 50))
    expected = [top, high, mid1, mid2, low1, low2]
    assert queued_ids(ledger) == expected  # job_ids lists them in the order they will go out
    assert fetched_ids(ledger, count=2) == expected[:2]
    assert fetched_ids(ledger) == expected[2:]
    assert job(ledger, high)["priority"] == 50
    assert_well_placed(ledger)


def test_queue_priority_is_the_default_a_job_may_override(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q", priority=50)
    default = create(ledger)
    lower = create(ledger, priority=0)
    higher = create(ledger, priority=51)
    assert [job(ledger, i)["priority"] for i in (default, lower, higher)] == [50, 0, 51]
    assert fetched_ids(ledger) == [higher, default, lower]


def test_a_requeued_job_goes_to_the_back_of_its_priority(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    first = create(ledger, priority=5, retries=1)
    second, third = create(ledger, priority=5), create(ledger, priority=5)
    below = create(ledger, priority=4)
    assert fetch_one(ledger).id == first
    update(ledger, first, status="failed")  # retry due at once
    assert run_tick(ledger)["retries"] == [first]
    assert queued_ids(ledger) == [second, third, first, below]
    assert fetch_one(ledger).id == second
    update(ledger, second, status="cancelled")
    update(ledger, second, status="queued")  # manual requeue
    assert fetched_ids(ledger) == [third, first, second, below]
    assert_well_placed(ledger)


# --- scheduled jobs: run_at and delay ----------------------------------------------------------


def _released_exactly_at(ledger: Ledger, frozen: FrozenDateTimeFactory, job_id: int, seconds: float) -> None:
    """The job stays scheduled (and out of reach) until ``seconds`` after START, not a ms less."""
    frozen.move_to(str(format_time(at(seconds) - 1)))
    assert run_tick(ledger)["releases"] == []
    assert status(ledger, job_id) == "scheduled"
    assert fetch(ledger) == []
    frozen.tick(0.001)
    assert run_tick(ledger)["releases"] == [job_id]
    assert event_types(ledger, job_id) == ["job_created", "job_released"]
    assert status(ledger, job_id) == "queued"
    assert fetch_one(ledger).id == job_id


def test_a_future_run_at_schedules_the_job_until_then(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, run_at=when(30))
    view = job(ledger, job_id)
    assert (view["status"], view["run_at"], view["ended"]) == ("scheduled", when(30), False)
    assert when(30) == "2030-01-01T00:00:30.000000Z"
    ids = ledger.read(readers.queue_job_ids("q"))
    assert (ids["scheduled"], ids["queued"]) == ([job_id], [])
    assert ledger.read(readers.queue_size("q")) == 0
    with unchanged(ledger):
        assert fetch(ledger) == []
    assert_well_placed(ledger)
    _released_exactly_at(ledger, frozen, job_id, 30)
    assert ledger.read(readers.queue_job_ids("q"))["scheduled"] == []
    assert_well_placed(ledger)


def test_a_delay_schedules_the_job_that_long_from_now(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    frozen.tick(5)
    job_id = create(ledger, delay="1m30s")
    assert (status(ledger, job_id), job(ledger, job_id)["run_at"]) == ("scheduled", when(95))
    _released_exactly_at(ledger, frozen, job_id, 95)


@pytest.mark.parametrize(
    ("option", "seconds"), [("run_at", 0), ("run_at", -0.001), ("run_at", -86400), ("delay", 0)]
)
def test_a_start_that_is_now_or_past_queues_at_once(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, option: str, seconds: float
) -> None:
    start: dict[str, Any] = {option: when(seconds) if option == "run_at" else seconds}
    job_id = create(ledger, **start)
    assert status(ledger, job_id) == "queued"
    assert event_types(ledger, job_id) == ["job_created"]
    assert fetch_one(ledger).id == job_id


def test_run_at_and_delay_together_are_refused_before_any_script() -> None:
    with pytest.raises(ValidationError, match="run_at or delay"):
        JobOptions.model_validate({"run_at": when(10), "delay": "10s"})


def test_a_scheduled_job_can_be_cancelled_and_is_never_released(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, run_at=when(30))
    assert update(ledger, job_id, status="cancelled") == 1
    view = job(ledger, job_id)
    assert (view["status"], view["ended"]) == ("cancelled", True)
    assert_well_placed(ledger)
    frozen.tick(60)
    assert run_tick(ledger)["releases"] == []
    assert status(ledger, job_id) == "cancelled"
    assert event_types(ledger, job_id) == ["job_created", "job_cancelled"]


@pytest.mark.parametrize("action", ["complete", "fail", "heartbeat", "requeue"])
def test_a_scheduled_job_takes_no_other_transition(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, action: str
) -> None:
    job_id = create(ledger, run_at=when(30))
    call = {
        "complete": commands.update_job(job_id, JobUpdate(status="completed")),
        "fail": commands.update_job(job_id, JobUpdate(status="failed")),
        "heartbeat": commands.heartbeat(job_id),
        "requeue": commands.update_job(job_id, JobUpdate(status="queued")),
    }[action]
    refused(ledger, call, Conflict)


def test_deleting_a_queue_deletes_its_scheduled_jobs(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    scheduled = create(ledger, run_at=when(30), tags=["t"])
    queued = create(ledger)
    assert ledger.run(commands.delete_queue("q")) == 2
    for job_id in (scheduled, queued):
        assert event_types(ledger, job_id) == ["job_created", "job_deleted"]
        with pytest.raises(NotFound):
            job(ledger, job_id)
    assert not ledger.client.exists(ledger.keys.tag("t"))
    assert_well_placed(ledger)
    frozen.tick(60)
    assert run_tick(ledger)["releases"] == []


# --- unique keys --------------------------------------------------------------------------------


def create_unique(ledger: Ledger, queue: str = "q", **options: object) -> Created:
    return ledger.run(commands.create_job(queue, JobOptions(unique_key="k", **options)))  # type: ignore[arg-type]


def test_a_held_unique_key_answers_the_holder_and_appends_nothing(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    first = create_unique(ledger, input=1)
    assert first.created is True
    with unchanged(ledger):
        again = create_unique(ledger, input=2, priority=9)
    assert again == Created(first.id, False)
    assert job(ledger, first.id)["input"] == 1
    assert create(ledger) == first.id + 1  # no id was spent on the refused copy
    assert job(ledger, first.id)["unique_key"] == "k"
    assert_well_placed(ledger)


def test_a_unique_key_is_per_queue(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str) -> None:
    put_queue(ledger, "other")
    here = create_unique(ledger)
    there = create_unique(ledger, "other")
    assert there.created and there.id != here.id
    assert create_unique(ledger, "other") == Created(there.id, False)


def test_a_scheduled_or_running_job_holds_its_key(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    holder = create_unique(ledger, run_at=when(10)).id
    assert create_unique(ledger) == Created(holder, False)
    frozen.tick(10)
    assert run_tick(ledger)["releases"] == [holder]
    assert create_unique(ledger) == Created(holder, False)
    fetch_one(ledger)
    assert create_unique(ledger) == Created(holder, False)


def test_a_job_waiting_to_retry_still_holds_its_key(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    holder = create_unique(ledger, retries=1, retry_delays=["1h"]).id
    fetch_one(ledger)
    update(ledger, holder, status="failed")
    assert job(ledger, holder)["ended"] is False
    assert create_unique(ledger) == Created(holder, False)


def _end(ledger: Ledger, frozen: FrozenDateTimeFactory, job_id: int, how: str) -> None:
    """Bring the running job ``job_id`` to its end (or out of the projections) by ``how``."""
    if how in ("completed", "cancelled", "failed"):
        update(ledger, job_id, status=how)
    elif how == "timed_out":
        frozen.tick(10)
        assert run_tick(ledger)["timeouts"] == [job_id]
    elif how == "deleted":
        ledger.run(commands.delete_job(job_id))
    elif how == "expired":
        update(ledger, job_id, status="completed")
        frozen.tick(3600)
        assert run_tick(ledger)["expiry"] == [job_id]


@pytest.mark.parametrize("how", ["completed", "cancelled", "failed", "timed_out", "deleted", "expired"])
def test_a_unique_key_is_free_again_once_its_job_ends_or_goes(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, how: str
) -> None:
    first = create_unique(ledger).id
    fetch_one(ledger)
    _end(ledger, frozen, first, how)
    second = create_unique(ledger)
    assert second.created and second.id == first + 1
    assert create_unique(ledger) == Created(second.id, False)
    assert_well_placed(ledger)


def test_cancelling_a_queued_job_frees_its_key(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    first = create_unique(ledger).id
    update(ledger, first, status="cancelled")
    assert create_unique(ledger).created


def test_a_manual_requeue_takes_the_key_back_only_if_free(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    first = create_unique(ledger).id
    update(ledger, first, status="cancelled")
    update(ledger, first, status="queued")  # the key was free: taken back
    assert create_unique(ledger) == Created(first, False)
    update(ledger, first, status="cancelled")
    second = create_unique(ledger).id
    update(ledger, first, status="queued")  # the key is held by second: first runs without it
    assert status(ledger, first) == "queued"
    assert create_unique(ledger) == Created(second, False)
    update(ledger, first, status="cancelled")  # first never held it: second keeps it
    assert create_unique(ledger) == Created(second, False)
    assert_well_placed(ledger)


# --- pause and resume ---------------------------------------------------------------------------


def test_a_paused_queue_takes_jobs_but_hands_none_out(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    waiting = create(ledger)
    assert ledger.run(commands.pause_queue("q", True)) is True
    assert ledger.read(readers.queue("q")).paused is True
    added = create(ledger)
    assert status(ledger, added) == "queued"
    with unchanged(ledger):
        assert fetch(ledger, count=5) == []
    assert ledger.run(commands.pause_queue("q", False)) is True
    assert ledger.read(readers.queue("q")).paused is False
    assert fetched_ids(ledger) == [waiting, added]
    types = [e["type"] for e in events(ledger.client, ledger.keys.namespace) if "job" not in e]
    assert types == ["queue_created", "queue_paused", "queue_resumed"]


def test_pausing_or_resuming_twice_appends_one_event(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    for paused in (True, False):
        before = length(ledger)
        assert ledger.run(commands.pause_queue("q", paused)) is True
        with unchanged(ledger):
            assert ledger.run(commands.pause_queue("q", paused)) is False
        assert length(ledger) == before + 1
    with unchanged(ledger):
        assert ledger.run(commands.pause_queue("q", False)) is False  # never paused: nothing to resume


def test_putting_settings_without_paused_resumes_the_queue(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger)
    put_queue(ledger, "q", paused=True)
    assert fetch(ledger) == []
    put_queue(ledger, "q", retries=1)  # a missing field takes its default: not paused
    assert ledger.read(readers.queue("q")).paused is False
    assert fetch_one(ledger).id == job_id


@pytest.mark.parametrize("paused", [True, False])
def test_pausing_a_missing_queue_is_not_found(ledger: Ledger, paused: bool) -> None:
    refused(ledger, commands.pause_queue("nope", paused), NotFound)


def test_scheduler_still_releases_into_a_paused_queue(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, run_at=when(5))
    ledger.run(commands.pause_queue("q", True))
    frozen.tick(5)
    assert run_tick(ledger)["releases"] == [job_id]
    assert fetch(ledger) == []
    ledger.run(commands.pause_queue("q", False))
    assert fetch_one(ledger).id == job_id

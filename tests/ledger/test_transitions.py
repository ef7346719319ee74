"""Every transition of the status table (docs/http-api.md) through the ledger, and every
transition it does not list refused with Conflict while appending nothing and changing nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.commands import Call
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.requests import JobOptions, JobUpdate
from jobledger.ledger.runner import Ledger
from tests.support.ledger import (
    STATES,
    assert_well_placed,
    at,
    create,
    event_types,
    events,
    fetch,
    fetch_one,
    job,
    job_in_state,
    put_queue,
    raw_job,
    refused,
    run_tick,
    status,
    stream_length,
    unchanged,
    update,
)

NOTHING_DUE: dict[str, list[int]] = {
    "releases": [],
    "queued": [],
    "timeouts": [],
    "retries": [],
    "expiry": [],
    "idempotency": [],
    "events": [],
    "launchers": [],
}


def _patch(status: str | None = None, **fields: Any) -> Callable[[int], Call[int]]:
    return lambda job_id: commands.update_job(job_id, JobUpdate(status=status, **fields))  # type: ignore[arg-type]


ACTIONS: dict[str, Callable[[int], Call[int]]] = {
    "complete": _patch("completed"),
    "fail": _patch("failed"),
    "time_out": _patch("timed_out"),
    "set_running": _patch("running"),
    "schedule": _patch("scheduled"),
    "cancel": _patch("cancelled"),
    "cancel_with_output": _patch("cancelled", output="bye"),
    "requeue": _patch("queued"),
    "requeue_with_output": _patch("queued", output="again"),
    "output": lambda job_id: commands.set_output(job_id, {"done": 1}),
    "heartbeat": lambda job_id: commands.heartbeat(job_id),
    "hand_back": lambda job_id: commands.return_job(job_id, 1),  # every state's job ran once at most
    "hand_back_stale": lambda job_id: commands.return_job(job_id, 2),
}

CANCEL, REQUEUE = ("cancelled", "job_cancelled"), ("queued", "job_requeued")
#: state -> {allowed action: (status after it, event it appends)}
ALLOWED: dict[str, dict[str, tuple[str, str]]] = {
    "queued": {"cancel": CANCEL},
    "running": {
        "complete": ("completed", "job_completed"),
        "fail": ("failed", "job_failed"),
        "time_out": ("timed_out", "job_timed_out"),
        "cancel": ("cancelled", "job_cancelled"),
        "cancel_with_output": ("cancelled", "job_cancelled"),
        "output": ("running", "job_output_set"),
        "heartbeat": ("running", "job_heartbeat"),
        "hand_back": ("queued", "job_returned"),
    },
    "completed": {},
    "failed_waiting": {"cancel": CANCEL, "requeue": REQUEUE},
    "failed_ended": {"cancel": CANCEL, "requeue": REQUEUE},  # Ocypod cancels a failed job even once ended
    "timed_out_waiting": {"cancel": CANCEL, "requeue": REQUEUE},
    "timed_out_ended": {"requeue": REQUEUE},
    "cancelled": {"requeue": REQUEUE},
}
ALLOWED_CASES = [(s, a) for s in STATES for a in ALLOWED[s]]
REFUSED_CASES = [(s, a) for s in STATES for a in ACTIONS if a not in ALLOWED[s]]


# --- the table, allowed and refused ------------------------------------------------------------


@pytest.mark.parametrize(("state", "action"), ALLOWED_CASES)
def test_allowed_transition(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, state: str, action: str
) -> None:
    job_id = job_in_state(ledger, frozen, state)
    length = stream_length(ledger.client, ledger.keys.namespace)
    assert ledger.run(ACTIONS[action](job_id)) == 1
    after, event = ALLOWED[state][action]
    assert status(ledger, job_id) == after
    assert event_types(ledger, job_id)[-1] == event
    assert stream_length(ledger.client, ledger.keys.namespace) == length + 1
    assert_well_placed(ledger)


@pytest.mark.parametrize(("state", "action"), REFUSED_CASES)
def test_refused_transition_changes_nothing(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, state: str, action: str
) -> None:
    job_id = job_in_state(ledger, frozen, state)
    refused(ledger, ACTIONS[action](job_id), Conflict)


@pytest.mark.parametrize(
    ("state", "ended"),
    [("queued", False), ("running", False), ("completed", True), ("failed_waiting", False),
     ("failed_ended", True), ("timed_out_waiting", False), ("timed_out_ended", True),
     ("cancelled", True)],
)  # fmt: skip
def test_ended_exactly_as_the_spec_says(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, state: str, ended: bool
) -> None:
    job_id = job_in_state(ledger, frozen, state)
    assert job(ledger, job_id)["ended"] is ended
    assert (raw_job(ledger, job_id).get("ended") == "1") is ended
    assert_well_placed(ledger)


def test_requeued_job_is_not_ended(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str) -> None:
    job_id = job_in_state(ledger, frozen, "failed_ended")
    update(ledger, job_id, status="queued")
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["ended_at"]) == ("queued", False, None)


# --- create, fetch, stop ------------------------------------------------------------------------


def test_create_queues_the_job(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str) -> None:
    job_id = create(ledger, input={"n": 1}, tags=["a", "b"])
    view = job(ledger, job_id)
    assert (view["status"], view["ended"]) == ("queued", False)
    assert view["created_at"] == "2030-01-01T00:00:00.000000Z"
    assert (view["input"], view["tags"], view["timeout"]) == ({"n": 1}, ["a", "b"], "10s")
    assert event_types(ledger, job_id) == ["job_created"]
    assert_well_placed(ledger)


def test_fetch_starts_oldest_first_with_attempt_and_worker(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    first, second, third = (create(ledger, input=i) for i in range(3))
    frozen.tick(1)
    fetched = fetch(ledger, count=2, worker="w-1")
    assert [(f.id, f.attempt, f.input_text) for f in fetched] == [(first, 1, "0"), (second, 1, "1")]
    view = job(ledger, first)
    assert (view["status"], view["attempt"], view["worker"]) == ("running", 1, "w-1")
    assert view["started_at"] == "2030-01-01T00:00:01.000000Z"
    assert status(ledger, third) == "queued"
    assert_well_placed(ledger)


def test_complete_records_output_and_end(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str) -> None:
    job_id = job_in_state(ledger, frozen, "running")
    frozen.tick(2)
    update(ledger, job_id, status="completed", output={"ok": True})
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["output"]) == ("completed", True, {"ok": True})
    assert raw_job(ledger, job_id)["ended_at"] == str(at(2))


# --- the worker's hand-back ----------------------------------------------------------------------


def test_hand_back_requeues_without_a_retry_and_fences_the_attempt(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    ahead, job_id, behind = create(ledger), create(ledger, retries=1), create(ledger, priority=0)
    low = create(ledger, priority=0)
    fetched = fetch(ledger, count=2, worker="w-1")
    assert [f.id for f in fetched] == [ahead, job_id]
    frozen.tick(1)
    update(ledger, job_id, output={"partial": True}, attempt=1)
    ledger.run(commands.heartbeat(job_id, 1))
    frozen.tick(1)
    assert ledger.run(commands.return_job(job_id, 1)) == 1
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["retries_attempted"]) == ("queued", False, 0)
    assert (view["attempt"], view["worker"]) == (1, "w-1")
    assert (view["started_at"], view["last_heartbeat"], view["output"]) == (None, None, None)
    last = events(ledger.client, ledger.keys.namespace, job_id)[-1]
    assert (last["type"], last["data"]) == ("job_returned", '{"attempt":1,"worker":"w-1"}')
    assert ledger.client.hget(ledger.keys.build("stats"), "total_jobs_retried") is None
    for stale in (
        commands.update_job(job_id, JobUpdate(status="completed", attempt=1)),
        commands.update_job(job_id, JobUpdate(status="failed", attempt=1)),
        commands.update_job(job_id, JobUpdate(progress=5, attempt=1)),
        commands.set_output(job_id, 1, attempt=1),
        commands.heartbeat(job_id, 1),
    ):
        refused(ledger, stale, Conflict)
    with unchanged(ledger):  # the hand-back resent: as the first answered, nothing appended
        assert ledger.run(commands.return_job(job_id, 1)) == 0
    assert ledger.client.zscore(ledger.keys.build("due_run"), job_id) is None
    assert_well_placed(ledger)
    # back at the end of its priority: after the jobs that were queued before it came back
    assert [f.id for f in fetch(ledger, count=3)] == [behind, low, job_id]
    assert job(ledger, job_id)["attempt"] == 2


def test_hand_back_in_a_batch_and_to_a_deleted_queue(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    first, second = create(ledger), create(ledger)
    fetch(ledger, count=2)
    outcomes = ledger.run(commands.update_jobs([
        (first, JobUpdate(status="queued", attempt=1)), (second, JobUpdate(status="queued", attempt=2)),
    ]))  # fmt: skip
    assert outcomes[0] == 1 and isinstance(outcomes[1], Conflict)
    assert (status(ledger, first), status(ledger, second)) == ("queued", "running")
    ledger.run(commands.delete_queue("q"))
    refused(ledger, commands.return_job(second, 1), Conflict)  # nowhere to go back to
    assert status(ledger, second) == "running"
    assert_well_placed(ledger)


# --- timeouts -----------------------------------------------------------------------------------


def test_running_job_times_out_at_its_timeout(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, timeout="30s")
    fetch_one(ledger)
    frozen.tick(29.999)
    assert run_tick(ledger)["timeouts"] == []
    assert status(ledger, job_id) == "running"
    frozen.tick(0.001)
    assert run_tick(ledger)["timeouts"] == [job_id]
    view = job(ledger, job_id)
    assert (view["status"], view["ended"]) == ("timed_out", True)
    assert event_types(ledger, job_id)[-1] == "job_timed_out"
    assert_well_placed(ledger)


def test_heartbeat_pushes_the_heartbeat_deadline(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, timeout="0s", heartbeat_timeout="10s")
    fetch_one(ledger)
    frozen.tick(8)
    ledger.run(commands.heartbeat(job_id))
    assert ledger.client.zscore(ledger.keys.build("due_run"), job_id) == at(18)
    frozen.tick(9.999)  # 17.999s: past the first deadline (10s), before the pushed one (18s)
    assert run_tick(ledger)["timeouts"] == []
    assert status(ledger, job_id) == "running"
    frozen.tick(0.001)
    assert run_tick(ledger)["timeouts"] == [job_id]
    assert status(ledger, job_id) == "timed_out"
    assert '"kind":"heartbeat_timeout"' in events(ledger.client, ledger.keys.namespace, job_id)[-1]["data"]


def test_heartbeat_cannot_push_past_the_timeout(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, timeout="15s", heartbeat_timeout="10s")
    fetch_one(ledger)
    frozen.tick(9)
    ledger.run(commands.heartbeat(job_id))
    frozen.tick(6)  # 15s: timeout reached, heartbeat deadline (19s) not yet
    assert run_tick(ledger)["timeouts"] == [job_id]
    assert '"kind":"timeout"' in events(ledger.client, ledger.keys.namespace, job_id)[-1]["data"]


# --- retries ------------------------------------------------------------------------------------


def _fail_and_wait(ledger: Ledger, frozen: FrozenDateTimeFactory, job_id: int, delay: float) -> None:
    """Fail the running job; it comes back to the queue after exactly ``delay`` seconds."""
    update(ledger, job_id, status="failed")
    assert job(ledger, job_id)["ended"] is False
    frozen.tick(delay - 0.001)
    assert run_tick(ledger)["retries"] == []
    assert status(ledger, job_id) == "failed"
    frozen.tick(0.001)
    assert run_tick(ledger)["retries"] == [job_id]
    assert status(ledger, job_id) == "queued"
    assert event_types(ledger, job_id)[-1] == "job_requeued"


def test_retry_delays_are_honoured_and_the_last_repeats(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=3, retry_delays=["10s", "20s"])
    for attempted, delay in enumerate([10, 20, 20]):
        assert fetch_one(ledger).attempt == attempted + 1
        _fail_and_wait(ledger, frozen, job_id, delay)
        assert job(ledger, job_id)["retries_attempted"] == attempted + 1
        assert_well_placed(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["retries_attempted"]) == ("failed", True, 3)
    frozen.tick(3600)
    assert run_tick(ledger)["retries"] == []


def test_timed_out_job_is_retried_after_its_delay(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, timeout="5s", retries=1, retry_delays=["30s"])
    fetch_one(ledger)
    frozen.tick(5)
    assert run_tick(ledger) == {**NOTHING_DUE, "timeouts": [job_id]}
    assert (status(ledger, job_id), job(ledger, job_id)["ended"]) == ("timed_out", False)
    frozen.tick(29.999)
    assert run_tick(ledger)["retries"] == []
    frozen.tick(0.001)
    assert run_tick(ledger)["retries"] == [job_id]
    view = job(ledger, job_id)
    assert (view["status"], view["retries_attempted"], view["ended"]) == ("queued", 1, False)
    assert fetch_one(ledger).attempt == 2


def test_retry_without_delays_is_due_at_once(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=1)
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    assert run_tick(ledger)["retries"] == [job_id]
    assert status(ledger, job_id) == "queued"


def test_manual_requeue_does_not_count_as_retry(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = job_in_state(ledger, frozen, "failed_waiting")
    update(ledger, job_id, status="queued")
    view = job(ledger, job_id)
    assert (view["status"], view["retries_attempted"]) == ("queued", 0)
    frozen.tick(7200)
    assert run_tick(ledger)["retries"] == []  # the pending retry went with the requeue
    assert_well_placed(ledger)


def test_cancelled_waiting_job_is_never_retried(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = job_in_state(ledger, frozen, "timed_out_waiting")  # timed out at 10s, retry due at 1h10s
    update(ledger, job_id, status="cancelled")
    assert (status(ledger, job_id), job(ledger, job_id)["ended"]) == ("cancelled", True)
    frozen.tick(3600)  # the retry would be due now; the expiry (1h after cancelling) is
    assert run_tick(ledger) == {**NOTHING_DUE, "expiry": [job_id]}
    assert event_types(ledger, job_id)[-2:] == ["job_cancelled", "job_expired"]


# --- expiry and deletion ------------------------------------------------------------------------


def test_ended_job_expires_after_expires_after(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, tags=["t"], expires_after="10s")
    fetch_one(ledger)
    frozen.tick(3)
    update(ledger, job_id, status="completed")
    frozen.tick(9.999)
    assert run_tick(ledger)["expiry"] == []
    frozen.tick(0.001)
    assert run_tick(ledger)["expiry"] == [job_id]
    with pytest.raises(NotFound):
        job(ledger, job_id)
    assert event_types(ledger, job_id)[-1] == "job_expired"
    assert ledger.client.llen(ledger.keys.history(job_id)) == 4
    assert not ledger.client.exists(ledger.keys.tag("t"))
    assert_well_placed(ledger)


def test_zero_expires_after_keeps_the_job_forever(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, expires_after="0s")
    update(ledger, job_id, status="cancelled")
    frozen.tick(10 * 365 * 86400)
    assert run_tick(ledger)["expiry"] == []
    assert status(ledger, job_id) == "cancelled"
    assert_well_placed(ledger)


@pytest.mark.parametrize("state", STATES)
def test_delete_in_any_state(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, state: str) -> None:
    job_id = job_in_state(ledger, frozen, state)
    assert ledger.run(commands.delete_job(job_id)) == 1
    with pytest.raises(NotFound):
        job(ledger, job_id)
    assert event_types(ledger, job_id)[-1] == "job_deleted"
    assert not ledger.client.exists(ledger.keys.tag("t"))
    assert_well_placed(ledger)
    frozen.tick(86400)
    assert run_tick(ledger) == NOTHING_DUE


# --- missing jobs and queues --------------------------------------------------------------------

MISSING_JOB_CALLS: list[Call[Any]] = [
    *(make_call(404) for make_call in ACTIONS.values()),
    commands.update_job(404, JobUpdate(output=1, attempt=1)),
    commands.delete_job(404),
]
MISSING_QUEUE_CALLS: list[Call[Any]] = [
    commands.create_job("nope", JobOptions()),
    commands.fetch_jobs("nope"),
    commands.delete_queue("nope"),
]


@pytest.mark.parametrize("call", MISSING_JOB_CALLS + MISSING_QUEUE_CALLS)
def test_missing_job_or_queue_is_not_found(ledger: Ledger, queue: str, call: Call[Any]) -> None:
    refused(ledger, call, NotFound)


# --- queue deletion -----------------------------------------------------------------------------


def test_deleting_a_queue_deletes_its_queued_jobs_only(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    running = job_in_state(ledger, frozen, "running")
    completed = job_in_state(ledger, frozen, "completed")
    queued = [create(ledger, tags=["t"]) for _ in range(3)]
    assert ledger.run(commands.delete_queue("q")) == 3
    for job_id in queued:
        assert event_types(ledger, job_id) == ["job_created", "job_deleted"]
        assert '"queue_deleted"' in events(ledger.client, ledger.keys.namespace, job_id)[-1]["data"]
        with pytest.raises(NotFound):
            job(ledger, job_id)
    assert (status(ledger, running), status(ledger, completed)) == ("running", "completed")
    refused(ledger, commands.create_job("q", JobOptions()), NotFound)
    update(ledger, running, status="completed")
    assert_well_placed(ledger)


def test_waiting_job_of_a_deleted_queue_ends_at_its_retry_time(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = job_in_state(ledger, frozen, "failed_waiting")  # retry due in 1h
    ledger.run(commands.delete_queue("q"))
    frozen.tick(3599)
    assert run_tick(ledger)["retries"] == []
    assert (status(ledger, job_id), job(ledger, job_id)["ended"]) == ("failed", False)
    frozen.tick(1)
    assert run_tick(ledger)["retries"] == [job_id]
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["retries_attempted"]) == ("failed", True, 0)
    assert event_types(ledger, job_id)[-1] == "job_ended"
    assert raw_job(ledger, job_id)["ended_at"] == str(at(3600))
    refused(ledger, ACTIONS["requeue"](job_id), Conflict)  # no queue to go back to
    assert_well_placed(ledger)
    frozen.tick(3600)  # expires_after (1h) since it ended
    assert run_tick(ledger)["expiry"] == [job_id]


def test_put_queue_creates_then_updates(ledger: Ledger) -> None:
    assert put_queue(ledger, "q") is True
    assert put_queue(ledger, "q", retries=2) is False
    assert ledger.client.hget(ledger.keys.queue("q"), "retries") == b"2"

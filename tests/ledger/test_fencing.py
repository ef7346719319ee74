"""Fencing: an update that names an attempt acts only for the running attempt.

The story: a job is fetched (attempt 1), times out, is retried and fetched again (attempt 2).  The
worker of attempt 1 can then neither heartbeat, set output, nor finish the job; the worker of
attempt 2 can.  Updates that name no attempt behave as in Ocypod: they act on whatever run is current.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.commands import Call
from jobledger.ledger.errors import Conflict
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.runner import Ledger
from tests.support.ledger import (
    assert_well_placed,
    create,
    event_types,
    fetch_one,
    job,
    put_queue,
    refused,
    run_tick,
    update,
)

Act = Callable[[int, int | None], Call[Any]]

ACTS: dict[str, Act] = {
    "heartbeat": lambda job_id, attempt: commands.heartbeat(job_id, attempt),
    "set_output": lambda job_id, attempt: commands.set_output(job_id, {"by": attempt}, attempt),
    "complete": lambda job_id, attempt: commands.update_job(
        job_id, JobUpdate(status="completed", attempt=attempt)
    ),
    "fail": lambda job_id, attempt: commands.update_job(job_id, JobUpdate(status="failed", attempt=attempt)),
    "cancel": lambda job_id, attempt: commands.update_job(
        job_id, JobUpdate(status="cancelled", attempt=attempt)
    ),
    "complete_with_output": lambda job_id, attempt: commands.update_job(
        job_id, JobUpdate(status="completed", output="late", attempt=attempt)
    ),
}
#: act -> (status after it, event it appends) when it names the running attempt
OUTCOME = {
    "heartbeat": ("running", "job_heartbeat"),
    "set_output": ("running", "job_output_set"),
    "complete": ("completed", "job_completed"),
    "fail": ("failed", "job_failed"),
    "cancel": ("cancelled", "job_cancelled"),
    "complete_with_output": ("completed", "job_completed"),
}


@pytest.fixture
def second_run(ledger: Ledger, frozen: FrozenDateTimeFactory) -> int:
    """A job whose attempt 1 timed out and which is now running as attempt 2."""
    put_queue(ledger, "q", timeout="10s", retries=1, retry_delays=["5s"])
    job_id = create(ledger)
    assert fetch_one(ledger).attempt == 1
    frozen.tick(10)
    assert run_tick(ledger)["timeouts"] == [job_id]
    frozen.tick(5)
    assert run_tick(ledger)["retries"] == [job_id]
    fetched = fetch_one(ledger)
    assert (fetched.id, fetched.attempt) == (job_id, 2)
    assert job(ledger, job_id)["attempt"] == 2
    return job_id


@pytest.mark.parametrize("act", ACTS)
def test_stale_attempt_is_refused_and_changes_nothing(ledger: Ledger, second_run: int, act: str) -> None:
    error = refused(ledger, ACTS[act](second_run, 1), Conflict)
    assert "attempt 1" in str(error)
    assert job(ledger, second_run)["status"] == "running"


@pytest.mark.parametrize("act", ACTS)
def test_future_attempt_is_refused(ledger: Ledger, second_run: int, act: str) -> None:
    refused(ledger, ACTS[act](second_run, 3), Conflict)


@pytest.mark.parametrize("act", ACTS)
def test_running_attempt_is_accepted(ledger: Ledger, second_run: int, act: str) -> None:
    assert ledger.run(ACTS[act](second_run, 2)) == 1
    after, event = OUTCOME[act]
    assert job(ledger, second_run)["status"] == after
    assert event_types(ledger, second_run)[-1] == event
    assert_well_placed(ledger)


@pytest.mark.parametrize("act", ACTS)
def test_no_attempt_acts_on_the_current_run_as_in_ocypod(ledger: Ledger, second_run: int, act: str) -> None:
    assert ledger.run(ACTS[act](second_run, None)) == 1
    assert job(ledger, second_run)["status"] == OUTCOME[act][0]


def test_attempt_2_finishes_after_attempt_1_was_refused(ledger: Ledger, second_run: int) -> None:
    refused(ledger, ACTS["complete"](second_run, 1), Conflict)
    update(ledger, second_run, status="completed", output={"by": 2}, attempt=2)
    view = job(ledger, second_run)
    assert (view["status"], view["output"], view["attempt"]) == ("completed", {"by": 2}, 2)


def test_finished_attempt_is_refused_even_when_it_was_the_last(ledger: Ledger, second_run: int) -> None:
    """All but the resend of the completion itself, which answers as the first did (tests/ledger/
    test_resend.py)."""
    update(ledger, second_run, status="completed", attempt=2)
    for act in ACTS:
        if act != "complete":
            refused(ledger, ACTS[act](second_run, 2), Conflict)


def test_stale_attempt_of_a_job_waiting_to_retry_is_refused(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q", timeout="10s", retries=1, retry_delays=["1h"])
    job_id = create(ledger)
    fetch_one(ledger)
    frozen.tick(10)
    run_tick(ledger)
    assert job(ledger, job_id)["status"] == "timed_out"
    for act in ACTS:
        refused(ledger, ACTS[act](job_id, 1), Conflict)
    refused(ledger, commands.update_job(job_id, JobUpdate(status="queued", attempt=1)), Conflict)
    assert_well_placed(ledger)


def test_stale_worker_naming_no_attempt_still_wins_as_in_ocypod(ledger: Ledger, second_run: int) -> None:
    """Without an attempt there is no fencing: the late worker of attempt 1 completes attempt 2."""
    update(ledger, second_run, status="completed", output={"by": 1})
    view = job(ledger, second_run)
    assert (view["status"], view["output"], view["attempt"]) == ("completed", {"by": 1}, 2)


def test_fetch_starts_a_new_attempt_each_time(ledger: Ledger) -> None:
    put_queue(ledger, "q", retries=2)
    job_id = create(ledger)
    for attempt in (1, 2, 3):
        assert fetch_one(ledger).attempt == attempt
        update(ledger, job_id, status="failed", attempt=attempt)
        run_tick(ledger)
    assert job(ledger, job_id)["ended"] is True

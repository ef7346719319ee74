"""A resend by the attempt that made an update: the same status, the same attempt, after the first
took effect (its answer lost on the way back), answers as the first did and appends nothing.
Anything else naming an attempt that is over stays a conflict (tests/ledger/test_fencing.py)."""

from __future__ import annotations

from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
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
    unchanged,
    update,
)


def _running(ledger: Ledger, **settings: object) -> int:
    put_queue(ledger, "q", **settings)
    job_id = create(ledger)
    assert fetch_one(ledger).attempt == 1
    return job_id


def _resent(ledger: Ledger, job_id: int, change: JobUpdate) -> None:
    with unchanged(ledger):
        assert ledger.run(commands.update_job(job_id, change)) == 0


def test_a_completion_resent_appends_nothing(ledger: Ledger) -> None:
    job_id = _running(ledger)
    change = JobUpdate(status="completed", output={"n": 1}, attempt=1)
    assert ledger.run(commands.update_job(job_id, change)) == 1
    _resent(ledger, job_id, change)
    assert event_types(ledger, job_id) == ["job_created", "job_started", "job_completed"]
    assert job(ledger, job_id)["output"] == {"n": 1}
    assert_well_placed(ledger)


def test_a_completion_without_output_resent(ledger: Ledger) -> None:
    job_id = _running(ledger)
    update(ledger, job_id, status="completed", attempt=1)
    _resent(ledger, job_id, JobUpdate(status="completed", attempt=1))


def test_another_output_is_not_a_resend(ledger: Ledger) -> None:
    job_id = _running(ledger)
    update(ledger, job_id, status="completed", output={"n": 1}, attempt=1)
    change = JobUpdate(status="completed", output={"n": 2}, attempt=1)
    refused(ledger, commands.update_job(job_id, change), Conflict)
    _resent(ledger, job_id, JobUpdate(status="completed", attempt=1))  # sends no output: changes none


def test_another_status_is_not_a_resend(ledger: Ledger) -> None:
    job_id = _running(ledger)
    update(ledger, job_id, status="completed", attempt=1)
    refused(ledger, commands.update_job(job_id, JobUpdate(status="failed", attempt=1)), Conflict)
    refused(ledger, commands.update_job(job_id, JobUpdate(status="cancelled", attempt=1)), Conflict)


def test_a_failure_resent_while_it_waits_to_retry(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    job_id = _running(ledger, retries=1, retry_delays=["5s"])
    error = {"kind": "E", "message": "m"}
    failure = JobUpdate.model_validate({"status": "failed", "attempt": 1, "error": error})
    update(ledger, job_id, **failure.model_dump(exclude_none=True))
    _resent(ledger, job_id, failure)
    assert len(job(ledger, job_id)["errors"]) == 1
    frozen.tick(5)
    assert run_tick(ledger)["retries"] == [job_id]
    # retried: attempt 1 is over and the job moved on; the late resend is an update of a past attempt
    refused(ledger, commands.update_job(job_id, failure), Conflict)


def test_a_cancellation_and_a_hand_back_resent(ledger: Ledger) -> None:
    job_id = _running(ledger)
    update(ledger, job_id, status="cancelled", attempt=1)
    _resent(ledger, job_id, JobUpdate(status="cancelled", attempt=1))
    other = create(ledger)
    assert fetch_one(ledger).id == other
    update(ledger, other, status="queued", attempt=1)
    _resent(ledger, other, JobUpdate(status="queued", attempt=1))
    assert event_types(ledger, other)[-1] == "job_returned"
    assert_well_placed(ledger)


def test_a_resend_of_a_past_attempt_once_the_next_runs(ledger: Ledger) -> None:
    job_id = _running(ledger)
    update(ledger, job_id, status="queued", attempt=1)
    assert fetch_one(ledger).attempt == 2
    refused(ledger, commands.update_job(job_id, JobUpdate(status="queued", attempt=1)), Conflict)


def test_update_jobs_answers_a_resend_with_no_events(ledger: Ledger) -> None:
    job_id = _running(ledger)
    change = JobUpdate(status="completed", attempt=1)
    assert ledger.run(commands.update_jobs([(job_id, change)])) == [1]
    with unchanged(ledger):
        assert ledger.run(commands.update_jobs([(job_id, change)])) == [0]

"""During and after a run, through the ledger: progress and message, the errors
recorded from failures and timeouts, and retry decided by error kind (retry_on / no_retry_on).
Backoff, max_queued_time and retry_at are in ``test_extensions_retry.py``."""

from __future__ import annotations

from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory
from pydantic import ValidationError

from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from tests.ledger.extension_support import (
    HEARTBEAT_MESSAGE,
    QUEUED_MESSAGE,
    TIMEOUT_MESSAGE,
    error,
    last_event,
    retried_exactly_after,
    time_out,
    when,
)
from tests.support.ledger import (
    assert_well_placed,
    create,
    event_types,
    fetch_one,
    job,
    job_in_state,
    put_queue,
    refused,
    run_tick,
    status,
    update,
)

# --- progress and message -----------------------------------------------------------------------


def test_progress_and_message_of_a_running_job(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger)
    fetch_one(ledger)
    assert update(ledger, job_id, progress=40, message="half way") == 1
    assert (job(ledger, job_id)["progress"], job(ledger, job_id)["message"]) == (40, "half way")
    assert update(ledger, job_id, message="nearly") == 1  # one alone leaves the other as it was
    assert update(ledger, job_id, progress=0) == 1
    assert (job(ledger, job_id)["progress"], job(ledger, job_id)["message"]) == (0, "nearly")
    history = ledger.read(readers.history(job_id))
    progressed = [item["data"] for item in history if item["type"] == "job_progressed"]
    assert progressed == [{"progress": 40, "message": "half way"}, {"message": "nearly"}, {"progress": 0}]
    assert_well_placed(ledger)


def test_progress_with_a_final_status_appends_both(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger)
    fetch_one(ledger)
    assert update(ledger, job_id, progress=100, status="completed") == 2
    assert event_types(ledger, job_id)[-2:] == ["job_progressed", "job_completed"]
    assert (job(ledger, job_id)["progress"], status(ledger, job_id)) == (100, "completed")


def test_a_new_attempt_starts_without_the_last_ones_progress(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q", retries=1)
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, progress=90, message="almost")
    update(ledger, job_id, status="failed")
    # the failed attempt still shows how far it got, while it waits to retry
    assert (job(ledger, job_id)["progress"], job(ledger, job_id)["message"]) == (90, "almost")
    retried_exactly_after(ledger, frozen, job_id, 0)
    assert fetch_one(ledger).attempt == 2
    assert (job(ledger, job_id)["progress"], job(ledger, job_id)["message"]) == (None, None)
    progressed = [e["data"] for e in ledger.read(readers.history(job_id)) if e["type"] == "job_progressed"]
    assert progressed == [{"progress": 90, "message": "almost"}]  # history keeps it
    assert_well_placed(ledger)


@pytest.mark.parametrize("state", ["queued", "completed", "failed_waiting", "timed_out_ended", "cancelled"])
def test_progress_of_a_job_not_running_is_refused(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, state: str
) -> None:
    job_id = job_in_state(ledger, frozen, state)
    refused(ledger, commands.update_job(job_id, JobUpdate(progress=10)), Conflict)
    refused(ledger, commands.update_job(job_id, JobUpdate(message="hi")), Conflict)


def test_progress_of_a_scheduled_job_is_refused(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, run_at=when(30))
    refused(ledger, commands.update_job(job_id, JobUpdate(progress=10, message="x")), Conflict)


def test_progress_with_a_refused_status_appends_nothing(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    """A refused PATCH changes nothing, even when its progress part alone would have been taken."""
    job_id = create(ledger)
    fetch_one(ledger)
    for patch in (JobUpdate(progress=50, status="queued"), JobUpdate(message="m", output=1, status="queued")):
        with pytest.raises(Conflict):
            ledger.run(commands.update_job(job_id, patch))
        assert event_types(ledger, job_id) == ["job_created", "job_started"], "the refused PATCH appended"
        assert (job(ledger, job_id)["progress"], job(ledger, job_id)["message"]) == (None, None)
    assert_well_placed(ledger)


@pytest.mark.parametrize("progress", [-1, 101, 1.5, "50", True])
def test_progress_outside_0_to_100_is_bad_input(progress: object) -> None:
    with pytest.raises(ValidationError, match="progress"):
        JobUpdate(progress=progress)  # type: ignore[arg-type]


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reported", "kind", "message"),
    [
        ("disk full", "error", "disk full"),
        ({"kind": "IOError", "message": "no route"}, "IOError", "no route"),
        ({"kind": "IOError"}, "IOError", ""),
        (None, "error", ""),  # a failure without an error is still recorded
    ],
)
def test_a_failure_records_its_error(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, reported: Any, kind: str, message: str
) -> None:
    job_id = create(ledger)
    fetch_one(ledger)
    frozen.tick(2)
    fields = {} if reported is None else {"error": reported}
    update(ledger, job_id, status="failed", **fields)
    assert job(ledger, job_id)["errors"] == [error(2, 1, kind, message)]
    assert last_event(ledger, job_id)["data"]["error"] == {"kind": kind, "message": message}


def test_error_goes_with_status_failed_only() -> None:
    for status_ in (None, "completed", "cancelled", "queued"):
        with pytest.raises(ValidationError, match="error"):
            JobUpdate(status=status_, error="x")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="error"):
        JobUpdate.model_validate({"status": "failed", "error": {"kind": "x", "stack": "..."}})


def test_errors_accumulate_across_attempts_oldest_first(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=3, timeout="0s", heartbeat_timeout="5s")
    fetch_one(ledger)
    frozen.tick(1)
    update(ledger, job_id, status="failed", error={"kind": "A", "message": "a"})
    assert run_tick(ledger)["retries"] == [job_id]  # no delay: due at once
    assert fetch_one(ledger).attempt == 2
    frozen.tick(5)
    assert run_tick(ledger)["timeouts"] == [job_id]
    assert fetch_one(ledger).attempt == 3
    frozen.tick(1)
    update(ledger, job_id, status="failed", error="c")
    assert job(ledger, job_id)["errors"] == [
        error(1, 1, "A", "a"),
        error(6, 2, "heartbeat_timeout", HEARTBEAT_MESSAGE),
        error(7, 3, "error", "c"),
    ]
    update(ledger, job_id, status="queued")  # a manual requeue keeps the record
    assert len(job(ledger, job_id)["errors"]) == 3


@pytest.mark.parametrize(
    ("kind", "message", "attempt"),
    [
        ("timeout", TIMEOUT_MESSAGE, 1),
        ("heartbeat_timeout", HEARTBEAT_MESSAGE, 1),
        ("queued_timeout", QUEUED_MESSAGE, 0),
    ],
)
def test_a_timeout_records_its_kind(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, kind: str, message: str, attempt: int
) -> None:
    job_id = time_out(ledger, frozen, kind)
    view = job(ledger, job_id)
    assert (view["status"], view["ended"]) == ("timed_out", True)
    assert view["errors"] == [error(5, attempt, kind, message)]
    entry = last_event(ledger, job_id)
    assert (entry["type"], entry["v"]) == ("job_timed_out", "2")
    assert entry["data"] == {"error": {"kind": kind, "message": message}, "ended": True}
    assert_well_placed(ledger)


# --- retry by error kind ------------------------------------------------------------------------

#: (queue's settings, job's options, kind of the error, whether the job ends); retries are left
KIND_CASES = [
    ({}, {}, "io", False),
    ({}, {"no_retry_on": ["fatal"]}, "fatal", True),
    ({}, {"no_retry_on": ["fatal"]}, "io", False),
    ({}, {"retry_on": ["io", "net"]}, "net", False),
    ({}, {"retry_on": ["io"]}, "fatal", True),
    ({}, {"retry_on": ["io"], "no_retry_on": ["io"]}, "io", True),
    ({"no_retry_on": ["fatal"]}, {}, "fatal", True),  # the queue's lists are the job's default
    ({"retry_on": ["io"]}, {}, "fatal", True),
    ({"no_retry_on": ["fatal"]}, {"no_retry_on": ["other"]}, "fatal", False),  # the job's replace them
    ({"retry_on": ["io"]}, {"retry_on": ["fatal"]}, "fatal", False),
]


def _case_id(settings: dict[str, Any], options: dict[str, Any], kind: str, ends: bool) -> str:
    lists = [f"{where}.{name}={'+'.join(kinds)}" for where, given in (("queue", settings), ("job", options))
             for name, kinds in given.items()]  # fmt: skip
    return f"{','.join(lists) or 'no-lists'}:{kind}:{'ends' if ends else 'retries'}"


@pytest.mark.parametrize(
    ("settings", "options", "kind", "ends"), KIND_CASES, ids=[_case_id(*case) for case in KIND_CASES]
)
def test_the_error_kind_decides_retry(
    ledger: Ledger,
    frozen: FrozenDateTimeFactory,
    settings: dict[str, Any],
    options: dict[str, Any],
    kind: str,
    ends: bool,
) -> None:
    put_queue(ledger, "q", retries=2, retry_delays=["10s"], **settings)
    job_id = create(ledger, **options)
    fetch_one(ledger)
    update(ledger, job_id, status="failed", error={"kind": kind, "message": "m"})
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["errors"][0]["kind"]) == ("failed", ends, kind)
    assert last_event(ledger, job_id)["data"]["ended"] is ends
    if ends:
        assert view["retry_at"] is None
        frozen.tick(60)  # well past the retry delay, before the expiry
        assert run_tick(ledger)["retries"] == []
        assert (status(ledger, job_id), job(ledger, job_id)["retries_attempted"]) == ("failed", 0)
    else:
        retried_exactly_after(ledger, frozen, job_id, 10)
    assert_well_placed(ledger)


def test_a_kind_in_retry_on_ends_the_job_without_retries_left(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q", retries=0, retry_on=["io"])
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="failed", error={"kind": "io"})
    assert job(ledger, job_id)["ended"] is True


@pytest.mark.parametrize("kind", ["timeout", "heartbeat_timeout", "queued_timeout"])
@pytest.mark.parametrize(
    ("lists", "ends"),
    [
        ({}, False),
        ({"no_retry_on": ["{kind}"]}, True),
        ({"retry_on": ["{kind}"]}, False),
        ({"retry_on": ["io"]}, True),
    ],
)
def test_timeouts_obey_the_same_rules(
    ledger: Ledger,
    frozen: FrozenDateTimeFactory,
    queue: str,
    kind: str,
    lists: dict[str, list[str]],
    ends: bool,
) -> None:
    named = {name: [k.format(kind=kind) for k in kinds] for name, kinds in lists.items()}
    job_id = time_out(ledger, frozen, kind, retries=1, retry_delays=["30s"], **named)
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["errors"][-1]["kind"]) == ("timed_out", ends, kind)
    if not ends:
        retried_exactly_after(ledger, frozen, job_id, 30)
        assert job(ledger, job_id)["retries_attempted"] == 1
    assert_well_placed(ledger)

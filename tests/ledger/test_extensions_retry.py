"""Waiting and retrying, through the ledger: exponential retry_backoff beside
retry_delays, max_queued_time (queued_timeout), and retry_at while a job waits to retry."""

from __future__ import annotations

from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from tests.ledger.extension_support import (
    fail_and_retry,
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
    put_queue,
    run_tick,
    status,
    update,
)

# --- retry_backoff ------------------------------------------------------------------------------


def test_backoff_multiplies_by_factor_up_to_max(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=5, retry_backoff={"base": "10s", "factor": 3, "max": "1m"})
    assert job(ledger, job_id)["retry_backoff"] == {"base": "10s", "factor": 3, "max": "1m"}
    fail_and_retry(ledger, frozen, job_id, [10, 30, 60, 60])


def test_backoff_with_a_fractional_factor(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str) -> None:
    job_id = create(ledger, retries=4, retry_backoff={"base": "1s", "factor": 1.5})
    fail_and_retry(ledger, frozen, job_id, [1, 1.5, 2.25, 3.375])


def test_backoff_defaults_factor_2_and_max_1h(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=3, retry_backoff={"base": "20m"})
    fail_and_retry(ledger, frozen, job_id, [1200, 2400, 3600])


def test_the_queue_backoff_is_the_job_default(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "q", retries=2, retry_backoff={"base": "5s", "factor": 4, "max": "1h"})
    job_id = create(ledger)
    fail_and_retry(ledger, frozen, job_id, [5, 20])


@pytest.mark.parametrize("where", ["job", "queue"])
def test_retry_delays_take_precedence_over_backoff(
    ledger: Ledger, frozen: FrozenDateTimeFactory, where: str
) -> None:
    both: dict[str, Any] = {"retries": 2, "retry_delays": ["7s"], "retry_backoff": {"base": "1m"}}
    put_queue(ledger, "q", **(both if where == "queue" else {}))
    job_id = create(ledger, **(both if where == "job" else {}))
    fail_and_retry(ledger, frozen, job_id, [7, 7])


def test_a_jobs_retry_delays_beat_the_queues_backoff(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "q", retries=2, retry_backoff={"base": "1m"})
    job_id = create(ledger, retry_delays=["3s"])
    fail_and_retry(ledger, frozen, job_id, [3, 3])


def test_a_jobs_backoff_beats_the_queues_retry_delays(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    # delays and backoff are one policy: the job's backoff replaces the queue's delays, not behind them
    put_queue(ledger, "q", retries=3, retry_delays=["1s"])
    job_id = create(ledger, retry_backoff={"base": "4s", "factor": 2})
    assert job(ledger, job_id)["retry_delays"] is None  # none of its own: null, as in Ocypod
    fail_and_retry(ledger, frozen, job_id, [4, 8, 16])


def test_a_job_with_empty_retry_delays_retries_at_once_despite_the_queues_backoff(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q", retries=1, retry_backoff={"base": "1m"})
    job_id = create(ledger, retry_delays=[])
    fail_and_retry(ledger, frozen, job_id, [0])


# --- max_queued_time ----------------------------------------------------------------------------


def test_a_job_queued_too_long_times_out_then_ends(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = time_out(ledger, frozen, "queued_timeout")
    assert event_types(ledger, job_id) == ["job_created", "job_timed_out"]
    assert ledger.read(readers.queue_size("q")) == 0
    assert ledger.read(readers.queue_job_ids("q"))["timed_out"] == [job_id]
    assert ledger.run(commands.fetch_jobs("q")) == []


def test_a_job_queued_too_long_retries_and_its_clock_restarts(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, max_queued_time="30s", retries=1, retry_delays=["10s"])
    frozen.tick(30)
    assert run_tick(ledger)["queued"] == [job_id]
    retried_exactly_after(ledger, frozen, job_id, 10)  # back in the queue at 40s
    frozen.tick(29.999)
    assert run_tick(ledger)["queued"] == []
    frozen.tick(0.001)
    assert run_tick(ledger)["queued"] == [job_id]
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["retries_attempted"]) == ("timed_out", True, 1)
    assert [(e["at"], e["attempt"]) for e in view["errors"]] == [(when(30), 0), (when(70), 0)]  # never ran
    assert_well_placed(ledger)


def test_the_queue_max_queued_time_is_the_job_default(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "q", max_queued_time="1m")
    job_id = create(ledger)
    assert job(ledger, job_id)["max_queued_time"] == "1m"
    frozen.tick(60)
    assert run_tick(ledger)["queued"] == [job_id]


def test_max_queued_time_stops_counting_once_the_job_starts(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, max_queued_time="30s", timeout="0s")
    frozen.tick(29)
    fetch_one(ledger)
    frozen.tick(3600)
    assert run_tick(ledger)["queued"] == []
    assert status(ledger, job_id) == "running"
    assert_well_placed(ledger)


def test_max_queued_time_counts_from_the_release_of_a_scheduled_job(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, run_at=when(100), max_queued_time="30s")
    frozen.tick(100)
    assert run_tick(ledger)["releases"] == [job_id]
    frozen.tick(29.999)
    assert run_tick(ledger)["queued"] == []
    frozen.tick(0.001)
    assert run_tick(ledger)["queued"] == [job_id]


def test_a_cancelled_queued_job_does_not_time_out(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, max_queued_time="30s")
    update(ledger, job_id, status="cancelled")
    frozen.tick(60)
    assert run_tick(ledger)["queued"] == []
    assert event_types(ledger, job_id) == ["job_created", "job_cancelled"]


# --- retry_at -----------------------------------------------------------------------------------


def test_retry_at_is_shown_while_waiting_and_cleared_after(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=3, retry_delays=["1m"])
    assert job(ledger, job_id)["retry_at"] is None
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    retried_exactly_after(ledger, frozen, job_id, 60)  # cleared by the scheduler's requeue
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    assert job(ledger, job_id)["retry_at"] == when(120)
    update(ledger, job_id, status="queued")  # cleared by a manual requeue
    assert job(ledger, job_id)["retry_at"] is None
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    assert job(ledger, job_id)["retry_at"] == when(120)
    update(ledger, job_id, status="cancelled")  # cleared by a cancel
    assert job(ledger, job_id)["retry_at"] is None
    assert_well_placed(ledger)

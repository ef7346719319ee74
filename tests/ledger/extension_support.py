"""Helpers of the extension tests (``test_extensions*.py``): times relative to the frozen START,
the job's errors as the view shows them, and waiting out a retry, a timeout or a series of retries."""

from __future__ import annotations

import json
from typing import Any

from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger.durations import format_time
from jobledger.ledger.runner import Ledger
from tests.support.ledger import (
    assert_well_placed,
    at,
    create,
    events,
    fetch_one,
    job,
    run_tick,
    status,
    update,
)

HEARTBEAT_MESSAGE = "no heartbeat within heartbeat_timeout"
TIMEOUT_MESSAGE = "running longer than timeout"
QUEUED_MESSAGE = "queued longer than max_queued_time"


def when(seconds: float) -> str:
    """RFC 3339 text of ``seconds`` after START, as a client sends run_at and the view shows times."""
    return str(format_time(at(seconds)))


def error(seconds: float, attempt: int, kind: str, message: str) -> dict[str, Any]:
    """An item of a job's ``errors`` as the view shows it."""
    return {"at": when(seconds), "attempt": attempt, "kind": kind, "message": message}


def last_event(ledger: Ledger, job_id: int) -> dict[str, Any]:
    """The job's newest stream entry, its data decoded."""
    entry: dict[str, Any] = dict(events(ledger.client, ledger.keys.namespace, job_id)[-1])
    entry["data"] = json.loads(entry["data"])
    return entry


def retried_exactly_after(ledger: Ledger, frozen: FrozenDateTimeFactory, job_id: int, delay: float) -> None:
    """The stopped job shows retry_at ``delay`` seconds from now and goes back to its queue exactly then."""
    due = ledger.clock() + round(delay * 1000)
    view = job(ledger, job_id)
    shown = (view["ended"], view["retry_at"])
    assert shown == (False, format_time(due)), (
        f"(ended, retry_at) is {shown}, expected {(False, format_time(due))}"
    )
    frozen.tick(delay - 0.001)
    assert run_tick(ledger)["retries"] == [], f"job {job_id} retried before its delay of {delay}s"
    assert status(ledger, job_id) in ("failed", "timed_out"), status(ledger, job_id)
    frozen.tick(0.001)
    assert run_tick(ledger)["retries"] == [job_id], f"job {job_id} not retried after its delay of {delay}s"
    after = (status(ledger, job_id), job(ledger, job_id)["retry_at"])
    assert after == ("queued", None), f"(status, retry_at) after the retry is {after}"


def time_out(ledger: Ledger, frozen: FrozenDateTimeFactory, kind: str, **options: Any) -> int:
    """A new job of queue "q" that times out with an error of ``kind``, 5s after now."""
    if kind == "queued_timeout":
        job_id = create(ledger, max_queued_time="5s", **options)
    else:
        deadline = {"timeout": "5s"} if kind == "timeout" else {"timeout": "0s", "heartbeat_timeout": "5s"}
        job_id = create(ledger, **deadline, **options)
        fetch_one(ledger)
    check = "queued" if kind == "queued_timeout" else "timeouts"
    frozen.tick(4.999)
    assert run_tick(ledger)[check] == [], f"job {job_id} timed out before its deadline"
    frozen.tick(0.001)
    assert run_tick(ledger)[check] == [job_id], f"job {job_id} did not time out at its deadline"
    return job_id


def fail_and_retry(ledger: Ledger, frozen: FrozenDateTimeFactory, job_id: int, delays: list[float]) -> None:
    """Run and fail the job once per delay; each retry comes exactly that long after its failure."""
    for attempted, delay in enumerate(delays):
        assert fetch_one(ledger).attempt == attempted + 1
        update(ledger, job_id, status="failed")
        retried_exactly_after(ledger, frozen, job_id, delay)
        assert job(ledger, job_id)["retries_attempted"] == attempted + 1, job(ledger, job_id)
        assert_well_placed(ledger)

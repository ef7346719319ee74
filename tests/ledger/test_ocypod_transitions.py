"""The transitions Ocypod allows that jobledger first refused, and Ocypod's requeue: a client times a
running job out (the scheduler's effect: its retries apply), a failed job is cancelled even once
it has ended, and a requeue, manual or automatic, clears what the last run left and counts in
``total_jobs_retried``.  Requeues written by the first version (``job_requeued`` v1) replay as they
were applied."""

from __future__ import annotations

import json

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.events import JobRequeued, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay.rebuild import rebuild
from tests.support.ledger import (
    assert_well_placed,
    at,
    create,
    event_types,
    fetch_one,
    job,
    job_in_state,
    raw_job,
    run_tick,
    update,
)

RUN_FIELDS = ("started_at", "ended_at", "last_heartbeat", "output")


def stat(ledger: Ledger, name: str) -> int:
    return int(ledger.client.hget(ledger.keys.build("stats"), name) or 0)


# --- running -> timed_out by a client -----------------------------------------------------------


def test_client_timeout_waits_to_retry_like_the_schedulers(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = create(ledger, retries=1, retry_delays=["1h"])
    fetch_one(ledger)
    frozen.tick(2)
    assert update(ledger, job_id, status="timed_out", output={"partial": 1}) == 1
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["output"]) == ("timed_out", False, {"partial": 1})
    assert raw_job(ledger, job_id)["retry_at"] == str(at(3602))
    assert [(e["kind"], e["attempt"]) for e in view["errors"]] == [("timeout", 1)]
    assert stat(ledger, "total_jobs_timed_out") == 1
    assert_well_placed(ledger)
    frozen.tick(3600)
    assert run_tick(ledger)["retries"] == [job_id]
    assert (job(ledger, job_id)["status"], job(ledger, job_id)["retries_attempted"]) == ("queued", 1)


def test_client_timeout_without_retries_ends_the_job(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = job_in_state(ledger, frozen, "running")
    update(ledger, job_id, status="timed_out")
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["ended_at"]) == (
        "timed_out",
        True,
        "2030-01-01T00:00:00.000000Z",
    )
    assert event_types(ledger, job_id)[-1] == "job_timed_out"
    assert_well_placed(ledger)


def test_client_timeout_kind_decides_retry(ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str) -> None:
    """Its kind is the scheduler's ``timeout`` (so ``no_retry_on`` applies), unless it names another."""
    plain = create(ledger, retries=2, no_retry_on=["timeout"])
    named = create(ledger, retries=2, no_retry_on=["timeout"])
    fetch_one(ledger), fetch_one(ledger)
    update(ledger, plain, status="timed_out")
    update(ledger, named, status="timed_out", error={"kind": "deadline", "message": "own clock"})
    assert (job(ledger, plain)["ended"], job(ledger, named)["ended"]) == (True, False)
    assert job(ledger, named)["errors"][-1]["kind"] == "deadline"


# --- failed (ended) -> cancelled ------------------------------------------------------------------


def test_failed_job_with_no_retry_left_is_cancelled(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = job_in_state(ledger, frozen, "failed_ended")
    frozen.tick(60)
    assert update(ledger, job_id, status="cancelled") == 1
    view = job(ledger, job_id)
    assert (view["status"], view["ended"], view["ended_at"]) == (
        "cancelled",
        True,
        "2030-01-01T00:01:00.000000Z",
    )
    assert ledger.client.zscore(ledger.keys.build("due_expire"), job_id) == at(3660)  # from the cancel
    assert stat(ledger, "total_jobs_cancelled") == 1
    assert_well_placed(ledger)


# --- a requeue clears the last run ------------------------------------------------------------------


def _run_that_failed(ledger: Ledger, frozen: FrozenDateTimeFactory, retries: int) -> int:
    """A job that ran (a heartbeat, an output) and failed."""
    job_id = create(ledger, retries=retries)
    fetch_one(ledger)
    frozen.tick(1)
    ledger.run(commands.heartbeat(job_id))
    update(ledger, job_id, output={"half": True})
    frozen.tick(1)
    update(ledger, job_id, status="failed")
    assert all(name in raw_job(ledger, job_id) for name in RUN_FIELDS)
    return job_id


@pytest.mark.parametrize("how", ["manual", "automatic"])
def test_requeue_clears_the_last_run_and_counts(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str, how: str
) -> None:
    job_id = _run_that_failed(ledger, frozen, retries=1)
    if how == "manual":
        update(ledger, job_id, status="queued")
    else:
        assert run_tick(ledger)["retries"] == [job_id]
    view = job(ledger, job_id)
    assert view["status"] == "queued"
    assert [view[name] for name in RUN_FIELDS] == [None] * 4
    assert view["retries_attempted"] == (1 if how == "automatic" else 0)
    assert stat(ledger, "total_jobs_retried") == 1
    assert event_types(ledger, job_id) == [
        "job_created", "job_started", "job_heartbeat", "job_output_set", "job_failed", "job_requeued",
    ]  # fmt: skip
    assert_well_placed(ledger)


# --- job_requeued v1 replays as it was applied --------------------------------------------------


def _xadd_v1_requeue(client: redis.Redis, namespace: str, job_id: int) -> None:
    """Append, without applying it, a manual requeue as the first version wrote it."""
    fields = {"type": "job_requeued", "v": "1", "at": str(at(5)), "job": str(job_id), "queue": "q",
              "data": json.dumps({"retry": False})}  # fmt: skip
    client.xadd(Keys(namespace).events, fields)  # type: ignore[arg-type]


def test_v1_requeue_upcasts_to_keep_the_run() -> None:
    entry = {"type": "job_requeued", "v": "1", "at": "1", "job": "1", "queue": "q", "data": '{"retry":false}'}
    assert decode_entry("1-0", entry).data == JobRequeued(retry=False, keep_run=True)


def test_v1_requeue_replays_keeping_the_run(
    ledger: Ledger, frozen: FrozenDateTimeFactory, queue: str
) -> None:
    job_id = _run_that_failed(ledger, frozen, retries=0)
    ns = ledger.keys.namespace
    _xadd_v1_requeue(ledger.client, ns, job_id)
    target = ns + "-v1"
    rebuild(ledger.client, ns, target)
    rebuilt = Ledger(ledger.client, target)
    view = job(rebuilt, job_id)
    assert (view["status"], view["ended"], view["ended_at"]) == ("queued", False, None)
    assert view["output"] == {"half": True}  # as v1 applied it: the run's fields stayed
    assert (view["started_at"], view["last_heartbeat"]) == (
        "2030-01-01T00:00:00.000000Z", "2030-01-01T00:00:01.000000Z",
    )  # fmt: skip
    assert stat(rebuilt, "total_jobs_retried") == 0  # a v1 manual requeue did not count

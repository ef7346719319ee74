"""A job's numeric settings at 0 (off, none) are stored nowhere: not in job_created's data, not in
the job's hash; absent reads as 0.  A job's own 0 still overrides its queue's default, and an event
written before this rule (zeros spelled out) replays to the same projection."""

from __future__ import annotations

import json

import redis

from jobledger.ledger import commands
from jobledger.ledger.job_history import INLINE_FIELD
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from jobledger.replay.rebuild import rebuild
from jobledger.replay.verify import drop_namespace
from tests.support.ledger import create, events, fetch_one, job, put_queue, raw_job, status


def without_history(stored: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in stored.items() if k != INLINE_FIELD}


ZEROS = ("heartbeat_timeout", "retries", "priority", "max_queued_time")


def test_zero_settings_are_left_out_of_the_event_and_the_hash(
    ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    put_queue(ledger, "q", timeout="5m", expires_after="1h")
    job_id = create(ledger)
    (created,) = [e for e in events(client, namespace, job_id) if e["type"] == "job_created"]
    assert json.loads(created["data"]) == {"timeout": 300_000, "expires_after": 3_600_000}
    assert not set(ZEROS) & set(raw_job(ledger, job_id))
    view = job(ledger, job_id)
    assert (view["heartbeat_timeout"], view["retries"], view["priority"], view["max_queued_time"]) == (
        "0s", 0, 0, "0s",
    )  # fmt: skip
    (item,) = [i for i in ledger.read(readers.history(job_id)) if i["type"] == "job_created"]
    assert item["data"]["retries"] == 0 and item["data"]["timeout"] == 300_000


def test_a_jobs_own_zero_overrides_its_queues_default(ledger: Ledger) -> None:
    put_queue(ledger, "q", retries=3, heartbeat_timeout="10s")
    job_id = create(ledger, retries=0, heartbeat_timeout="0s")
    assert (job(ledger, job_id)["retries"], job(ledger, job_id)["heartbeat_timeout"]) == (0, "0s")
    fetch_one(ledger)
    ledger.run(commands.update_job(job_id, JobUpdate(status="failed")))
    assert status(ledger, job_id) == "failed" and job(ledger, job_id)["ended"] is True  # no retry left


def test_an_event_with_zeros_spelled_out_replays_to_the_same_job(
    ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    put_queue(ledger, "q")
    new_id = create(ledger)
    new = without_history(raw_job(ledger, new_id))
    old_data = {"timeout": 300_000, "heartbeat_timeout": 0, "expires_after": 300_000, "retries": 0,
                "priority": 0, "max_queued_time": 0}  # fmt: skip
    fields = {"type": "job_created", "v": "1", "at": new["created_at"], "job": str(new_id + 1),
              "queue": "q", "data": json.dumps(old_data)}  # fmt: skip
    client.xadd(Keys(namespace).events, fields)  # type: ignore[arg-type]
    target = namespace + "-zeros"
    try:
        rebuild(client, namespace, target)
        rebuilt = Ledger(client, target)
        # the same job but for its history (the ids of its events)
        old, current = raw_job(rebuilt, new_id + 1), raw_job(rebuilt, new_id)
        assert without_history(old) == without_history(current) == new
    finally:
        drop_namespace(client, target)

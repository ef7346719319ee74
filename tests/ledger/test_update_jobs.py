"""``update_jobs``: a worker's batch of updates in one script call, each checked on its own."""

from __future__ import annotations

import redis

from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.requests import ErrorReport, JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.replay.compare import compare
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from tests.support.ledger import create, event_types, fetch, put_queue, status, stream_length

DISK = ErrorReport(kind="io", message="disk")


def test_each_update_is_taken_or_refused_on_its_own(
    client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    put_queue(ledger, "q", retries=1)
    ids = [create(ledger, "q", input=i) for i in range(4)]
    running = fetch(ledger, "q", count=3)
    assert [f.id for f in running] == ids[:3]
    a, b, c = running
    before = stream_length(client, namespace)
    results = ledger.run(
        commands.update_jobs([
            (a.id, JobUpdate(status="completed", attempt=a.attempt, output={"ok": 1})),
            (b.id, JobUpdate(status="failed", attempt=b.attempt, error=DISK)),
            (c.id, JobUpdate(status="completed", attempt=c.attempt + 1)),  # not the running attempt
            (ids[3], JobUpdate(status="completed")),  # still queued
            (10**9, JobUpdate(status="completed")),  # no such job
            (a.id, JobUpdate(status="completed", attempt=a.attempt)),  # a again: a resend, taken once
        ])
    )  # fmt: skip
    assert results[:2] == [1, 1]
    assert [type(r) for r in results[2:]] == [Conflict, Conflict, NotFound, int]
    assert str(results[2]) == f"attempt {c.attempt + 1} of job {c.id} is not the running attempt"
    assert results[5] == 0, "the resend of a's completion answers as the first, appending nothing"
    assert stream_length(client, namespace) == before + 2, "only the two updates taken appended"
    assert [status(ledger, i) for i in ids] == ["completed", "failed", "running", "queued"]
    assert event_types(ledger, b.id)[-1] == "job_failed"
    assert misplaced(client, namespace) == []
    rebuild(client, namespace, namespace + "-rebuilt")
    assert compare(client, namespace + "-rebuilt", namespace) == []


def test_the_same_events_as_one_update_at_a_time(client: redis.Redis, ledger: Ledger, namespace: str) -> None:
    put_queue(ledger, "q")
    for i in range(6):
        create(ledger, "q", input=i)
    one, batch = fetch(ledger, "q", count=3), fetch(ledger, "q", count=3)
    for f in one:
        ledger.run(commands.update_job(f.id, JobUpdate(status="completed", attempt=f.attempt, output=f.id)))
    updates = [(f.id, JobUpdate(status="completed", attempt=f.attempt, output=f.id)) for f in batch]
    assert ledger.run(commands.update_jobs(updates)) == [1, 1, 1]
    for single, batched in zip(one, batch, strict=True):
        assert event_types(ledger, single.id) == event_types(ledger, batched.id)
    assert ledger.run(commands.update_jobs([])) == []

"""drain_queue: a batch of the jobs waiting in a queue (queued, in quota lanes, scheduled) cancelled
per call, in hand-out order, each saying it was drained; running jobs left alone; the projections
it leaves are the ones replay builds."""

from __future__ import annotations

import json

import redis

from jobledger.ledger import commands
from jobledger.ledger.errors import NotFound
from jobledger.ledger.runner import Ledger
from jobledger.replay.verify import verify
from tests.support.ledger import create, events, fetch, put_queue, refused, status, unchanged


def test_drains_a_batch_at_a_time_and_leaves_running_jobs(
    ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    put_queue(ledger)
    running = create(ledger)
    fetch(ledger)
    plain = [create(ledger) for _ in range(3)]
    laned = create(ledger, quota_key="k")
    later = create(ledger, delay=3_600_000)
    urgent = create(ledger, priority=9)
    assert ledger.run(commands.drain_queue("q", 2)) == (2, 4)
    assert [status(ledger, j) for j in (urgent, plain[0])] == ["cancelled", "cancelled"]  # hand-out order
    assert ledger.run(commands.drain_queue("q", 10)) == (4, 0)
    assert ledger.run(commands.drain_queue("q", 10)) == (0, 0)
    for job in [*plain, laned, later, urgent]:
        last = events(client, namespace, job)[-1]
        assert (last["type"], json.loads(last["data"])) == ("job_cancelled", {"reason": "queue_drained"})
    assert status(ledger, running) == "running"
    assert verify(client, namespace).ok


def test_draining_no_such_queue_is_refused_and_appends_nothing(ledger: Ledger) -> None:
    with unchanged(ledger):
        refused(ledger, commands.drain_queue("nope", 10), NotFound)

"""``update_and_fetch``: a worker's finished jobs recorded and its next ones started in one call."""

from __future__ import annotations

import redis

from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.requests import JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.replay.compare import compare
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from tests.support.ledger import create, event_types, fetch, put_queue, status


def test_the_updates_go_first_then_the_fetch(client: redis.Redis, ledger: Ledger, namespace: str) -> None:
    """max_running 2: the two completions free both places, so the fetch starts two more."""
    put_queue(ledger, "q", max_running=2, heartbeat_timeout="30s")
    ids = [create(ledger, "q", input={"n": i}) for i in range(5)]
    a, b = fetch(ledger, "q", count=2)
    done = [(f.id, JobUpdate(status="completed", attempt=f.attempt)) for f in (a, b)]
    stale = (a.id, JobUpdate(status="failed", attempt=a.attempt + 1))  # not the running attempt
    reply = ledger.run(commands.update_and_fetch([*done, stale], "q", 5, "w1"))
    assert reply.outcomes[:2] == [1, 1]
    assert isinstance(reply.outcomes[2], Conflict)
    assert isinstance(reply.fetched, list)
    assert [(f.id, f.attempt, f.input_text) for f in reply.fetched] == [
        (ids[2], 1, '{"n":2}'),
        (ids[3], 1, '{"n":3}'),
    ]
    assert {f.heartbeat_timeout_ms for f in reply.fetched} == {30_000}, "read with the job"
    assert [status(ledger, i) for i in ids] == ["completed", "completed", "running", "running", "queued"]
    assert event_types(ledger, ids[2]) == ["job_created", "job_started"]
    assert misplaced(client, namespace) == []
    rebuild(client, namespace, namespace + "-rebuilt")
    assert compare(client, namespace + "-rebuilt", namespace) == []


def test_a_fetch_refused_leaves_the_updates_standing(ledger: Ledger) -> None:
    put_queue(ledger, "q")
    job_id = create(ledger, "q")
    (f,) = fetch(ledger, "q")
    reply = ledger.run(
        commands.update_and_fetch([(f.id, JobUpdate(status="completed", attempt=f.attempt))], "gone", 1)
    )
    assert reply.outcomes == [1]
    assert isinstance(reply.fetched, NotFound)
    assert status(ledger, job_id) == "completed"


def test_with_no_update_it_is_a_fetch(ledger: Ledger) -> None:
    put_queue(ledger, "q")
    job_id = create(ledger, "q")
    reply = ledger.run(commands.update_and_fetch([], "q", 3, "w1"))
    assert reply.outcomes == []
    assert isinstance(reply.fetched, list)
    assert [f.id for f in reply.fetched] == [job_id]
    assert reply.fetched[0].heartbeat_timeout_ms == 0

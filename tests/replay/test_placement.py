"""jobledger.replay.placement.misplaced: silent on a sound ledger, and names each kind of damage.

The damage is done by writing to the projections directly (never done by jobledger itself), to show
that the checker the other tests rely on does see what it claims to see."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.runner import Ledger
from jobledger.replay.placement import misplaced
from tests.support.ledger import at, create, fetch_one, put_queue, run_tick, update

Damage = Callable[[Ledger, dict[str, int]], None]


@pytest.fixture
def jobs(ledger: Ledger, frozen: FrozenDateTimeFactory) -> dict[str, int]:
    """One job in each kind of place: queued, running (deadline), waiting to retry, ended (expiry)."""
    put_queue(ledger, "q", timeout="10s", heartbeat_timeout="4s", expires_after="1m")
    out = {"waiting": create(ledger, retries=1, retry_delays=["1h"], tags=["t"])}
    fetch_one(ledger)
    update(ledger, out["waiting"], status="failed")
    out["ended"] = create(ledger, tags=["t", "u"])
    fetch_one(ledger)
    frozen.tick(2)
    update(ledger, out["ended"], status="completed")
    out["running"] = create(ledger)
    fetch_one(ledger)
    frozen.tick(1)
    ledger.run(commands.heartbeat(out["running"]))
    out["queued"] = create(ledger, tags=["t"])
    return out


def _key(ledger: Ledger, key: str, /, **params: object) -> str:
    return ledger.keys.build(key, **params)


DAMAGE: dict[str, tuple[Damage, str]] = {
    "queued job out of its queue": (
        lambda lg, j: lg.client.zrem(_key(lg, "queued_ids", name="q"), j["queued"]),
        "job 4 (queued) is in ['queue:q:waiting']",
    ),
    "queued job out of its queue's waiting set": (
        lambda lg, j: lg.client.zrem(_key(lg, "queue_waiting", name="q"), j["queued"]),
        "job 4 (queued) is in ['queue:q:queued']",
    ),
    "queued job waiting since another time": (
        lambda lg, j: lg.client.zadd(_key(lg, "queue_waiting", name="q"), {j["queued"]: 1}),
        "job 4 has score 1.0 in queue:q:waiting; expected",
    ),
    "job in two places": (
        lambda lg, j: lg.client.zadd(_key(lg, "queue_status", name="q", status="failed"), {j["running"]: 3}),
        "job 3 (running) is in",
    ),
    "job in another queue's place": (
        lambda lg, j: lg.client.zadd(_key(lg, "queue_status", name="o", status="completed"), {j["ended"]: 2}),
        "job 2 (completed (ended)) is in",
    ),
    "wrong run deadline": (
        lambda lg, j: lg.client.zadd(_key(lg, "due_run"), {j["running"]: at(2 + 1 + 10)}),
        f"job 3 has score {float(at(13))} in due:run; expected {float(at(3 + 4))}",
    ),
    "wrong expiry": (
        lambda lg, j: lg.client.zadd(_key(lg, "due_expire"), {j["ended"]: at(60)}),
        f"expected {float(at(62))}",
    ),
    "waiting job without retry": (
        lambda lg, j: lg.client.zrem(_key(lg, "due_retry"), j["waiting"]),
        "job 1 (failed) is in ['queue:q:failed']; expected ['due:retry', 'queue:q:failed']",
    ),
    "retry before the failure": (
        lambda lg, j: lg.client.zadd(_key(lg, "due_retry"), {j["waiting"]: at(-1)}),
        "before it stopped",
    ),
    "ended job still due to retry": (
        lambda lg, j: lg.client.zadd(_key(lg, "due_retry"), {j["ended"]: at(5)}),
        "job 2 (completed (ended)) is in ['due:expire', 'due:retry', 'queue:q:completed']",
    ),
    "place score not the id": (
        lambda lg, j: lg.client.zadd(_key(lg, "queue_status", name="q", status="running"), {j["running"]: 1}),
        "expected its id",
    ),
    "queued score outside its priority band": (
        lambda lg, j: lg.client.zadd(_key(lg, "queued_ids", name="q"), {j["queued"]: 5}),
        "outside priority band 100",
    ),
    "gone job left in a deadline set": (
        lambda lg, j: lg.client.zadd(_key(lg, "due_expire"), {"99": at(1)}),
        "due:expire holds 99, which is not a live job",
    ),
    "gone job left in a tag": (
        lambda lg, j: lg.client.sadd(_key(lg, "tag", tag="t"), 99),
        "tag:t holds 99, which is not a live job",
    ),
    "job missing from its tag": (
        lambda lg, j: lg.client.srem(_key(lg, "tag", tag="u"), j["ended"]),
        "job 2 is in the sets of tags ['t']; expected ['t', 'u']",
    ),
    "job in a tag it does not have": (
        lambda lg, j: lg.client.sadd(_key(lg, "tag", tag="u"), j["queued"]),
        "job 4 is in the sets of tags ['t', 'u']; expected ['t']",
    ),
    "running job marked ended": (
        lambda lg, j: lg.client.hset(_key(lg, "job", id=j["running"]), "ended", "1"),
        "job 3 is running but marked ended",
    ),
    "queued job with an earlier run's end": (
        lambda lg, j: lg.client.hset(_key(lg, "job", id=j["queued"]), "ended_at", at(1)),
        "job 4 is queued but keeps the ended_at of an earlier run",
    ),
    "unknown place": (
        lambda lg, j: lg.client.zadd(_key(lg, "queue_status", name="q", status="lost"), {j["queued"]: 4}),
        "unexpected key queue:q:lost",
    ),
}


def test_a_sound_ledger_has_nothing_misplaced(ledger: Ledger, jobs: dict[str, int]) -> None:
    assert misplaced(ledger.client, ledger.keys.namespace) == []


@pytest.mark.parametrize("damage", DAMAGE)
def test_each_kind_of_damage_is_reported(ledger: Ledger, jobs: dict[str, int], damage: str) -> None:
    harm, expected = DAMAGE[damage]
    harm(ledger, jobs)
    problems = misplaced(ledger.client, ledger.keys.namespace)
    assert any(expected in problem for problem in problems), problems


def test_expired_and_deleted_jobs_leave_no_trace(
    ledger: Ledger, jobs: dict[str, int], frozen: FrozenDateTimeFactory
) -> None:
    frozen.tick(3600)
    run_tick(ledger)
    assert misplaced(ledger.client, ledger.keys.namespace) == []

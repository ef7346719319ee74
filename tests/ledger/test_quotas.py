"""Quotas: max_running per queue, max_running_per_key per quota_key (a per-user quota, say).

Jobs with a quota_key wait in their key's lane; a fetch only sees the heads of lanes whose key is
under its quota, so held-back jobs are never looked at and keep their place in the order.
"""

from __future__ import annotations

import redis

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from jobledger.replay.compare import compare
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from tests.benchmarks.ours.server import bundled_server


def _queue(ledger: Ledger, **settings: object) -> None:
    ledger.run(commands.put_queue("q", QueueSettings.model_validate(settings)))


def _create(ledger: Ledger, key: str | None = None, **options: object) -> int:
    return ledger.run(commands.create_job("q", JobOptions.model_validate({"quota_key": key, **options}))).id


def _fetch(ledger: Ledger, count: int = 10) -> list[int]:
    return [f.id for f in ledger.run(commands.fetch_jobs("q", count))]


def _complete(ledger: Ledger, job_id: int) -> None:
    ledger.run(commands.update_job(job_id, JobUpdate(status="completed")))


def test_max_running_caps_the_queue(ledger: Ledger) -> None:
    _queue(ledger, max_running=2)
    ids = [_create(ledger) for _ in range(4)]
    assert _fetch(ledger) == ids[:2]
    assert _fetch(ledger) == []
    _complete(ledger, ids[0])
    assert _fetch(ledger) == [ids[2]]


def test_a_key_at_its_quota_is_skipped_and_others_go_past_it_in_order(ledger: Ledger) -> None:
    _queue(ledger, max_running_per_key=1)
    a1, b1, a2, n1, b2, a3 = (_create(ledger, k) for k in ("a", "b", "a", None, "b", "a"))
    assert _fetch(ledger) == [a1, b1, n1]  # a2 and b2 wait for their keys, n1 has no key
    assert ledger.read(readers.queue_job_ids("q"))["queued"] == [a2, b2, a3]
    assert ledger.read(readers.queue_size("q")) == 3
    _complete(ledger, b1)
    assert _fetch(ledger) == [b2]
    _complete(ledger, a1)
    assert _fetch(ledger) == [a2]


def test_priority_orders_across_lanes_and_plain_jobs(ledger: Ledger) -> None:
    _queue(ledger, max_running_per_key=5)
    low = _create(ledger, "a")
    plain = _create(ledger, None, priority=10)
    high = _create(ledger, "b", priority=50)
    assert _fetch(ledger) == [high, plain, low]


def test_a_failed_key_frees_its_quota_and_retries_wait_in_their_lane(ledger: Ledger) -> None:
    _queue(ledger, max_running_per_key=1, retries=1)
    first, second = _create(ledger, "a"), _create(ledger, "a")
    assert _fetch(ledger) == [first]
    ledger.run(commands.update_job(first, JobUpdate(status="failed")))
    assert _fetch(ledger) == [second]
    ledger.run(commands.check_retries(10))  # the retry (no delay) goes back to lane a
    assert _fetch(ledger) == []  # second runs: key a is at its quota
    _complete(ledger, second)
    assert _fetch(ledger) == [first]


def test_changing_the_quota_releases_or_holds_lanes(ledger: Ledger) -> None:
    _queue(ledger, max_running_per_key=1)
    ids = [_create(ledger, "a") for _ in range(3)]
    assert _fetch(ledger) == ids[:1]
    _queue(ledger, max_running_per_key=0)  # no limit
    assert _fetch(ledger) == ids[1:]


def test_queue_deletion_empties_the_lanes(ledger: Ledger, client: redis.Redis, namespace: str) -> None:
    _queue(ledger, max_running_per_key=1)
    running = _create(ledger, "a")
    _create(ledger, "a")
    _create(ledger, "b")
    _fetch(ledger, 1)
    assert ledger.run(commands.delete_queue("q")) == 2
    _complete(ledger, running)
    left = {k.decode() for k in client.scan_iter(match=ledger.keys.pattern())}
    assert not [k for k in left if ":lane" in k or k.endswith((":heads", ":laned"))]
    assert misplaced(client, namespace) == []


def test_quota_state_replays_exactly(ledger: Ledger, client: redis.Redis, namespace: str) -> None:
    _queue(ledger, max_running_per_key=2, max_running=5)
    ids = [_create(ledger, k) for k in ("a", "b", "a", "a", None, "b", "c")]
    _fetch(ledger, 4)
    _complete(ledger, ids[0])
    _queue(ledger, max_running_per_key=1, max_running=5)
    assert misplaced(client, namespace) == []
    rebuild(client, namespace, namespace + "-replay")
    assert compare(client, namespace, namespace + "-replay") == []


def test_fetch_does_not_look_at_jobs_held_back() -> None:
    """Held-back jobs cost a fetch nothing: its Redis calls are the same for 10 and 2,000 of them.
    Counted on a private server, whose command statistics no other client touches."""
    with bundled_server() as url:
        client = redis.Redis.from_url(url)
        _count_fetch_calls(Ledger(client, "held"), client)


def _count_fetch_calls(ledger: Ledger, client: redis.Redis) -> None:
    _queue(ledger, max_running_per_key=1)
    calls = []
    for held in (10, 2_000):
        busy = JobOptions(quota_key=f"busy-{held}")
        ledger.run_many(commands.create_job("q", busy) for _ in range(held))
        _fetch(ledger, 1)  # that key is now at its quota: the rest of its jobs are held back
        free = _create(ledger, f"free-{held}")
        client.config_resetstat()
        assert _fetch(ledger, 1) == [free]
        stats = client.info("commandstats")
        # the ledger's clock is written only when it moves (not when two commands share a
        # millisecond), so its SET is left out of the count
        calls.append(sum(v["calls"] for k, v in stats.items() if k not in ("cmdstat_fcall", "cmdstat_set")))
        ledger.run(commands.delete_queue("q"))
        _queue(ledger, max_running_per_key=1)
    assert calls[0] == calls[1]

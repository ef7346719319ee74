"""A job's history (the ids of its events): inline in its hash while short, in a list of its own once
it outgrows that or the job is gone, and read the same either way, replay included."""

from __future__ import annotations

import redis

from jobledger.ledger.commands import delete_job, heartbeat
from jobledger.ledger.job_history import INLINE_FIELD, inline_ids
from jobledger.ledger.runner import Ledger
from jobledger.projections import readers
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from jobledger.replay.verify import drop_namespace
from tests.support.ledger import create, events, fetch_one, raw_job, update


def stream_ids(ledger: Ledger, job_id: int) -> list[str]:
    return [e["id"] for e in events(ledger.client, ledger.keys.namespace, job_id)]


def assert_replays(client: redis.Redis, namespace: str) -> None:
    target = namespace + "-history"
    try:
        rebuild(client, namespace, target)
        assert compare(client, namespace, target) == []
    finally:
        drop_namespace(client, target)


def test_a_short_history_is_inline_in_the_compact_hash(ledger: Ledger, queue: str) -> None:
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="completed")
    ids = stream_ids(ledger, job_id)
    assert len(ids) == 3
    assert inline_ids(raw_job(ledger, job_id)[INLINE_FIELD]) == ids
    assert ledger.read(readers.history_ids(job_id)) == ids
    assert not ledger.client.exists(ledger.keys.history(job_id))
    assert ledger.client.object("encoding", ledger.keys.job(job_id)) == b"listpack"
    assert_replays(ledger.client, ledger.keys.namespace)


def test_a_long_history_moves_to_its_list_and_keeps_every_id_in_order(ledger: Ledger, queue: str) -> None:
    job_id = create(ledger)
    attempt = fetch_one(ledger).attempt
    for _ in range(12):
        ledger.run(heartbeat(job_id, attempt))
    update(ledger, job_id, status="completed")
    ids = stream_ids(ledger, job_id)
    assert len(ids) == 15
    assert INLINE_FIELD not in raw_job(ledger, job_id)
    assert [i.decode() for i in ledger.client.lrange(ledger.keys.history(job_id), 0, -1)] == ids
    assert ledger.read(readers.history_ids(job_id)) == ids
    assert_replays(ledger.client, ledger.keys.namespace)


def test_the_history_of_a_deleted_job_outlives_it(ledger: Ledger, queue: str) -> None:
    job_id = create(ledger)
    ledger.run(delete_job(job_id))
    ids = stream_ids(ledger, job_id)
    assert not ledger.client.exists(ledger.keys.job(job_id))
    assert [e["type"] for e in ledger.read(readers.history(job_id))] == ["job_created", "job_deleted"]
    assert ledger.read(readers.history_ids(job_id)) == ids
    assert_replays(ledger.client, ledger.keys.namespace)


def test_a_job_whose_history_is_a_list_from_before_goes_on_in_its_list(ledger: Ledger, queue: str) -> None:
    job_id = create(ledger)
    # the layout of a job created before histories were kept inline: a list and no field
    key, ids = ledger.keys.job(job_id), stream_ids(ledger, job_id)
    ledger.client.hdel(key, INLINE_FIELD)
    ledger.client.rpush(ledger.keys.history(job_id), *ids)
    fetch_one(ledger)
    update(ledger, job_id, status="completed")
    ids = stream_ids(ledger, job_id)
    assert INLINE_FIELD not in raw_job(ledger, job_id)
    assert [i.decode() for i in ledger.client.lrange(ledger.keys.history(job_id), 0, -1)] == ids
    assert ledger.read(readers.history_ids(job_id)) == ids

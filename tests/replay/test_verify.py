"""``replay verify``: the live projections against a rebuild, key by key, while writes go on."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay.rebuild import UnknownEventType
from jobledger.replay.verify import verify
from tests.support.ledger import create, fetch, put_queue, update
from tests.support.replay import workload


def scratch_keys(client: redis.Redis, namespace: str) -> list[bytes]:
    return list(client.scan_iter(match=f"{{{namespace}-verify-*", count=1000))


def test_a_clean_ledger_verifies_and_the_scratch_namespace_is_removed(
    client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    workload(ledger)
    done: list[int] = []
    result = verify(client, namespace, chunk=7, progress=done.append)
    assert result.ok, "\n".join(map(str, result.differences))
    assert result.events == client.xlen(Keys(namespace).events) == done[-1]
    assert result.keys > 20
    assert scratch_keys(client, namespace) == []


def test_corrupted_projections_are_each_reported_field_by_field(
    client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    ids = workload(ledger)
    keys = Keys(namespace)
    client.hset(keys.job(ids[0]), "status", "completed")  # it is queued or done: a wrong field
    client.hset(keys.job(ids[1]), "bogus", "1")  # a field no event sets
    client.srem(keys.tag("t0"), ids[0])  # a member gone
    client.zadd(keys.build("due_expire"), {"999": 5})  # a member no event put there
    client.delete(keys.job(ids[2]))  # a key gone
    client.set(keys.prefix + "stray", "x")  # a key no event makes
    result = verify(client, namespace)
    assert not result.ok
    found = {d.key: d for d in result.differences}
    assert set(found) == {
        f"job:{ids[0]}",
        f"job:{ids[1]}",
        "tag:t0",
        "due:expire",
        f"job:{ids[2]}",
        "stray",
    }
    status = found[f"job:{ids[0]}"].details()
    assert (
        len(status) == 1
        and status[0].startswith("field status: expected '")
        and "found 'completed'" in status[0]
    )
    assert found[f"job:{ids[1]}"].details() == ["field bogus: not expected, found '1'"]
    assert found["tag:t0"].details() == [f"member {ids[0]}: expected, missing"]
    assert found["due:expire"].details() == ["member 999: not expected, found with score 5"]
    assert found[f"job:{ids[2]}"].details()[0].startswith("missing: replay gives a hash")
    assert found["stray"].details()[0].startswith("unexpected: the live projections have a string")
    text = str(found[f"job:{ids[0]}"])
    assert text.startswith(f"job:{ids[0]} (as of event ") and "field status" in text
    assert scratch_keys(client, namespace) == []


class Writer:
    """A thread that keeps creating, starting and completing jobs until stopped."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.stop = threading.Event()
        self.rounds = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                create(self.ledger, "busy", input=self.rounds, tags=["hot"])
                for started in fetch(self.ledger, "busy"):
                    update(self.ledger, started.id, status="completed", attempt=started.attempt)
                self.rounds += 1
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            self.error = exc


@pytest.fixture
def writer(redis_url: str, namespace: str) -> Iterator[Writer]:
    own = redis.Redis.from_url(redis_url)
    ledger = Ledger(own, namespace)
    put_queue(ledger, "busy")
    running = Writer(ledger)
    running.thread.start()
    yield running
    running.stop.set()
    running.thread.join(timeout=10)
    own.close()
    assert running.error is None


def test_verify_passes_while_jobs_are_written_and_still_finds_a_corruption(
    client: redis.Redis, ledger: Ledger, namespace: str, writer: Writer
) -> None:
    ids = workload(ledger, jobs=120)
    for _ in range(1000):
        if writer.rounds >= 20:
            break
        threading.Event().wait(0.01)
    before = writer.rounds
    result = verify(client, namespace, chunk=5, batch=50)
    assert result.ok, "\n".join(map(str, result.differences))
    assert writer.rounds > before, "no job was written while verify ran"
    assert result.first != result.last  # compared at successive positions of a moving ledger
    client.hset(Keys(namespace).job(ids[0]), "queue", "elsewhere")
    result = verify(client, namespace, chunk=5, batch=50)
    assert [(d.key, d.details()[0].split(":")[0]) for d in result.differences] == [
        (f"job:{ids[0]}", "field queue")
    ]


def test_the_scratch_namespace_is_removed_when_verify_fails(
    client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    workload(ledger)
    client.xadd(Keys(namespace).events, {"type": "from_the_future", "v": "1", "at": "1", "data": "{}"})
    with pytest.raises(UnknownEventType, match="from_the_future"):
        verify(client, namespace)
    assert scratch_keys(client, namespace) == []


def test_the_scratch_namespace_is_removed_when_verify_is_interrupted(
    client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    workload(ledger)

    def interrupt(done: int) -> None:
        assert scratch_keys(client, namespace)  # the scratch namespace is being built
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        verify(client, namespace, batch=5, progress=interrupt)
    assert scratch_keys(client, namespace) == []

"""Online rebuild (``replay rebuild --swap``): new projections built while writes go on, then swapped
in atomically; nothing lost, no client error, and the result equal to a rebuild from the stream."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import redis

import jobledger.replay.swap
from jobledger.ledger import commands
from jobledger.ledger.errors import JobLedgerError
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger, live_keys
from jobledger.replay.compare import compare, snapshot
from jobledger.replay.placement import misplaced
from jobledger.replay.rebuild import rebuild
from jobledger.replay.swap import SwapConflict, swap
from jobledger.replay.verify import verify
from tests.support.ledger import create, fetch, job, put_queue, update
from tests.support.replay import workload


class Load:
    """Producers and workers running against the ledger from their own connections, plus a reader
    whose Ledger was made before any swap: every job they create is completed, every read answers."""

    def __init__(self, redis_url: str, namespace: str, workers: int = 2) -> None:
        self.redis_url, self.namespace = redis_url, namespace
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.created: list[int] = []
        self.reads = 0
        self.threads = [threading.Thread(target=self._guard, args=(self._work,)) for _ in range(workers)]
        self.threads.append(threading.Thread(target=self._guard, args=(self._read,)))

    def _ledger(self) -> Ledger:
        return Ledger(redis.Redis.from_url(self.redis_url), self.namespace)

    def _guard(self, body: Any) -> None:
        try:
            body(self._ledger())
        except BaseException as exc:  # noqa: BLE001 (reported by the test)
            self.errors.append(exc)

    def _work(self, ledger: Ledger) -> None:
        while not self.stop.is_set():
            job_id = create(ledger, "load", input={"n": len(self.created)}, tags=["load"])
            self.created.append(job_id)
            for started in fetch(ledger, "load", count=2, worker="w"):
                update(ledger, started.id, status="completed", output={"ok": True}, attempt=started.attempt)

    def _read(self, ledger: Ledger) -> None:
        while not self.stop.is_set():
            if self.created:
                last = self.created[-1]
                assert job(ledger, last)["id"] == last
                self.reads += 1

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        while len(self.created) < 20 and not self.errors:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        ledger = self._ledger()
        while started := fetch(ledger, "load", count=100):  # what the workers left queued
            for s in started:
                update(ledger, s.id, status="completed", attempt=s.attempt)


def assert_equal_to_a_rebuild(client: redis.Redis, namespace: str) -> None:
    check = f"{namespace}-check-{uuid.uuid4().hex[:6]}"
    rebuild(client, namespace, check)
    assert compare(client, check, namespace) == []
    assert misplaced(client, namespace) == []
    assert verify(client, namespace).ok


def keys_of_generation(client: redis.Redis, keys: Keys) -> list[str]:
    found = (k.decode()[len(keys.prefix) :] for k in client.scan_iter(match=keys.pattern(), count=1000))
    return [rel for rel in found if keys.owns(rel)]


def test_swap_under_concurrent_writes_loses_nothing(
    client: redis.Redis, redis_url: str, namespace: str
) -> None:
    ledger = Ledger(client, namespace)
    workload(ledger)
    put_queue(ledger, "load")
    with Load(redis_url, namespace) as load:
        before = len(load.created)
        done = swap(client, namespace, batch=50, tail=20)
        time.sleep(0.2)  # writes and reads go on against the new generation
    assert load.errors == []
    assert len(load.created) > before, "the load ran during the swap"
    assert load.reads > 0
    assert (done.old, done.new) == (0, 1)
    assert done.tail <= 20
    assert client.get(Keys(namespace).build("generation")) == b"1"
    assert keys_of_generation(client, Keys(namespace)) == [], "the old generation is removed"
    assert done.removed > 0
    for job_id in load.created:  # every job written before, during and after the swap
        assert job(ledger, job_id)["status"] == "completed"
    assert_equal_to_a_rebuild(client, namespace)
    # and again: generation 1 to 2, with a Ledger that still remembers generation 0 for its reads
    put_queue(ledger, "after")
    after = create(ledger, "after")
    assert swap(client, namespace).new == 2
    assert ledger.keys.generation in (0, 1)
    assert job(ledger, after)["status"] == "queued"
    assert ledger.keys.generation == 2
    assert keys_of_generation(client, Keys(namespace, 1)) == []
    assert_equal_to_a_rebuild(client, namespace)


def test_commands_and_reads_use_the_live_generation(client: redis.Redis, namespace: str) -> None:
    ledger = Ledger(client, namespace)
    put_queue(ledger, "q")
    first = create(ledger, "q")
    swap(client, namespace)
    assert live_keys(client, namespace).generation == 1
    second = create(ledger, "q")
    assert client.exists(Keys(namespace, 1).job(second)) and not client.exists(Keys(namespace).job(second))
    assert [f.id for f in fetch(ledger, "q", count=5)] == [first, second]
    assert job(ledger, second)["status"] == "running"
    assert_equal_to_a_rebuild(client, namespace)


def test_a_swap_that_finds_the_pointer_moved_drops_its_work(
    client: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(client, namespace)
    workload(ledger)
    real_fold = jobledger.replay.swap.fold

    def fold_then_another_swap_wins(*args: Any, **kwargs: Any) -> Any:
        folded = real_fold(*args, **kwargs)
        client.set(Keys(namespace).build("generation"), 7)
        return folded

    monkeypatch.setattr(jobledger.replay.swap, "fold", fold_then_another_swap_wins)
    with pytest.raises(SwapConflict, match="generation 7"):
        swap(client, namespace)
    assert keys_of_generation(client, Keys(namespace, 1)) == []


def test_an_interrupted_swap_leaves_the_live_projections_alone(
    client: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(client, namespace)
    workload(ledger)
    live = snapshot(client, namespace)
    assert live

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(jobledger.replay.swap.Applier, "apply", interrupted)
    monkeypatch.setattr(jobledger.replay.swap.Applier, "fold_stream", interrupted)
    with pytest.raises(KeyboardInterrupt):
        swap(client, namespace)
    assert client.get(Keys(namespace).build("generation")) is None
    assert keys_of_generation(client, Keys(namespace, 1)) == []
    assert snapshot(client, namespace) == live
    with pytest.raises(JobLedgerError):
        ledger.run(commands.delete_job(10**9))  # commands still run against generation 0

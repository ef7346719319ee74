"""Launchers on a ledger split into three partitions (on one server): timed launchers of queues in
different partitions fire on time, each in its own partition; an @event launcher fires on the events
of a queue in another partition, exactly once each, across scheduler restarts, never on what happened
before it was made (found by a search of the other stream by time); debounce holds across
partitions; the running scheduler is woken by the events of the partitions its @event launchers
follow; every partition replays to its projections after."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger.partitioned import Partitioned, open_ledger, open_ledger_async
from jobledger.ledger.placements import pin
from jobledger.ledger.runner import Ledger
from jobledger.projections.launchers import before_time, event_launchers
from jobledger.replay.placement import misplaced
from jobledger.replay.verify import verify
from jobledger.scheduler import launchers as launcher_checks
from jobledger.scheduler.launchers import SourcesRead
from tests.scheduler.launcher_support import complete_job, data_of, launched, new_launcher
from tests.support.deadlines import scheduler_running
from tests.support.ledger import START, at, events, later, put_queue

COUNT = 3
#: Check intervals (ms) so long that only events wake a running scheduler within a test.
IDLE = dict.fromkeys(("releases", "timeouts", "queued", "retries", "expiry", "idempotency"), 600_000)


@pytest.fixture
def router(redis_url: str, namespace: str) -> Iterator[Partitioned]:
    split = open_ledger(redis_url, namespace, COUNT)
    yield split
    for runner in split.runners:
        runner.client.close()


def queue_in(router: Partitioned, partition: int) -> str:
    """A queue name placed in ``partition``."""
    name = next(n for i in itertools.count() if router.partitioning.hashed(n := f"q{i}") == partition)
    pin(router.runners[0].client, router.partitioning, name, partition)
    return name


class Scheduler:
    """The launcher checks as the scheduler runs them: one per partition, each keeping how far it
    read between rounds.  A new one is a scheduler restarted."""

    def __init__(self, redis_url: str, namespace: str) -> None:
        self.url, self.namespace = redis_url, namespace
        self.positions: list[dict[int, str]] = [{} for _ in range(COUNT)]
        self.read: list[SourcesRead] = [{} for _ in range(COUNT)]

    def round(self) -> list[int]:
        """Every partition's check once; how many launchers each acted on."""

        async def checks() -> list[int]:
            split = await open_ledger_async(self.url, self.namespace)
            try:
                check = launcher_checks.check_launchers
                return [await check(split, self.positions[p], 500, p, self.read[p]) for p in range(COUNT)]
            finally:
                for runner in split.runners:
                    await runner.client.aclose()

        return asyncio.run(checks())


def three_queues(router: Partitioned) -> list[tuple[str, Ledger]]:
    """Queues of partitions 0, 2 and 1, made, each with its partition's runner."""
    made = []
    for partition in (0, 2, 1):
        name = queue_in(router, partition)
        put_queue(router.for_queue(name), name)
        made.append((name, router.for_queue(name)))
    return made


def assert_every_partition_replays(client: redis.Redis, router: Partitioned) -> None:
    for partition_namespace in router.partitioning.namespaces:
        assert misplaced(client, partition_namespace) == []
        assert verify(client, partition_namespace).ok


def test_timed_launchers_fire_on_time_in_the_partition_of_their_queue(
    router: Partitioned, client: redis.Redis, redis_url: str, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    queues = [queue_in(router, p) for p in range(COUNT)]
    every, cron = {}, {}
    for name in queues:
        runner = router.for_queue(name)
        put_queue(runner, name)
        every[name] = new_launcher(router, "@interval", "10s", queue=name)  # routed by its queue
        cron[name] = new_launcher(runner, "@cron", "*/15 * * * * *", queue=name)
    assert [every[q] % COUNT for q in queues] == [cron[q] % COUNT for q in queues] == list(range(COUNT))

    scheduler = Scheduler(redis_url, namespace)
    frozen.move_to(START + later(9))
    assert scheduler.round() == [0, 0, 0]
    frozen.move_to(START + later(10))
    assert scheduler.round() == [1, 1, 1]
    frozen.move_to(START + later(15))
    assert Scheduler(redis_url, namespace).round() == [1, 1, 1]  # restarted: nothing twice
    for name in queues:
        runner = router.for_queue(name)
        assert [len(launched(runner, every[name])), len(launched(runner, cron[name]))] == [1, 1]
        fired = data_of(runner, "launcher_fired")
        assert [(d["launcher"], d["due_at"]) for d in fired] == [(every[name], at(10)), (cron[name], at(15))]
        assert all(job % COUNT == router.partitioning.of_queue(name) for job in launched(runner, every[name]))
    assert_every_partition_replays(client, router)


def test_an_event_launcher_fires_once_on_each_event_of_another_partition_across_restarts(
    router: Partitioned, client: redis.Redis, redis_url: str, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    (a, ra), (b, rb), (c, rc) = three_queues(router)
    scheduler = Scheduler(redis_url, namespace)
    complete_job(ra, a)  # before the launchers: never a trigger
    assert scheduler.round() == [0, 0, 0]

    frozen.tick(1)
    chained = new_launcher(rb, "@event", {"type": "job_completed", "queue": a}, queue=b)
    anywhere = new_launcher(rb, "@event", {"type": "job_completed"}, queue=b)
    assert chained % COUNT == anywhere % COUNT == 2
    assert Scheduler(redis_url, namespace).round() == [0, 0, 0]  # from the launchers' making on
    assert scheduler.round() == [0, 0, 0]

    frozen.tick(1)
    first = complete_job(ra, a)
    assert scheduler.round() == [0, 0, 2]
    assert scheduler.round() == [0, 0, 0]
    assert Scheduler(redis_url, namespace).round() == [0, 0, 0]  # restarted: remembered in the ledger
    followed = {source: set(read) for source, read in scheduler.read[2].items()}
    assert followed == {0: {chained, anywhere}, 1: {anywhere}}  # c's partition only for the one

    frozen.tick(1)
    other = complete_job(rc, c)
    restarted = Scheduler(redis_url, namespace)
    assert restarted.round() == [0, 0, 1]
    assert scheduler.round() == [0, 0, 0]  # the restarted one acted first
    frozen.tick(1)
    more = [complete_job(ra, a), complete_job(ra, a)]
    assert restarted.round() == [0, 0, 4]

    assert len(launched(rb, chained)) == 3 and len(launched(rb, anywhere)) == 4
    fired = [(d["launcher"], d["trigger"], d["source"]) for d in data_of(rb, "launcher_fired")]
    assert fired == [
        (chained, first, 0), (anywhere, first, 0), (anywhere, other, 1),
        (chained, more[0], 0), (anywhere, more[0], 0), (chained, more[1], 0), (anywhere, more[1], 0),
    ]  # fmt: skip
    stored = {lr.id: lr.triggers for lr in rb.read(event_launchers(COUNT))}
    assert stored == {chained: {0: more[1]}, anywhere: {0: more[1], 1: other}}  # by source partition
    assert_every_partition_replays(client, router)


def test_debounce_gives_one_job_per_burst_of_events_of_other_partitions(
    router: Partitioned, client: redis.Redis, redis_url: str, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    (a, ra), (b, rb), (c, rc) = three_queues(router)
    lid = new_launcher(rb, "@event", {"type": "job_completed"}, queue=b, debounce="10s")
    scheduler = Scheduler(redis_url, namespace)
    frozen.move_to(START + later(5))
    complete_job(ra, a)
    frozen.move_to(START + later(2))  # an event of partition 1 stamped earlier, read after
    complete_job(rc, c)
    assert scheduler.round() == [0, 0, 2]
    frozen.move_to(START + later(14))
    assert scheduler.round() == [0, 0, 0]  # the quiet period runs from the latest event: 15s
    frozen.move_to(START + later(15))
    assert scheduler.round() == [0, 0, 1]
    assert [d["due_at"] for d in data_of(rb, "launcher_fired")] == [at(15)]
    assert len(launched(rb, lid)) == 1
    assert_every_partition_replays(client, router)


def test_the_scheduler_is_woken_by_events_of_the_partitions_its_launchers_follow(
    router: Partitioned, redis_url: str, namespace: str
) -> None:
    a, b = (queue_in(router, p) for p in (0, 2))
    ra, rb = router.for_queue(a), router.for_queue(b)
    put_queue(ra, a)
    put_queue(rb, b)
    with scheduler_running(redis_url, namespace, IDLE, partitions=COUNT):
        chained = new_launcher(rb, "@event", {"type": "job_completed", "queue": a}, queue=b)
        time.sleep(0.5)  # the launcher's partition's loop is woken by its making, and follows a's
        complete_job(ra, a)
        assert wait_for(lambda: launched(rb, chained), 5.0)


def wait_for(probe: Any, seconds: float) -> Any:
    """``probe()`` once it is truthy, polling for up to ``seconds`` (real time is the point)."""
    deadline = time.monotonic() + seconds
    while not (found := probe()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_a_stream_is_searched_for_where_a_time_begins(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    assert ledger.read(before_time(at(0))) == "0-0"  # an empty stream
    for second in range(6):
        frozen.move_to(START + later(second // 2))  # two events each second
        put_queue(ledger, f"q{second}")
        time.sleep(0.003)  # each in its own millisecond of the server's ids
    stream = events(ledger.client, ledger.keys.namespace)
    for second in range(4):
        earlier = ["0-0"] + [e["id"] for e in stream if int(e["at"]) < at(second)]
        start = ledger.read(before_time(at(second)))
        # an entry before the time, at most the entries of one millisecond short of the last one
        assert start in earlier and earlier.index(start) >= len(earlier) - 2

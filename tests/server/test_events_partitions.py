"""The event feed of a ledger split into three partitions on one server: ``GET /events`` pages through
every event of every partition exactly once, in time order, across page boundaries and with filters;
``GET /events/stream`` delivers every partition's events live and resumes after ``Last-Event-ID``;
archived events of a partition come first; a cursor the ledger did not give is a 400."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned, open_ledger, open_ledger_async
from jobledger.ledger.placements import pin
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.stream import EventFilter, id_key
from jobledger.ledger.stream_merge import START, Cursor, parse_cursor
from jobledger.projections.history import merged_page
from jobledger.replay.source import xrange
from tests.server.test_events_stream import Sse, xread_clients
from tests.support.http import app_client, error_of
from tests.support.live_server import eventually, live_server
from tests.support.replay import archive, local_archive

COUNT = 3
BASE_MS = 1_795_000_000_000


class Clock:
    """The ledger's clock, set by the test before each command."""

    def __init__(self) -> None:
        self.now = BASE_MS

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def split(redis_url: str, namespace: str, clock: Clock) -> Iterator[Partitioned]:
    """The test's namespace split into three partitions (before any server opens it)."""
    router = open_ledger(redis_url, namespace, COUNT, clock=clock)
    yield router
    for runner in router.runners:
        runner.client.close()


def queue_of(router: Partitioned, partition: int, n: int = 0) -> str:
    """The ``n``-th queue name (q0, q1, ...) whose hash is ``partition``, placed there."""
    names = (f"q{i}" for i in range(1000))
    name = [name for name in names if router.partitioning.hashed(name) == partition][n]
    pin(router.runners[0].client, router.partitioning, name, partition)
    return name


def workload(router: Partitioned, clock: Clock, rounds: int = 6) -> dict[int, list[int]]:
    """Jobs created, started and completed in every partition, the partitions' clocks crossing: a
    later partition's events are written after an earlier one's but happened before them, so time
    order is not the order of writing.  The jobs made, by partition."""
    made: dict[int, list[int]] = {p: [] for p in range(COUNT)}
    for p in range(COUNT):
        clock.now = BASE_MS - 1000 * p
        router.run(commands.put_queue(queue_of(router, p), QueueSettings()))
    for r in range(rounds):
        for p in range(COUNT):
            clock.now = BASE_MS + 100 * r - 30 * p
            queue = queue_of(router, p)
            made[p].append(router.run(commands.create_job(queue, JobOptions(input=r))).id)
            if r % 2:
                (started,) = router.run(commands.fetch_jobs(queue))
                router.run(commands.update_job(started.id, JobUpdate(status="completed")))
    return made


def partition_events(client: redis.Redis, router: Partitioned, partition: int) -> list[Event]:
    keys = Keys(router.partitioning.namespaces[partition])
    return [decode_entry(i, fields) for i, fields in xrange(client, keys.events)]


def merged(
    client: redis.Redis, router: Partitioned, partitions: list[int] | None = None
) -> list[tuple[Any, ...]]:
    """Every event of the partitions (all by default) in time order, then partition, then id."""
    found = [
        (e.at, p, id_key(e.id), e)
        for p in (partitions if partitions is not None else range(COUNT))
        for e in partition_events(client, router, p)
    ]
    return [_seen(e.item()) for *_, e in sorted(found, key=lambda f: f[:3])]


def _seen(item: dict[str, Any]) -> tuple[Any, ...]:
    return item["id"], item["type"], item["job"], item["queue"], item["at"]


def pages(api: TestClient, **params: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """Every event of ``GET /events`` page by page; and the cursors it gave."""
    items: list[dict[str, Any]] = []
    cursors: list[str] = []
    after = None
    for _ in range(1000):
        response = api.get("/events", params={**params, **({"after": after} if after else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["events"]
        after = page["next"]
        if after is None:
            return items, cursors
        cursors.append(after)
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize("limit", [1, 4, 100])
def test_pages_visit_every_event_of_every_partition_once_in_time_order(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str, limit: int
) -> None:
    workload(split, clock)
    expected = merged(client, split)
    assert expected != sorted(expected, key=lambda e: id_key(e[0]))  # writing order is not time order
    with app_client(redis_url, namespace) as api:
        items, cursors = pages(api, limit=limit)
    assert [_seen(i) for i in items] == expected
    assert {i["queue"] for i in items} == {queue_of(split, p) for p in range(COUNT)}
    # each cursor is opaque, URL-safe, and names a position in each of the three partitions
    for cursor in cursors:
        assert not cursor[0].isdigit() and cursor.replace("-", "").replace("_", "").isalnum()
        parsed = parse_cursor(cursor, COUNT, "after")
        assert parsed is not None and len(parsed.positions) == COUNT


def test_filters_read_across_partitions_and_a_queue_or_job_only_its_own(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str
) -> None:
    made = workload(split, clock)
    everything = merged(client, split)
    with app_client(redis_url, namespace) as api:
        created, _ = pages(api, type="job_created", limit=2)
        assert [_seen(i) for i in created] == [e for e in everything if e[1] == "job_created"]
        assert len(created) == sum(len(ids) for ids in made.values())
        queue = queue_of(split, 1)
        of_queue, cursors = pages(api, queue=queue, limit=3)
        assert [_seen(i) for i in of_queue] == merged(client, split, [1])
        for cursor in cursors:  # the other partitions were not read: their positions never moved
            parsed = parse_cursor(cursor, COUNT, "after")
            assert parsed is not None and (parsed.positions[0], parsed.positions[2]) == (START, START)
        job = made[2][1]
        of_job, _ = pages(api, job=job, limit=1)
        assert [i["type"] for i in of_job] == ["job_created", "job_started", "job_completed"]
        assert {i["job"] for i in of_job} == {job}
        none, _ = pages(api, actor="nobody")
        assert none == []


def skewed(router: Partitioned, clock: Clock) -> None:
    """A job completed early in time but late in its partition's stream (after ten others were
    created), while other partitions completed theirs later in time but early in their streams."""
    queues = [queue_of(router, p) for p in range(COUNT)]
    for queue in queues:
        router.run(commands.put_queue(queue, QueueSettings()))
    for n in range(10):
        clock.now = BASE_MS + n
        router.run(commands.create_job(queues[0], JobOptions()))
    for p, at in ((1, 500), (2, 300), (0, 20)):
        clock.now = BASE_MS + at
        if p:
            router.run(commands.create_job(queues[p], JobOptions()))
        (started,) = router.run(commands.fetch_jobs(queues[p]))
        router.run(commands.update_job(started.id, JobUpdate(status="completed")))


@pytest.mark.parametrize("shape", ["even", "skewed"])
def test_a_rare_filter_within_a_small_scan_budget_still_finds_every_event_once_in_order(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str, shape: str
) -> None:
    if shape == "even":
        workload(split, clock, rounds=8)
    else:
        skewed(split, clock)
    budget = 6 if shape == "even" else 12  # skewed: the others' completions fit in one page, not its
    wanted = [e for e in merged(client, split) if e[1] == "job_completed"]

    async def walk() -> tuple[list[tuple[Any, ...]], int]:
        router = await open_ledger_async(redis_url, namespace)
        try:
            cursor, seen, rounds = Cursor.start(COUNT), [], 0
            while True:
                rounds += 1
                page = await merged_page(router, cursor, 2, EventFilter(type="job_completed"), budget=budget)
                seen += [_seen(e.item()) for _, e in page.events]
                cursor = page.cursor
                if page.done:
                    return seen, rounds
        finally:
            for runner in router.runners:
                await runner.client.aclose()

    seen, rounds = asyncio.run(walk())
    assert seen == wanted
    assert rounds > len(wanted) // 2 + 1  # the budget cut pages short, some of them empty


def test_archived_events_of_a_partition_come_first_in_its_place(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    workload(split, clock)
    expected = merged(client, split)
    held = len(partition_events(client, split, 1))
    moved = archive(
        redis_url,
        split.partitioning.namespaces[1],
        local_archive(tmp_path / "blobs", split.partitioning.namespace),
        BASE_MS + 250,
    )
    assert 0 < moved < held and len(partition_events(client, split, 1)) == held - moved
    with app_client(redis_url, namespace, blobs=LocalBlobStore(tmp_path / "blobs")) as api:
        for limit in (1, 5):
            items, _ = pages(api, limit=limit)
            assert [_seen(i) for i in items] == expected
    start = {"last-event-id": Cursor.start(COUNT).token()}
    with (
        live_server(redis_url, namespace, blobs=LocalBlobStore(tmp_path / "blobs")) as server,
        httpx2.Client(base_url=server, timeout=10) as http,
        http.stream("GET", "/events/stream", headers=start) as r,
    ):
        sse = Sse(r)
        assert [_seen(sse.next_event()[1]) for _ in expected] == expected


def test_a_client_that_goes_away_takes_its_reads_of_every_partition_with_it(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str
) -> None:
    workload(split, clock, rounds=1)
    before = xread_clients(client)
    with live_server(redis_url, namespace) as server, httpx2.Client(base_url=server, timeout=10) as http:
        with http.stream("GET", "/events/stream") as r:
            assert r.status_code == 200
            eventually(lambda: len(xread_clients(client) - before) == COUNT)  # a read of each partition
            ours = xread_clients(client) - before
        eventually(lambda: not (xread_clients(client) & ours), timeout=3)  # well before a read's block ends


@pytest.mark.parametrize(
    "bad", ["nonsense", "p", "p!!!!", "p" + "A" * 7, Cursor(("1-0", "2-0")).token(), "12-x"]
)
def test_a_cursor_this_ledger_did_not_give_is_a_400(
    split: Partitioned, clock: Clock, redis_url: str, namespace: str, bad: str
) -> None:
    workload(split, clock, rounds=1)
    with app_client(redis_url, namespace) as api:
        assert "after" in error_of(api.get("/events", params={"after": bad}), 400)
        assert "last-event-id" in error_of(api.get("/events/stream", headers={"last-event-id": bad}), 400)


def test_a_plain_event_id_is_that_point_in_every_partition(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str
) -> None:
    workload(split, clock)
    everything = merged(client, split)
    middle = everything[len(everything) // 2][0]
    with app_client(redis_url, namespace) as api:
        items, _ = pages(api, after=middle)
    assert [_seen(i) for i in items] == [e for e in everything if id_key(e[0]) > id_key(middle)]


def test_the_stream_delivers_every_partition_live_and_resumes_without_loss_or_repeat(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str
) -> None:
    workload(split, clock, rounds=2)
    before = merged(client, split)
    with live_server(redis_url, namespace) as server, httpx2.Client(base_url=server, timeout=10) as http:
        with http.stream("GET", "/events/stream", params={"type": "job_created"}) as r:
            assert r.status_code == 200
            sse = Sse(r)
            clock.now = BASE_MS + 10_000
            live = [split.run(commands.create_job(queue_of(split, p), JobOptions())).id for p in (2, 0, 1)]
            got = [sse.next_event() for _ in live]
        assert sorted(item["job"] for _, item in got) == sorted(live)
        assert len({i % COUNT for i in live}) == COUNT
        last_id = got[-1][0]
        assert parse_cursor(last_id, COUNT, "id") is not None and not last_id[0].isdigit()
        # while nobody follows, more happens in every partition; a feed resumed after the last id
        # seen gives exactly those events, in time order
        later = []
        for n, p in enumerate((1, 2, 0, 2)):
            clock.now = BASE_MS + 20_000 - 100 * n
            later.append(split.run(commands.create_job(queue_of(split, p), JobOptions())).id)
        headers = {"last-event-id": last_id}
        with http.stream("GET", "/events/stream", params={"type": "job_created"}, headers=headers) as r:
            sse = Sse(r)
            again = [sse.next_event() for _ in later]
            assert sse.ids[0] == last_id  # the starting position, before any event
        in_time_order = [e[2] for e in merged(client, split) if e[1] == "job_created" and e[2] in later]
        assert [item["job"] for _, item in again] == in_time_order
        assert in_time_order != later  # written in another order than they happened
        # from the beginning, the whole ledger merged: catch-up pages then the live ends
        with http.stream("GET", "/events/stream", params={"after": Cursor.start(COUNT).token()}) as r:
            sse = Sse(r)
            everything = merged(client, split)
            replayed = [sse.next_event() for _ in everything]
        assert [_seen(item) for _, item in replayed] == everything
        assert everything[: len(before)] == before


def test_the_dashboards_feeds_follow_a_split_ledger(
    split: Partitioned, clock: Clock, redis_url: str, namespace: str
) -> None:
    made = workload(split, clock, rounds=2)
    with live_server(redis_url, namespace) as server, httpx2.Client(base_url=server, timeout=10) as http:
        page = http.get("/ui/events")
        assert page.status_code == 200 and "sse-connect" in page.text
        with http.stream("GET", "/ui/events/stream") as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            clock.now = BASE_MS + 10_000
            job = split.run(commands.create_job(queue_of(split, 2), JobOptions())).id
            block = next(line for line in lines if line.startswith("data: ") and f"/ui/job/{job}" in line)
            assert block
        jid = made[1][-1]
        with http.stream("GET", f"/ui/job/{jid}/stream") as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            first = next(line for line in lines if line.startswith("id: "))
            assert first[4:][0].isdigit()  # one partition read: its own event ids
            split.run(commands.update_job(jid, JobUpdate(status="cancelled")))
            assert next(line for line in lines if line.startswith("data: ") and "cancelled" in line)


def test_the_python_client_pages_and_waits_on_a_split_ledger_passing_cursors_back_untouched(
    split: Partitioned, clock: Clock, client: redis.Redis, redis_url: str, namespace: str
) -> None:
    made = workload(split, clock, rounds=2)
    expected = merged(client, split)
    with live_server(redis_url, namespace) as server, Client(server) as api:
        seen = [_seen(e.model_dump(mode="json"))[:4] for e in api.events(page_size=3)]
        assert seen == [e[:4] for e in expected]
        jid = made[2][-1]
        clock.now = BASE_MS + 10_000
        (started,) = split.run(commands.fetch_jobs(queue_of(split, 2)))
        assert started.id == jid
        split.run(commands.update_job(jid, JobUpdate(status="completed")))
        assert api.wait(jid, timeout=10).status == "completed"

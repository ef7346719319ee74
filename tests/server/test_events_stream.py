"""GET /events/stream against a live server: live, resumable, filtered, archive-aware, and a client
that goes away takes its server loop with it.  Also the client's ``events`` / ``follow``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import redis

from jobledger.client import AsyncClient, Client, Event
from jobledger.ledger.runner import Ledger
from tests.support.ledger import START_MS, create, put_queue
from tests.support.live_server import eventually
from tests.support.replay import archive, local_archive, stream_ids, workload


class Sse:
    """An SSE connection read line by line: its events (id, item) and the ids it was told."""

    def __init__(self, response: httpx2.Response) -> None:
        self.lines = response.iter_lines()
        self.ids: list[str] = []

    def next_event(self) -> tuple[str, dict[str, Any]]:
        """The next event that carries data; id-only blocks are recorded in ``ids``."""
        event_id, data = None, None
        for line in self.lines:
            if line.startswith("id: "):
                event_id = line[4:]
                self.ids.append(event_id)
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "" and data is not None:
                assert event_id is not None
                return event_id, data
        raise AssertionError("the stream ended")


def xread_clients(client: redis.Redis) -> set[int]:
    """Ids of the Redis connections blocked in XREAD right now."""
    return {int(c["id"]) for c in client.client_list() if c.get("cmd") == "xread"}


def test_the_stream_resumes_after_last_event_id(
    server: str, ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    workload(ledger, jobs=6)
    ids = stream_ids(client, namespace)
    headers = {"last-event-id": ids[4]}
    with (
        httpx2.Client(base_url=server, timeout=10) as http,
        http.stream("GET", "/events/stream", headers=headers) as r,
    ):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        sse = Sse(r)
        got = [sse.next_event() for _ in ids[5:]]
    assert [event_id for event_id, _ in got] == ids[5:]
    assert [item["id"] for _, item in got] == ids[5:]
    assert sse.ids[0] == ids[4]  # the starting position, sent before any event
    assert set(got[0][1]) == {"id", "type", "at", "queue", "job", "actor", "data"}


def test_an_event_appended_after_connecting_arrives_live(server: str, ledger: Ledger) -> None:
    put_queue(ledger, "q")
    with (
        httpx2.Client(base_url=server, timeout=10) as http,
        http.stream("GET", "/events/stream", params={"type": "job_created"}) as r,
    ):
        sse = Sse(r)
        job_id = create(ledger, "q", input={"hello": "world"})
        event_id, item = sse.next_event()
    assert (item["type"], item["job"], item["data"]["input"]) == ("job_created", job_id, {"hello": "world"})
    assert event_id == item["id"] and sse.ids[0] != event_id


def test_a_client_that_disconnects_leaves_no_server_loop_reading(
    server: str, ledger: Ledger, client: redis.Redis
) -> None:
    put_queue(ledger, "q")
    before = xread_clients(client)
    http = httpx2.Client(base_url=server, timeout=10)
    with http.stream("GET", "/events/stream") as r:
        assert r.status_code == 200
        ours = eventually(lambda: xread_clients(client) - before, timeout=5)
    http.close()
    eventually(lambda: not (xread_clients(client) & ours), timeout=5)
    create(ledger, "q")  # the ledger goes on; nobody is left reading for the gone client
    assert not (xread_clients(client) & ours)


def test_the_client_pages_and_follows(
    server: str, ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    ids_before = workload(ledger, jobs=6)
    every = stream_ids(client, namespace)
    with Client(server) as api:
        assert [e.id for e in api.events(page_size=4)] == every
        assert [e.id for e in api.events(every[2], page_size=3)] == every[3:]
        assert {e.job for e in api.events(job=ids_before[0])} == {ids_before[0]}
        seen: list[Event] = []
        before = xread_clients(client)
        follower = threading.Thread(target=lambda: seen.extend(_take(api.follow(queue="mail"), 2)))
        follower.start()
        eventually(lambda: xread_clients(client) - before)
        created = [create(ledger, q) for q in ("video", "mail", "mail")]
        follower.join(timeout=10)
    assert [(e.type, e.job) for e in seen] == [("job_created", created[1]), ("job_created", created[2])]


def _take(events: Iterator[Event], n: int) -> list[Event]:
    out = []
    for event in events:
        out.append(event)
        if len(out) == n:
            break
    return out


def test_the_async_client_pages_and_follows(
    server: str, ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    workload(ledger, jobs=3)
    every = stream_ids(client, namespace)

    async def scenario() -> None:
        async with AsyncClient(server) as api:
            assert [e.id async for e in api.events(page_size=2)] == every
            followed: list[Event] = []
            async with contextlib.aclosing(api.follow(after=every[-3])) as feed:
                async for event in feed:
                    followed.append(event)
                    if len(followed) == 2:
                        break
            assert [e.id for e in followed] == every[-2:]

    asyncio.run(scenario())


def test_the_stream_starts_in_the_archive_when_resumed_from_an_archived_event(
    server: str, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    clock = [START_MS]
    ledger = Ledger(client, namespace, clock=lambda: clock[0])
    workload(ledger, jobs=6)
    clock[0] = START_MS + 86_400_000
    workload(ledger, jobs=6)
    ids = stream_ids(client, namespace)
    archived = archive(
        redis_url, namespace, local_archive(tmp_path / "blobs", namespace), START_MS + 1, segment_events=4
    )
    assert 0 < archived < len(ids) - 3
    headers = {"last-event-id": ids[1]}
    with (
        httpx2.Client(base_url=server, timeout=10) as http,
        http.stream("GET", "/events/stream", headers=headers) as r,
    ):
        sse = Sse(r)
        got = [sse.next_event()[0] for _ in ids[2:]]
    assert got == ids[2:]


def test_without_a_position_the_stream_starts_at_the_live_end_even_when_all_is_archived(
    server: str, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    ledger = Ledger(client, namespace, clock=lambda: START_MS)
    workload(ledger, jobs=3)
    ids = stream_ids(client, namespace)
    assert archive(redis_url, namespace, local_archive(tmp_path / "blobs", namespace), START_MS + 1) == len(
        ids
    )
    with httpx2.Client(base_url=server, timeout=10) as http, http.stream("GET", "/events/stream") as r:
        sse = Sse(r)
        job_id = create(ledger, "mail")
        event_id, item = sse.next_event()
    assert sse.ids[0] == ids[-1]  # starts after the last archived event, replays none of them
    assert (item["type"], item["job"]) == ("job_created", job_id) and event_id not in ids

"""Who caused each event, over HTTP: ``actor`` in history, ``GET /events`` (and its ``actor=``
filter), the SSE feed and export; old entries without the field read as ``local`` everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis
from freezegun.api import FrozenDateTimeFactory
from starlette.testclient import TestClient

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay.transfer import export_ledger, import_ledger
from jobledger.scheduler.loop import tick
from tests.scheduler.launcher_support import advance_to, new_launcher
from tests.server.test_events_stream import Sse
from tests.support.http import app_client, create_job, error_of, fetch
from tests.support.ledger import create, fetch_one, put_queue, update
from tests.support.live_server import live_server
from tests.support.replay import stream_entries, workload


def _events(api: TestClient, **params: Any) -> list[dict[str, Any]]:
    response = api.get("/events", params={"limit": 1000, **params})
    assert response.status_code == 200, response.text
    page = response.json()
    assert page["next"] is None
    return list(page["events"])


def _mixed(ledger: Ledger, frozen: FrozenDateTimeFactory) -> tuple[int, int]:
    """A ledger written by every kind of actor: local, a named one, the scheduler and a launcher.
    The id of the job that went through them all, and of the launcher."""
    bot = ledger.as_actor("ci-bot")
    put_queue(ledger, "q", retries=1, retry_delays=["1s"])
    job_id = create(bot, "q", input="x")
    fetch_one(ledger, "q")
    update(bot, job_id, status="failed")
    frozen.tick(2)
    tick(ledger)  # the scheduler requeues it
    lid = new_launcher(bot, "@at", "2030-01-01T00:01:00Z")
    advance_to(ledger, frozen, 60)
    return job_id, lid


def test_history_and_events_show_who_caused_each_event(
    api: TestClient, ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    job_id, lid = _mixed(ledger, frozen)
    history = api.get(f"/job/{job_id}/history").json()
    assert [(e["type"], e["actor"]) for e in history] == [
        ("job_created", "ci-bot"), ("job_started", "local"), ("job_failed", "ci-bot"),
        ("job_requeued", "scheduler"),
    ]  # fmt: skip
    every = _events(api)
    assert {e["actor"] for e in every} == {"local", "ci-bot", "scheduler", f"launcher:{lid}"}
    for actor in ("local", "ci-bot", "scheduler", f"launcher:{lid}"):
        assert _events(api, actor=actor) == [e for e in every if e["actor"] == actor]
    assert [e["type"] for e in _events(api, actor=f"launcher:{lid}")] == ["job_created", "launcher_fired"]
    assert [e["type"] for e in _events(api, actor="ci-bot", job=job_id)] == ["job_created", "job_failed"]
    assert _events(api, actor="nobody") == []


def test_created_over_http_without_auth_is_local(api: TestClient) -> None:
    api.put("/queue/q", json={})
    job_id = create_job(api, "q")
    fetch(api, "q")
    assert {e["actor"] for e in api.get(f"/job/{job_id}/history").json()} == {"local"}


@pytest.mark.parametrize("bad", ["a\x01b", "new\nline", "x" * 256])  # blank: no filter
@pytest.mark.parametrize("path", ["/events", "/events/stream"])
def test_a_bad_actor_filter_is_400(api: TestClient, path: str, bad: str) -> None:
    assert "actor" in error_of(api.get(path, params={"actor": bad}), 400)


def test_the_feed_shows_the_actor_and_filters_by_it(server: str, ledger: Ledger) -> None:
    put_queue(ledger, "q")
    with (
        httpx2.Client(base_url=server, timeout=10) as http,
        http.stream("GET", "/events/stream", params={"actor": "ci-bot"}) as r,
    ):
        sse = Sse(r)
        create(ledger, "q")  # local: filtered out
        job_id = create(ledger.as_actor("ci-bot"), "q")
        _, item = sse.next_event()
    assert (item["type"], item["job"], item["actor"]) == ("job_created", job_id, "ci-bot")


def _old_export(client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path) -> Path:
    """An export as a jobledger before events recorded their actor wrote it: no ``actor`` key."""
    workload(ledger, jobs=6)
    new = tmp_path / "new.jsonl"
    export_ledger(client, namespace, new)
    old = tmp_path / "old.jsonl"
    lines = [json.loads(line) for line in new.read_text().splitlines()]
    old.write_text("".join(json.dumps({k: v for k, v in x.items() if k != "actor"}) + "\n" for x in lines))
    return old


def test_old_events_without_an_actor_read_as_local_everywhere(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    """The upcast, end to end: a ledger of entries without ``actor`` (imported from an old export)
    shows ``local`` in history, /events, its filter and the feed; an export of it keeps no actor."""
    old = namespace + "-old"
    count = import_ledger(client, old, _old_export(client, ledger, namespace, tmp_path))
    entries = stream_entries(client, old)
    assert len(entries) == count and all(b"actor" not in dict(fields) for _, fields in entries)
    with app_client(redis_url, old) as api:
        every = _events(api)
        assert len(every) == count and {e["actor"] for e in every} == {"local"}
        assert _events(api, actor="local") == every
        assert {e["actor"] for e in api.get("/job/1/history").json()} == {"local"}
    with (
        live_server(redis_url, old) as url,
        httpx2.Client(base_url=url, timeout=10) as http,
        http.stream("GET", "/events/stream", params={"after": "0-0", "actor": "local"}) as r,
    ):
        sse = Sse(r)
        assert [sse.next_event()[1]["actor"] for _ in range(3)] == ["local"] * 3
    again = tmp_path / "again.jsonl"
    export_ledger(client, old, again)
    assert {json.loads(line)["actor"] for line in again.read_text().splitlines()} == {None}
    import_ledger(client, old + "-copy", again)
    assert stream_entries(client, old + "-copy") == entries
    assert client.xlen(Keys(old).events) == count

"""GET /events: the ledger in pages that return every matching event exactly once, in order."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.stream import EventFilter, scan
from jobledger.replay.source import xrange


def _workload(ledger: Ledger) -> None:
    for q in ("a", "b"):
        ledger.run(commands.put_queue(q, QueueSettings()))
    for i in range(30):
        q = "a" if i % 3 else "b"
        ledger.run(commands.create_job(q, JobOptions(input=i)))
        if i % 2:
            (started,) = ledger.run(commands.fetch_jobs(q))
            ledger.run(commands.update_job(started.id, JobUpdate(status="completed")))


def _all_ids(client: redis.Redis, namespace: str) -> list[str]:
    return [i.decode() for i, _ in xrange(client, Keys(namespace).events)]


def _follow(api: TestClient, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    after = None
    for _ in range(1000):
        query = {**params, **({"after": after} if after else {})}
        page = api.get("/events", params=query).json()
        items += page["events"]
        after = page["next"]
        if after is None:
            return items
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize("limit", [1, 7, 100])
def test_pages_return_every_event_once_in_order(
    api: TestClient, ledger: Ledger, client: redis.Redis, namespace: str, limit: int
) -> None:
    _workload(ledger)
    items = _follow(api, limit=limit)
    assert [i["id"] for i in items] == _all_ids(client, namespace)
    assert {"id", "type", "at", "queue", "job", "actor", "data"} == set(items[0])
    assert items[0]["at"].endswith("Z")


def test_filters_by_type_queue_and_job(
    api: TestClient, ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    _workload(ledger)
    every = _follow(api, limit=1000)
    completed_b = _follow(api, type="job_completed", queue="b", limit=2)
    assert completed_b == [e for e in every if e["type"] == "job_completed" and e["queue"] == "b"]
    assert completed_b
    for job in range(1, 31):
        assert _follow(api, job=job, limit=1) == [e for e in every if e["job"] == job]
    assert [e["type"] for e in _follow(api, job=2, limit=2)] == [
        "job_created",
        "job_started",
        "job_completed",
    ]


def test_a_rare_filter_stops_scanning_at_its_budget_and_hands_back_a_cursor(
    ledger: Ledger, client: redis.Redis, namespace: str
) -> None:
    _workload(ledger)
    page = ledger.read(scan(None, 10, EventFilter(type="queue_deleted"), budget=20))
    assert page.events == []
    assert page.next == _all_ids(client, namespace)[19]
    assert ledger.read(scan(page.next, 10, EventFilter(type="queue_deleted"))).next is None


def test_an_empty_filter_is_no_filter(api: TestClient, ledger: Ledger) -> None:
    _workload(ledger)
    assert _follow(api, type="", queue="", job="", actor="", limit=1000) == _follow(api, limit=1000)
    completed_b = _follow(api, type="job_completed", queue="b", job="", actor="", limit=1000)
    assert completed_b == _follow(api, type="job_completed", queue="b", limit=1000) != []


@pytest.mark.parametrize(
    "query",
    ["after=yesterday", "limit=0", "limit=1001", "type=job_exploded", "queue=no%20way", "job=-1"],
)
def test_bad_parameters_are_400_with_a_reason(api: TestClient, query: str) -> None:
    response = api.get(f"/events?{query}")
    assert response.status_code == 400
    assert response.json()["error"]

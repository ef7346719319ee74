"""GET /queue/{q}/jobs: job summaries in id order, filtered by status and tag, in pages."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from tests.support.http import app_client, put_queue
from tests.support.private_redis import PrivateServer


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    with app_client(redis_url, namespace) as client:
        put_queue(client, max_running_per_key=1)
        yield client


def _all(api: TestClient, **params: Any) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        page = api.get("/queue/q/jobs", params={**params, **({"cursor": cursor} if cursor else {})}).json()
        jobs += page["jobs"]
        cursor = page["next"]
        if cursor is None:
            return jobs
    raise AssertionError("pages never ended")


@pytest.fixture
def world(api: TestClient) -> dict[str, list[int]]:
    """Jobs in several states, some with a quota key (held back in its lane), some tagged."""
    bodies = [{"tags": ["t"] if i % 2 else [], "quota_key": "k" if i % 3 == 0 else None} for i in range(12)]
    ids = api.post("/queue/q/jobs", json=[{k: v for k, v in b.items() if v} for b in bodies]).json()
    running = [j["id"] for j in api.get("/queue/q/job?count=4").json()]
    api.patch(f"/job/{running[0]}", json={"status": "completed"})
    return {"all": ids, "running": running[1:], "completed": [running[0]]}


@pytest.mark.parametrize("limit", [1, 5, 100])
def test_every_job_once_in_id_order(api: TestClient, world: dict[str, list[int]], limit: int) -> None:
    jobs = _all(api, limit=limit)
    assert [j["id"] for j in jobs] == world["all"]
    assert set(jobs[0]) >= {"id", "status", "created_at", "attempt", "tags", "quota_key"}


def test_by_status_including_queued_jobs_held_in_quota_lanes(
    api: TestClient, world: dict[str, list[int]]
) -> None:
    assert [j["id"] for j in _all(api, status="running", limit=2)] == world["running"]
    assert [j["id"] for j in _all(api, status="completed")] == world["completed"]
    queued = [j["id"] for j in _all(api, status="queued", limit=3)]
    assert queued == sorted(set(world["all"]) - set(world["running"]) - set(world["completed"]))
    assert api.get("/queue/q/job_ids").json()["queued"] != []


def test_by_tag_and_status(api: TestClient, world: dict[str, list[int]]) -> None:
    tagged = api.get("/tag/t").json()
    assert [j["id"] for j in _all(api, tag="t", limit=2)] == tagged
    running_tagged = [j["id"] for j in _all(api, tag="t", status="running")]
    assert running_tagged == sorted(set(tagged) & set(world["running"]))


@pytest.mark.parametrize("query", ["status=lost", "limit=0", "limit=5000", "cursor=abc"])
def test_bad_parameters_are_400(api: TestClient, query: str) -> None:
    response = api.get(f"/queue/q/jobs?{query}")
    assert response.status_code == 400
    assert response.json()["error"]


def test_missing_queue_is_404(api: TestClient) -> None:
    assert api.get("/queue/nope/jobs").status_code == 404


def _hgetalls(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_hgetall", {}).get("calls", 0))


@pytest.mark.parametrize("status", [None, "queued"])
def test_a_page_reads_the_fields_of_at_most_one_job_more_than_it_holds(
    private: PrivateServer, namespace: str, status: str | None
) -> None:
    # Queued ids are not in id order, so they are read whole; the jobs' fields, the costly part,
    # are read only for the page.
    with app_client(private.url, namespace) as api:
        put_queue(api)
        created = api.post("/queue/q/jobs", json=[{} for _ in range(300)]).json()
        watched = redis.Redis.from_url(private.url)
        before = _hgetalls(watched)
        page = api.get("/queue/q/jobs", params={"limit": 10, **({"status": status} if status else {})}).json()
        read = _hgetalls(watched) - before
        assert [j["id"] for j in page["jobs"]] == created[:10]
        assert page["next"] == created[9]
        assert read <= 11
        following = api.get("/queue/q/jobs", params={"limit": 10, "cursor": page["next"]}).json()
        assert [j["id"] for j in following["jobs"]] == created[10:20]

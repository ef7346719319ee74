"""Ocypod's ``/queue`` endpoints over HTTP: every path and status code the API
documents (docs/http-api.md), bodies checked."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from tests.support.http import (
    DEFAULT_SETTINGS,
    JOB_STATUSES,
    create_job,
    error_of,
    fetch,
    job_field,
    no_content,
    put_queue,
    tick_at,
    unchanged,
)
from tests.support.ledger import nth_id

# GET /queue


def test_list_queues_is_empty_then_sorted_names(api: TestClient) -> None:
    response = api.get("/queue")
    assert response.status_code == 200
    assert response.json() == []
    for name in ("zeta", "alpha", "mid.dle-1_x"):
        put_queue(api, name)
    assert api.get("/queue").json() == ["alpha", "mid.dle-1_x", "zeta"]


# PUT /queue/{q}


def test_put_queue_creates_with_201_and_location_then_updates_with_204(api: TestClient) -> None:
    created = api.put("/queue/jobs-1", json={"timeout": "10m"})
    assert created.status_code == 201
    assert created.headers["location"] == "/queue/jobs-1"
    assert created.content == b""
    updated = api.put("/queue/jobs-1", json={"timeout": "20m"})
    no_content(updated)
    assert updated.headers["location"] == "/queue/jobs-1"  # as Ocypod sends on update too
    assert api.get("/queue/jobs-1").json()["timeout"] == "20m"


def test_put_queue_with_empty_body_takes_ocypod_defaults(api: TestClient) -> None:
    assert api.put("/queue/q").status_code == 201
    assert api.get("/queue/q").json() == DEFAULT_SETTINGS


def test_put_queue_replaces_settings_missing_fields_take_their_default(api: TestClient) -> None:
    put_queue(api, timeout="10m", heartbeat_timeout="30s", retries=3, retry_delays=["1s"])
    no_content(api.put("/queue/q", json={"retries": 1}))
    assert api.get("/queue/q").json() == {**DEFAULT_SETTINGS, "retries": 1}


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("1h15m5s", "1h15m5s"),
        ("30s", "30s"),
        ("3w2d", "3w2d"),
        ("1.5h", "1h30m"),
        ("0s", "0s"),
        (4505, "1h15m5s"),
        (90, "1m30s"),
        (2.5, "2.5s"),
        (0, "0s"),
    ],
)
def test_durations_round_trip_as_compact_strings(api: TestClient, given: Any, shown: str) -> None:
    put_queue(api, timeout=given, heartbeat_timeout=given, expires_after=given, retry_delays=[given, "5m"])
    settings = api.get("/queue/q").json()
    assert settings == {**DEFAULT_SETTINGS, "timeout": shown, "heartbeat_timeout": shown,
                        "expires_after": shown, "retry_delays": [shown, "5m"]}  # fmt: skip
    no_content(api.put("/queue/q", json=settings))  # what GET shows, PUT takes back unchanged
    assert api.get("/queue/q").json() == settings


# GET /queue/{q}


def test_get_queue_settings(api: TestClient) -> None:
    put_queue(api, timeout="10m", heartbeat_timeout="5m", retries=5, retry_delays=["10s", "30s", "5m"])
    response = api.get("/queue/q")
    assert response.status_code == 200
    assert response.json() == {**DEFAULT_SETTINGS, "timeout": "10m", "heartbeat_timeout": "5m",
                               "retries": 5, "retry_delays": ["10s", "30s", "5m"]}  # fmt: skip


@pytest.mark.parametrize("path", ["/queue/nope", "/queue/nope/size", "/queue/nope/job_ids"])
def test_reads_of_a_missing_queue_are_404(api: TestClient, path: str) -> None:
    assert "nope" in error_of(api.get(path), 404)


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("GET", ""), ("PUT", ""), ("DELETE", ""), ("GET", "/size"), ("GET", "/job_ids"),
     ("POST", "/job"), ("GET", "/job")],
)  # fmt: skip
def test_an_invalid_queue_name_is_400_on_every_queue_path(
    api: TestClient, client: redis.Redis, namespace: str, method: str, suffix: str
) -> None:
    with unchanged(client, namespace):
        response = api.request(method, f"/queue/a:b{suffix}", json={} if method in ("PUT", "POST") else None)
        assert "invalid queue name" in error_of(response, 400)


# DELETE /queue/{q}


def test_delete_queue_removes_it_and_its_queued_jobs_only(api: TestClient) -> None:
    put_queue(api)
    running = create_job(api, input="r")
    queued = create_job(api, input="q")
    assert fetch(api)["id"] == running
    no_content(api.delete("/queue/q"))
    assert api.get("/queue").json() == []
    error_of(api.get("/queue/q"), 404)
    assert "does not exist" in error_of(api.get(f"/job/{queued}"), 404)
    assert job_field(api, running, "status") == "running"


def test_delete_missing_queue_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "nope" in error_of(api.delete("/queue/nope"), 404)


# GET /queue/{q}/size


def test_queue_size_counts_queued_jobs(api: TestClient) -> None:
    put_queue(api)
    assert api.get("/queue/q/size").json() == 0
    create_job(api)
    create_job(api)
    response = api.get("/queue/q/size")
    assert response.status_code == 200
    assert response.json() == 2
    fetch(api)
    assert api.get("/queue/q/size").json() == 1


# GET /queue/{q}/job_ids


def test_job_ids_by_status_covers_all_six(api: TestClient, ledger: Ledger) -> None:
    put_queue(api, timeout="10s")
    timed_out = create_job(api)
    fetch(api)
    assert tick_at(ledger, timedelta(seconds=11))["timeouts"] == [timed_out]
    running, failed, completed = create_job(api), create_job(api), create_job(api)
    assert [fetch(api)["id"] for _ in range(3)] == [running, failed, completed]
    no_content(api.patch(f"/job/{failed}", json={"status": "failed"}))
    no_content(api.patch(f"/job/{completed}", json={"status": "completed"}))
    cancelled = create_job(api)
    no_content(api.patch(f"/job/{cancelled}", json={"status": "cancelled"}))
    queued = [create_job(api), create_job(api)]
    response = api.get("/queue/q/job_ids")
    assert response.status_code == 200
    assert response.json() == {
        "queued": queued, "running": [running], "failed": [failed], "completed": [completed],
        "cancelled": [cancelled], "timed_out": [timed_out], "scheduled": [],
    }  # fmt: skip
    assert set(response.json()) == set(JOB_STATUSES)


def test_job_ids_of_an_empty_queue_lists_every_status(api: TestClient) -> None:
    put_queue(api)
    assert api.get("/queue/q/job_ids").json() == {status: [] for status in JOB_STATUSES}


# POST /queue/{q}/job


def test_create_job_answers_201_with_id_and_location(api: TestClient, namespace: str) -> None:
    put_queue(api)
    for n in (1, 2):
        response = api.post("/queue/q/job", json={"input": {"n": n}})
        assert response.status_code == 201
        assert response.json() == nth_id(namespace, n)  # 1, 2, as Ocypod hands them out, on one partition
        assert response.headers["location"] == f"/job/{nth_id(namespace, n)}"
    assert api.get(f"/job/{nth_id(namespace, 2)}").json()["input"] == {"n": 2}


def test_create_job_inherits_queue_settings_unless_given(api: TestClient) -> None:
    put_queue(api, timeout="10m", heartbeat_timeout="1m", expires_after="1h", retries=2, retry_delays=["5s"])
    inherited = create_job(api)
    own = create_job(api, timeout="1h15m5s", heartbeat_timeout=30, expires_after="0s", retries=0,
                     retry_delays=["1s", "2s"], tags=["a", "b"])  # fmt: skip
    fields = "timeout,heartbeat_timeout,expires_after,retries,retry_delays,tags"
    assert api.get(f"/job/{inherited}?fields={fields}").json() == {
        "timeout": "10m", "heartbeat_timeout": "1m", "expires_after": "1h", "retries": 2,
        "retry_delays": ["5s"], "tags": None,
    }  # fmt: skip
    assert api.get(f"/job/{own}?fields={fields}").json() == {
        "timeout": "1h15m5s", "heartbeat_timeout": "30s", "expires_after": "0s", "retries": 0,
        "retry_delays": ["1s", "2s"], "tags": ["a", "b"],
    }  # fmt: skip


def test_create_job_with_empty_body_has_null_input(api: TestClient, namespace: str) -> None:
    put_queue(api)
    assert api.post("/queue/q/job").status_code == 201
    assert fetch(api) == {"id": nth_id(namespace, 1), "input": None, "attempt": 1}


def test_create_job_on_missing_queue_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "nope" in error_of(api.post("/queue/nope/job", json={"input": 1}), 404)


# GET /queue/{q}/job


def test_fetch_answers_id_input_attempt_and_starts_the_job(api: TestClient) -> None:
    put_queue(api)
    job_id = create_job(api, input={"some_key": [1, 2, 3]})
    response = api.get("/queue/q/job")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"id": job_id, "input": {"some_key": [1, 2, 3]}, "attempt": 1}
    assert job_field(api, job_id, "status") == "running"
    assert api.get("/queue/q/size").json() == 0


def test_fetch_is_first_in_first_out(api: TestClient) -> None:
    put_queue(api)
    ids = [create_job(api, input=i) for i in range(3)]
    assert [fetch(api) for _ in ids] == [{"id": i, "input": n, "attempt": 1} for n, i in enumerate(ids)]


def test_fetch_from_an_empty_queue_is_204_and_changes_nothing(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    put_queue(api)
    with unchanged(client, namespace):
        no_content(api.get("/queue/q/job"))


def test_fetch_from_a_missing_queue_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "nope" in error_of(api.get("/queue/nope/job"), 404)


def test_a_requeued_job_is_fetched_again_as_a_new_attempt(api: TestClient) -> None:
    put_queue(api)
    job_id = create_job(api, input="x")
    assert fetch(api)["attempt"] == 1
    no_content(api.patch(f"/job/{job_id}", json={"status": "cancelled"}))
    no_content(api.patch(f"/job/{job_id}", json={"status": "queued"}))
    assert fetch(api) == {"id": job_id, "input": "x", "attempt": 2}

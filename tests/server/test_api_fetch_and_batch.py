"""Fetch extensions (count, worker, wait) and batch create, over HTTP against a real server."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tests.support.http import app_client, unchanged

QUEUES = ("q",)  # created on the app before each test (the api fixture)


def test_batch_create_makes_every_job_in_one_request(api: TestClient) -> None:
    response = api.post("/queue/q/jobs", json=[{"input": i, "tags": ["b"]} for i in range(5)])
    assert response.status_code == 201
    ids = response.json()
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert api.get("/tag/b").json() == ids
    assert [api.get(f"/job/{i}?fields=input").json()["input"] for i in ids] == list(range(5))


def test_batch_create_honours_unique_keys_within_and_across_batches(api: TestClient) -> None:
    first = api.post("/queue/q/jobs", json=[{"unique_key": "k"}, {"unique_key": "k"}, {}]).json()
    assert first[0] == first[1] != first[2]
    assert api.post("/queue/q/jobs", json=[{"unique_key": "k"}]).json() == [first[0]]


@pytest.mark.parametrize(
    ("body", "names"),
    [([], "list"), ({"input": 1}, "list"), ([{"input": 1}, 5], "job 1"), ([{"retries": "x"}], "retries")],
)
def test_bad_batches_create_nothing(
    api: TestClient, client: redis.Redis, namespace: str, body: object, names: str
) -> None:
    with unchanged(client, namespace):
        response = api.post("/queue/q/jobs", json=body)
        assert response.status_code == 400
        assert names in response.json()["error"]


def test_batch_create_on_a_missing_queue_is_404(api: TestClient) -> None:
    assert api.post("/queue/nope/jobs", json=[{}]).status_code == 404


def test_count_and_worker(api: TestClient) -> None:
    ids = api.post("/queue/q/jobs", json=[{"input": i} for i in range(3)]).json()
    got = api.get("/queue/q/job?count=2&worker=w9").json()
    assert [j["id"] for j in got] == ids[:2]
    assert api.get(f"/job/{ids[0]}?fields=worker").json() == {"worker": "w9"}
    assert api.get("/queue/q/job?count=5").json() == [{"id": ids[2], "input": 2, "attempt": 1}]
    assert api.get("/queue/q/job?count=5").status_code == 204


def test_wait_answers_as_soon_as_a_job_arrives(api: TestClient, redis_url: str, namespace: str) -> None:
    def produce() -> None:
        with app_client(redis_url, namespace) as producer:
            time.sleep(0.3)  # let the fetch start waiting first (the order, not the timing, is tested)
            producer.post("/queue/q/job", json={"input": "late"})

    thread = threading.Thread(target=produce)
    thread.start()
    start = time.monotonic()
    response = api.get("/queue/q/job?wait=20s")
    waited = time.monotonic() - start
    thread.join()
    assert response.status_code == 200
    assert response.json()["input"] == "late"
    assert waited < 10  # answered on arrival, long before the 20 s limit


def test_wait_gives_up_with_204_after_its_duration(api: TestClient) -> None:
    assert api.get("/queue/q/job?wait=0.2").status_code == 204


def test_a_waiting_fetch_does_not_poll_redis(api: TestClient) -> None:
    """Counted by the app's own command histogram, not the server's stats (shared with others)."""
    before = _fetches(api)
    assert api.get("/queue/q/job?wait=1s").status_code == 204
    assert _fetches(api) - before <= 3  # the first try, and at most a retry after the follower started


def _fetches(api: TestClient) -> float:
    for family in text_string_to_metric_families(api.get("/metrics").text):
        for sample in family.samples:
            if (
                sample.name == "jobledger_command_seconds_count"
                and sample.labels.get("command") == "fetch_jobs"
            ):
                return sample.value
    return 0.0


@pytest.mark.parametrize("wait", ["soon", "-1", "1h"])
def test_bad_wait_is_400(api: TestClient, wait: str) -> None:
    response = api.get(f"/queue/q/job?wait={wait}")
    assert response.status_code == 400
    assert "wait" in response.json()["error"]


def test_a_fetch_can_bring_each_jobs_heartbeat_timeout(api: TestClient) -> None:
    api.put("/queue/q", json={"heartbeat_timeout": "1m"})
    own = api.post("/queue/q/job", json={"input": 1, "heartbeat_timeout": "30s"}).json()
    inherited = api.post("/queue/q/job", json={"input": 2}).json()
    got = api.get("/queue/q/job?count=2&fields=heartbeat_timeout").json()
    assert got == [
        {"id": own, "input": 1, "attempt": 1, "heartbeat_timeout": "30s"},
        {"id": inherited, "input": 2, "attempt": 1, "heartbeat_timeout": "1m"},
    ]
    off = api.post("/queue/q/job", json={"heartbeat_timeout": "0s"}).json()
    assert api.get("/queue/q/job?fields=heartbeat_timeout").json() == {
        "id": off, "input": None, "attempt": 1, "heartbeat_timeout": "0s",
    }  # fmt: skip


@pytest.mark.parametrize("fields", ["status", "heartbeat_timeout,input", ""])
def test_a_fetch_adds_no_other_field(
    api: TestClient, client: redis.Redis, namespace: str, fields: str
) -> None:
    api.post("/queue/q/job", json={"input": 1})
    with unchanged(client, namespace):
        response = api.get(f"/queue/q/job?fields={fields}")
    assert response.status_code == 400
    assert "known: heartbeat_timeout" in response.json()["error"]

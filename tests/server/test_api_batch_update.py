"""PATCH /jobs: many jobs' updates in one request, a fetch riding along, against a real server."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from tests.support.http import app_client, put_queue, unchanged
from tests.support.ledger import events

QUEUES = ("q", "other")


def _running(api: TestClient, n: int, queue: str = "q") -> list[dict[str, Any]]:
    assert api.post(f"/queue/{queue}/jobs", json=[{"input": i} for i in range(n)]).status_code == 201
    started = api.get(f"/queue/{queue}/job?count={n}").json()
    assert len(started) == n
    return list(started)


def _statuses(api: TestClient, ids: list[int]) -> list[str]:
    return [api.get(f"/job/{i}/status").json() for i in ids]


def test_updates_go_through_each_as_its_patch_would(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    jobs = _running(api, 3)
    before = len(events(client, namespace))
    body = {
        "updates": [
            {"id": jobs[0]["id"], "attempt": 1, "status": "completed", "output": {"n": 0}},
            {"id": jobs[1]["id"], "attempt": 1, "status": "failed", "error": {"kind": "E", "message": "m"}},
            {"id": jobs[2]["id"], "attempt": 1, "progress": 50, "message": "half"},
        ]
    }
    answer = api.patch("/jobs", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"updates": [{"id": j["id"], "status": 204} for j in jobs]}  # no fetch: no jobs
    assert _statuses(api, [j["id"] for j in jobs]) == ["completed", "failed", "running"]
    assert api.get(f"/job/{jobs[0]['id']}/output").json() == {"n": 0}
    assert api.get(f"/job/{jobs[2]['id']}?fields=progress").json() == {"progress": 50}
    assert [e["type"] for e in events(client, namespace)][before:] == [
        "job_completed",
        "job_failed",
        "job_progressed",
    ]


def test_a_fetch_rides_along_and_takes_the_freed_places(api: TestClient) -> None:
    put_queue(api, "one", max_running=1, heartbeat_timeout="30s")
    assert api.post("/queue/one/jobs", json=[{"input": "a"}, {"input": "b"}]).status_code == 201
    first = api.get("/queue/one/job").json()
    assert api.get("/queue/one/job").status_code == 204  # its one place is taken
    body = {
        "updates": [{"id": first["id"], "attempt": 1, "status": "completed"}],
        "fetch": {"queue": "one", "count": 5, "worker": "w7", "fields": ["heartbeat_timeout"]},
    }
    answer = api.patch("/jobs", json=body).json()
    assert answer["updates"] == [{"id": first["id"], "status": 204}]
    [second] = answer["jobs"]
    assert second == {"id": first["id"] + 1, "input": "b", "attempt": 1, "heartbeat_timeout": "30s"}
    assert api.get(f"/job/{second['id']}?fields=status,worker").json() == {
        "status": "running",
        "worker": "w7",
    }
    assert api.patch("/jobs", json={"fetch": {"queue": "one"}}).json() == {"updates": [], "jobs": []}


def test_each_refusal_is_its_own_and_the_rest_go_through(api: TestClient) -> None:
    jobs = _running(api, 2)
    api.patch(f"/job/{jobs[0]['id']}", json={"status": "completed", "attempt": 1})
    body = {
        "updates": [
            {"id": jobs[0]["id"], "attempt": 1, "status": "failed"},  # ended already
            {"id": 999_999, "status": "completed"},
            {"id": jobs[1]["id"], "attempt": 2, "status": "completed"},  # not its attempt
            {"id": jobs[1]["id"], "attempt": 1, "status": "completed"},
            {"id": jobs[1]["id"], "attempt": 1, "status": "completed"},  # a repeat: changes nothing
        ],
        "fetch": {"queue": "q"},
    }
    answer = api.patch("/jobs", json=body).json()
    statuses = [(u["id"], u["status"]) for u in answer["updates"]]
    assert statuses == [
        (jobs[0]["id"], 409),
        (999_999, 404),
        (jobs[1]["id"], 409),
        (jobs[1]["id"], 204),
        (jobs[1]["id"], 204),
    ]
    assert "not the running attempt" in answer["updates"][0]["error"]
    assert "999999" in answer["updates"][1]["error"]
    assert answer["jobs"] == []
    assert _statuses(api, [j["id"] for j in jobs]) == ["completed", "completed"]


def test_a_refused_fetch_leaves_the_updates_standing(api: TestClient) -> None:
    [job] = _running(api, 1)
    body = {"updates": [{"id": job["id"], "attempt": 1, "status": "completed"}], "fetch": {"queue": "gone"}}
    answer = api.patch("/jobs", json=body)
    assert answer.status_code == 200
    assert answer.json()["updates"] == [{"id": job["id"], "status": 204}]
    assert answer.json()["fetch_error"]["status"] == 404 and "gone" in answer.json()["fetch_error"]["error"]
    assert "jobs" not in answer.json()
    assert _statuses(api, [job["id"]]) == ["completed"]
    alone = api.patch("/jobs", json={"fetch": {"queue": "gone"}}).json()
    assert alone["updates"] == [] and alone["fetch_error"]["status"] == 404


DONE = [{"id": "JOB", "status": "completed"}]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ([], "JSON object"),
        ({}, "give updates, a fetch, or both"),
        ({"updates": []}, "give updates, a fetch, or both"),
        ({"updates": [{"status": "completed"}]}, "updates.0.id"),
        ({"updates": [{"id": 0, "status": "completed"}]}, "updates.0.id"),
        ({"updates": [{"id": "1", "status": "completed"}]}, "updates.0.id"),
        ({"updates": [{"id": "JOB", "status": "done"}]}, "updates.0.status"),
        ({"updates": [{"id": "JOB", "status": "completed", "colour": 1}]}, "updates.0.colour"),
        ({"updates": [{"id": "JOB", "status": "completed", "error": "x"}]}, "error goes with status"),
        ({"updates": [{"id": "JOB", "progress": 101}]}, "updates.0.progress"),
        ({"updates": [{"id": "JOB", "status": "completed"}] * 1001}, "updates"),
        ({"updates": DONE, "fetch": {"queue": "no way"}}, "invalid queue name"),
        ({"updates": DONE, "fetch": {"queue": "q", "count": 0}}, "fetch.count"),
        ({"updates": DONE, "fetch": {"queue": "q", "fields": ["input"]}}, "fetch.fields.0"),
        ({"updates": DONE, "fetch": {"queue": "q", "wait": "1s"}}, "fetch.wait"),
        ({"updates": DONE, "later": 1}, "later"),
    ],
)  # fmt: skip
def test_bad_input_is_400_and_changes_nothing(
    api: TestClient, client: redis.Redis, namespace: str, body: Any, says: str
) -> None:
    [job] = _running(api, 1)
    assert api.post("/queue/q/job", json={}).status_code == 201  # one a wrong fetch would start
    text = api.build_request("PATCH", "/jobs", json=body).content.decode().replace('"JOB"', str(job["id"]))
    with unchanged(client, namespace):
        answer = api.patch("/jobs", content=text, headers={"content-type": "application/json"})
        assert answer.status_code == 400, answer.text
        assert says in answer.json()["error"]


def test_jobs_of_every_partition_in_one_request(redis_url: str, namespace: str) -> None:
    """On a ledger split in partitions the updates run as one call per partition, the fetch in its
    queue's; the answer keeps the request's order."""
    with app_client(redis_url, namespace, partitions=4) as api:
        queues = [f"p{i}" for i in range(8)]
        jobs = []
        for queue in queues:
            put_queue(api, queue)
            jobs += _running(api, 2, queue)
        assert api.post("/queue/p0/job", json={"input": "next"}).status_code == 201
        body = {
            "updates": [{"id": j["id"], "attempt": 1, "status": "completed"} for j in reversed(jobs)],
            "fetch": {"queue": "p0", "count": 3},
        }
        answer = api.patch("/jobs", json=body).json()
        assert answer["updates"] == [{"id": j["id"], "status": 204} for j in reversed(jobs)]
        assert [j["input"] for j in answer["jobs"]] == ["next"]
        assert set(_statuses(api, [j["id"] for j in jobs])) == {"completed"}

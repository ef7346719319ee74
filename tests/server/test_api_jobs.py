"""Ocypod's ``/job``, ``/tag``, ``/info`` and ``/health`` endpoints over HTTP, and the fencing surface
(``?attempt=N`` / ``{"attempt": N}``): every status code the API documents, bodies checked."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from starlette.testclient import TestClient

from jobledger import __version__
from jobledger.ledger.runner import Ledger
from jobledger.projections.views import JOB_FIELDS
from tests.support.http import (
    JOB_STATUSES,
    RFC3339,
    app_client,
    create_job,
    error_of,
    fetch,
    job_field,
    no_content,
    put_queue,
    tick_at,
    unchanged,
)

QUEUES = ("q",)  # created on the app before each test (the api fixture)
JSON = {"content-type": "application/json"}


@pytest.fixture
def running(api: TestClient) -> int:
    """A job on queue ``q``, fetched: running as attempt 1."""
    job_id = create_job(api, input={"x": 1})
    assert fetch(api) == {"id": job_id, "input": {"x": 1}, "attempt": 1}
    return job_id


# GET /job/{id}


def test_get_job_shows_every_field(api: TestClient) -> None:
    job_id = create_job(api, input=[1, "two"], tags=["t1", "t2"], retries=2, retry_delays=["10s"])
    response = api.get(f"/job/{job_id}")
    assert response.status_code == 200
    job = response.json()
    assert tuple(job) == JOB_FIELDS
    assert RFC3339.match(job.pop("created_at"))
    assert job == {
        "id": job_id, "queue": "q", "status": "queued", "tags": ["t1", "t2"], "started_at": None,
        "ended_at": None, "last_heartbeat": None, "input": [1, "two"], "output": None, "timeout": "5m",
        "heartbeat_timeout": "0s", "expires_after": "5m", "retries": 2, "retries_attempted": 0,
        "retry_delays": ["10s"], "ended": False, "attempt": 0, "worker": None,
        "priority": 0, "run_at": None, "retry_at": None, "unique_key": None, "quota_key": None,
        "progress": None, "message": None, "errors": [], "max_queued_time": "0s", "retry_backoff": None,
        "retry_on": [], "no_retry_on": [], "launcher": None, "files": [], "traceparent": None,
        "results": [],
    }  # fmt: skip


def test_get_job_fields_answers_only_those_named(api: TestClient, running: int) -> None:
    response = api.get(f"/job/{running}?fields=id,status,started_at,ended_at")
    assert response.status_code == 200
    job = response.json()
    assert list(job) == ["id", "status", "started_at", "ended_at"]
    assert job["id"] == running and job["status"] == "running" and job["ended_at"] is None
    assert RFC3339.match(job["started_at"])


@pytest.mark.parametrize("fields", ["id,nope", "bogus", ""])
def test_get_job_with_an_unknown_field_is_400(api: TestClient, running: int, fields: str) -> None:
    message = error_of(api.get(f"/job/{running}?fields={fields}"), 400)
    assert "unknown job field" in message
    assert (fields.split(",")[-1] or "''") in message


@pytest.mark.parametrize("job_id", ["999", "0", "abc", "-1"])
def test_get_missing_job_is_404(api: TestClient, job_id: str) -> None:
    assert job_id in error_of(api.get(f"/job/{job_id}"), 404)


# PATCH /job/{id}


def test_patch_completes_with_output(api: TestClient, running: int) -> None:
    no_content(api.patch(f"/job/{running}", json={"status": "completed", "output": {"result": 321}}))
    job = api.get(f"/job/{running}").json()
    assert (job["status"], job["output"], job["ended"]) == ("completed", {"result": 321}, True)
    assert RFC3339.match(job["ended_at"])


def test_patch_output_only_keeps_the_job_running(api: TestClient, running: int) -> None:
    no_content(api.patch(f"/job/{running}", json={"output": {"progress": 50}}))
    assert api.get(f"/job/{running}?fields=status,output").json() == {
        "status": "running", "output": {"progress": 50}
    }  # fmt: skip


def test_patch_failed_with_retries_left_waits_to_retry(api: TestClient) -> None:
    job_id = create_job(api, retries=1)
    fetch(api)
    no_content(api.patch(f"/job/{job_id}", json={"status": "failed", "output": "boom"}))
    assert api.get(f"/job/{job_id}?fields=status,ended,output").json() == {
        "status": "failed", "ended": False, "output": "boom"
    }  # fmt: skip


def test_patch_cancels_a_queued_job_and_requeues_it(api: TestClient) -> None:
    job_id = create_job(api)
    no_content(api.patch(f"/job/{job_id}", json={"status": "cancelled"}))
    assert job_field(api, job_id, "status") == "cancelled"
    no_content(api.patch(f"/job/{job_id}", json={"status": "queued"}))
    assert api.get(f"/job/{job_id}?fields=status,ended,ended_at").json() == {
        "status": "queued", "ended": False, "ended_at": None
    }  # fmt: skip
    assert api.get("/queue/q/size").json() == 1


def test_patch_with_invalid_status_is_400(api: TestClient, client: redis.Redis, namespace: str,
                                          running: int) -> None:  # fmt: skip
    with unchanged(client, namespace):
        assert "status" in error_of(api.patch(f"/job/{running}", json={"status": "done"}), 400)


def test_patch_missing_job_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "999" in error_of(api.patch("/job/999", json={"status": "completed"}), 404)


@pytest.mark.parametrize(
    ("body", "action"),
    [({"status": "completed"}, "complete"), ({"status": "failed"}, "fail"),
     ({"status": "queued"}, "requeue"), ({"output": 1}, "output")],
)  # fmt: skip
def test_patch_a_transition_the_table_does_not_list_is_409(
    api: TestClient, client: redis.Redis, namespace: str, body: dict[str, object], action: str
) -> None:
    job_id = create_job(api)  # queued: cannot complete, fail, requeue, or take output
    with unchanged(client, namespace):
        message = error_of(api.patch(f"/job/{job_id}", json=body), 409)
    assert "queued" in message and action in message


def test_patch_an_ended_job_is_409(api: TestClient, client: redis.Redis, namespace: str,
                                   running: int) -> None:  # fmt: skip
    no_content(api.patch(f"/job/{running}", json={"status": "completed"}))
    with unchanged(client, namespace):
        for status in ("completed", "failed", "cancelled"):
            assert "completed" in error_of(api.patch(f"/job/{running}", json={"status": status}), 409)


# DELETE /job/{id}


def test_delete_job_removes_it_and_its_tags(api: TestClient) -> None:
    job_id = create_job(api, tags=["gone"])
    no_content(api.delete(f"/job/{job_id}"))
    error_of(api.get(f"/job/{job_id}"), 404)
    assert api.get("/tag/gone").json() == []
    assert api.get("/queue/q/size").json() == 0


def test_delete_missing_job_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "999" in error_of(api.delete("/job/999"), 404)


# PUT /job/{id}/heartbeat


def test_heartbeat_sets_last_heartbeat(api: TestClient, running: int) -> None:
    assert job_field(api, running, "last_heartbeat") is None
    no_content(api.put(f"/job/{running}/heartbeat"))
    assert RFC3339.match(job_field(api, running, "last_heartbeat"))


def test_heartbeat_of_missing_job_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "999" in error_of(api.put("/job/999/heartbeat"), 404)


def test_heartbeat_of_a_job_not_running_is_409(api: TestClient, client: redis.Redis, namespace: str) -> None:
    job_id = create_job(api)
    with unchanged(client, namespace):
        assert "queued" in error_of(api.put(f"/job/{job_id}/heartbeat"), 409)


# GET / PUT /job/{id}/output


def test_output_is_null_then_what_was_put(api: TestClient, running: int) -> None:
    response = api.get(f"/job/{running}/output")
    assert response.status_code == 200
    assert response.json() is None
    no_content(api.put(f"/job/{running}/output", json=[1, 2, 3]))
    assert api.get(f"/job/{running}/output").json() == [1, 2, 3]
    no_content(api.put(f"/job/{running}/output", json={"a": 1, "b": [2, 3, 4]}))
    response = api.get(f"/job/{running}/output")
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"a": 1, "b": [2, 3, 4]}


def test_put_output_that_is_not_json_is_400(api: TestClient, client: redis.Redis, namespace: str,
                                            running: int) -> None:  # fmt: skip
    with unchanged(client, namespace):
        assert "json" in error_of(api.put(f"/job/{running}/output", content=b"{nope", headers=JSON), 400)
        assert "empty" in error_of(api.put(f"/job/{running}/output", content=b"", headers=JSON), 400)


def test_output_of_missing_job_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "999" in error_of(api.get("/job/999/output"), 404)
        assert "999" in error_of(api.put("/job/999/output", json=1), 404)


def test_put_output_of_an_ended_job_is_409(api: TestClient, client: redis.Redis, namespace: str,
                                           running: int) -> None:  # fmt: skip
    no_content(api.patch(f"/job/{running}", json={"status": "completed", "output": "final"}))
    with unchanged(client, namespace):
        assert "completed" in error_of(api.put(f"/job/{running}/output", json="late"), 409)
    assert api.get(f"/job/{running}/output").json() == "final"


# GET /tag/{tag}


def test_tag_lists_ids_of_tagged_jobs(api: TestClient) -> None:
    first = create_job(api, tags=["user3", "batch"])
    create_job(api, tags=["other"])
    third = create_job(api, tags=["user3"])
    response = api.get("/tag/user3")
    assert response.status_code == 200
    assert response.json() == [first, third]
    assert api.get("/tag/nobody").json() == []


def test_tag_too_long_is_400(api: TestClient) -> None:
    assert "tag" in error_of(api.get("/tag/" + "t" * 256), 400)


# GET /info, /info/version, /health


def test_info_counts_jobs_by_queue_and_status_and_the_six_statistics(api: TestClient, ledger: Ledger) -> None:
    put_queue(api, "other", timeout="10s")
    create_job(api, "other")
    fetch(api, "other")
    assert len(tick_at(ledger, timedelta(seconds=11))["timeouts"]) == 1
    retried = create_job(api, retries=1)
    fetch(api)
    no_content(api.patch(f"/job/{retried}", json={"status": "failed"}))
    # no delay: due at once, at the ledger's time (11 s ahead since the tick above)
    assert tick_at(ledger, timedelta(seconds=11))["retries"] == [retried]
    fetch(api)
    no_content(api.patch(f"/job/{retried}", json={"status": "failed"}))  # no retry left: ended
    done = create_job(api)
    fetch(api)
    no_content(api.patch(f"/job/{done}", json={"status": "completed"}))
    no_content(api.patch(f"/job/{create_job(api)}", json={"status": "cancelled"}))
    create_job(api)
    create_job(api)
    fetch(api)
    response = api.get("/info")
    assert response.status_code == 200
    counts = dict.fromkeys(JOB_STATUSES, 0)
    assert response.json() == {
        "queues": {
            "other": {**counts, "timed_out": 1},
            "q": {**counts, "queued": 1, "running": 1, "failed": 1, "completed": 1, "cancelled": 1},
        },
        "statistics": {
            "total_jobs_created": 6, "total_jobs_completed": 1, "total_jobs_retried": 1,
            "total_jobs_failed": 2, "total_jobs_timed_out": 1, "total_jobs_cancelled": 1,
        },
    }  # fmt: skip


def test_info_of_an_empty_ledger(redis_url: str, namespace: str) -> None:
    with app_client(redis_url, namespace) as api:
        response = api.get("/info")
    assert response.status_code == 200
    assert response.json() == {"queues": {}, "statistics": {
        "total_jobs_created": 0, "total_jobs_completed": 0, "total_jobs_retried": 0,
        "total_jobs_failed": 0, "total_jobs_timed_out": 0, "total_jobs_cancelled": 0,
    }}  # fmt: skip


def test_version_is_the_package_version_as_a_json_string(api: TestClient) -> None:
    response = api.get("/info/version")
    assert response.status_code == 200
    assert response.json() == __version__
    assert response.text == f'"{__version__}"'


def test_health_is_healthy(api: TestClient) -> None:
    response = api.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "healthy"}


# Fencing: an update that names a stale attempt is refused with 409 and changes nothing


@pytest.fixture
def second_attempt(api: TestClient, ledger: Ledger) -> int:
    """A job that timed out as attempt 1 and was handed out again: attempt 2 is running."""
    job_id = create_job(api, timeout="10s", retries=1)
    assert fetch(api)["attempt"] == 1
    ticked = tick_at(ledger, timedelta(seconds=11))
    assert ticked["timeouts"] == [job_id] and ticked["retries"] == [job_id]
    assert fetch(api) == {"id": job_id, "input": None, "attempt": 2}
    return job_id


@pytest.mark.parametrize(
    ("method", "suffix", "query", "body"),
    [
        ("PATCH", "", "?attempt=1", {"status": "completed"}),
        ("PATCH", "", "", {"status": "completed", "attempt": 1}),
        ("PATCH", "", "", {"status": "failed", "attempt": 1}),
        ("PATCH", "", "", {"status": "cancelled", "attempt": 1}),
        ("PATCH", "", "?attempt=1", {"output": "stale"}),
        ("PATCH", "", "?attempt=3", {"status": "completed"}),
        ("PUT", "/heartbeat", "?attempt=1", None),
        ("PUT", "/heartbeat", "", {"attempt": 1}),
        ("PUT", "/output", "?attempt=1", "stale"),
    ],
)
def test_a_stale_attempt_is_409_and_changes_nothing(
    api: TestClient, client: redis.Redis, namespace: str, second_attempt: int,
    method: str, suffix: str, query: str, body: object,
) -> None:  # fmt: skip
    url = f"/job/{second_attempt}{suffix}{query}"
    with unchanged(client, namespace):
        message = error_of(api.request(method, url, json=body), 409)
    assert "not the running attempt" in message
    assert job_field(api, second_attempt, "status") == "running"


def test_the_running_attempt_is_accepted(api: TestClient, second_attempt: int) -> None:
    no_content(api.put(f"/job/{second_attempt}/heartbeat", json={"attempt": 2}))
    no_content(api.put(f"/job/{second_attempt}/output?attempt=2", json="partial"))
    no_content(api.patch(f"/job/{second_attempt}?attempt=2", json={"status": "completed", "output": "ok"}))
    assert api.get(f"/job/{second_attempt}?fields=status,output,attempt").json() == {
        "status": "completed", "output": "ok", "attempt": 2
    }  # fmt: skip


def test_the_body_attempt_wins_over_the_query(api: TestClient, client: redis.Redis, namespace: str,
                                              second_attempt: int) -> None:  # fmt: skip
    url = f"/job/{second_attempt}"
    with unchanged(client, namespace):
        error_of(api.patch(f"{url}?attempt=2", json={"status": "completed", "attempt": 1}), 409)
    no_content(api.patch(f"{url}?attempt=1", json={"status": "completed", "attempt": 2}))


def test_an_attempt_of_an_ended_job_is_409(api: TestClient, client: redis.Redis, namespace: str,
                                           running: int) -> None:  # fmt: skip
    no_content(api.patch(f"/job/{running}", json={"status": "completed"}))
    with unchanged(client, namespace):
        error_of(api.put(f"/job/{running}/heartbeat?attempt=1"), 409)
        error_of(api.patch(f"/job/{running}", json={"status": "cancelled", "attempt": 1}), 409)

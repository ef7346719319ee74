"""Ocypod's HTTP behaviour where jobledger first differed: ``GET /job/{id}/status``; PATCH parsing
every status and answering 409 for a transition the table does not allow (400 only for a word that
is no status); a client's running -> timed_out; cancelling a failed job with no retry left; the job
ids of a deleted queue; ``retry_delays`` null; and body keys it does not know, ignored and named
(``x-jobledger-ignored-keys`` and a warning), or refused by a strict server."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.server.app import create_app
from tests.support.http import (
    BASE_URL,
    app_client,
    create_job,
    error_of,
    fetch,
    make_config,
    no_content,
    put_queue,
    unchanged,
)

QUEUES = ("q",)  # created on the app before each test (the api fixture)


def patch(api: TestClient, job_id: int, **body: Any) -> Any:
    return api.patch(f"/job/{job_id}", json=body)


def running_job(api: TestClient, **options: Any) -> int:
    job_id = create_job(api, **options)
    assert fetch(api)["id"] == job_id
    return job_id


# --- GET /job/{id}/status -----------------------------------------------------------------------


def test_status_route_answers_a_json_string(api: TestClient) -> None:
    job_id = create_job(api)
    response = api.get(f"/job/{job_id}/status")
    assert (response.status_code, response.headers["content-type"]) == (200, "application/json")
    assert response.content == b'"queued"'
    fetch(api)
    assert api.get(f"/job/{job_id}/status").json() == "running"


@pytest.mark.parametrize("job_id", ["99", "0", "x"])
def test_status_of_a_missing_job_is_404(api: TestClient, job_id: str) -> None:
    assert "does not exist" in error_of(api.get(f"/job/{job_id}/status"), 404)


# --- PATCH: every status parses; the table answers ----------------------------------------------


@pytest.mark.parametrize(
    ("state", "status", "words"),
    [
        ("queued", "running", ("job {id} is queued", "only a worker's fetch starts a job")),
        ("queued", "timed_out", ("only a running job times out",)),
        ("queued", "completed", ("only a running job completes",)),
        ("queued", "queued", ("cannot requeue",)),
        ("running", "running", ("job {id} is running", "set it running")),
        ("running", "queued", ("cannot requeue",)),
        ("running", "scheduled", ("cannot schedule",)),
        ("completed", "cancelled", ("job {id} is completed", "cannot cancel")),
        ("completed", "failed", ("cannot fail",)),
        ("completed", "timed_out", ("cannot time it out",)),
        ("completed", "queued", ("cannot requeue",)),
    ],
)
def test_a_transition_the_table_does_not_allow_is_409_with_the_reason(
    api: TestClient, client: redis.Redis, namespace: str, state: str, status: str, words: tuple[str, ...]
) -> None:
    job_id = create_job(api)
    if state != "queued":
        fetch(api)
    if state == "completed":
        no_content(patch(api, job_id, status="completed"))
    with unchanged(client, namespace):
        message = error_of(patch(api, job_id, status=status), 409)
    for word in words:
        assert word.format(id=job_id) in message, (word, message)


@pytest.mark.parametrize("status", ["done", "RUNNING", "timedout", ""])
def test_a_word_that_is_no_status_is_400(
    api: TestClient, client: redis.Redis, namespace: str, status: str
) -> None:
    job_id = running_job(api)
    with unchanged(client, namespace):
        assert "status" in error_of(patch(api, job_id, status=status), 400)


def test_a_null_output_sets_nothing_as_in_ocypod(api: TestClient) -> None:
    """Ocypod's clients send the null of an unset field: ``{"status": "cancelled", "output": null}``
    cancels a queued job (it takes no output), where an output would be refused."""
    job_id = create_job(api)
    no_content(patch(api, job_id, status="cancelled", output=None))
    assert "only a running job takes output" in error_of(
        patch(api, create_job(api), status="cancelled", output=1), 409
    )


def test_a_client_times_a_running_job_out_and_its_retries_apply(api: TestClient) -> None:
    job_id = running_job(api, retries=1, retry_delays=["1h"])
    no_content(patch(api, job_id, status="timed_out"))
    job = api.get(f"/job/{job_id}").json()
    assert (job["status"], job["ended"], job["errors"][0]["kind"]) == ("timed_out", False, "timeout")
    assert job["retry_at"] is not None
    assert api.get("/info").json()["statistics"]["total_jobs_timed_out"] == 1


def test_a_failed_job_with_no_retry_left_is_cancelled(api: TestClient) -> None:
    job_id = running_job(api)
    no_content(patch(api, job_id, status="failed"))
    assert api.get(f"/job/{job_id}?fields=ended").json() == {"ended": True}
    no_content(patch(api, job_id, status="cancelled"))
    assert api.get(f"/job/{job_id}/status").json() == "cancelled"


def test_a_manual_requeue_clears_the_run_and_counts(api: TestClient) -> None:
    job_id = running_job(api)
    no_content(api.put(f"/job/{job_id}/heartbeat"))
    no_content(patch(api, job_id, status="failed", output={"half": 1}))
    no_content(patch(api, job_id, status="queued"))
    fields = "status,started_at,ended_at,last_heartbeat,output"
    assert api.get(f"/job/{job_id}?fields={fields}").json() == {
        "status": "queued", "started_at": None, "ended_at": None, "last_heartbeat": None, "output": None,
    }  # fmt: skip
    assert api.get("/info").json()["statistics"]["total_jobs_retried"] == 1


# --- the job ids of a deleted queue -------------------------------------------------------------


def test_a_deleted_queue_answers_with_the_jobs_it_left_behind(api: TestClient) -> None:
    running = running_job(api)
    failed = running_job(api)
    no_content(patch(api, failed, status="failed"))
    completed = running_job(api)
    no_content(patch(api, completed, status="completed"))
    create_job(api)  # queued: deleted with the queue
    no_content(api.delete("/queue/q"))
    response = api.get("/queue/q/job_ids")
    assert response.status_code == 200
    assert response.json() == {
        "queued": [], "running": [running], "failed": [failed], "completed": [completed],
        "cancelled": [], "timed_out": [], "scheduled": [],
    }  # fmt: skip
    for job_id in (running, failed, completed):
        no_content(api.delete(f"/job/{job_id}"))
    assert "does not exist" in error_of(api.get("/queue/q/job_ids"), 404)  # nothing left of it


def test_job_ids_of_a_queue_that_never_was_is_404(api: TestClient) -> None:
    assert "does not exist" in error_of(api.get("/queue/never/job_ids"), 404)


# --- Ocypod's nulls -------------------------------------------------------------------------------


def test_a_job_without_retry_delays_reads_null(api: TestClient) -> None:
    job_id = create_job(api)
    fields = "tags,input,output,retry_delays"
    nulls = {"tags": None, "input": None, "output": None, "retry_delays": None}
    assert api.get(f"/job/{job_id}?fields={fields}").json() == nulls
    given = create_job(api, retry_delays=["1s", "2m 15s"])
    assert api.get(f"/job/{given}?fields=retry_delays").json() == {"retry_delays": ["1s", "2m15s"]}


# --- keys Ocypod does not know ------------------------------------------------------------------

IGNORED: list[tuple[str, str, Any, str, int]] = [
    ("PUT", "/queue/q", {"timeout": "1m", "timeoutt": "1s"}, "timeoutt", 204),
    ("POST", "/queue/q/job", {"inputs": 1, "retry_backoff": {"base": "1s", "step": 2}},
     "inputs, retry_backoff.step", 201),
    ("POST", "/queue/q/jobs", [{}, {"colour": "red"}], "1.colour", 201),
    ("PATCH", "/job/{running}", {"status": "failed", "error": {"kind": "x", "trace": "t"}, "state": "?"},
     "error.trace, state", 204),
    ("PUT", "/job/{running}/heartbeat", {"beat": 1}, "beat", 204),
]  # fmt: skip


@pytest.mark.parametrize(("method", "url", "body", "named", "code"), IGNORED)
def test_unknown_keys_are_ignored_and_named(
    api: TestClient, caplog: pytest.LogCaptureFixture, method: str, url: str, body: Any, named: str, code: int
) -> None:
    url = url.format(running=running_job(api)) if "{running}" in url else url
    with caplog.at_level("WARNING", logger="jobledger.api"):
        response = api.request(method, url, json=body)
    assert response.status_code == code, response.text
    assert response.headers["x-jobledger-ignored-keys"] == named
    assert f"ignored unknown field(s) {named}" in caplog.text


def test_keys_that_are_not_plain_are_named_as_json_strings(api: TestClient) -> None:
    body = {"": 1, "a b": 2, "é\n": 3, **{f"k{i}": i for i in range(25)}}
    response = api.put("/queue/q", json=body)
    assert response.status_code == 204
    named = response.headers["x-jobledger-ignored-keys"]
    assert named.startswith('"", "a b", "\\u00e9\\n", k0, k1, ')
    assert named.endswith(", k16 and 8 more")


def test_no_header_when_nothing_was_ignored(api: TestClient) -> None:
    assert "x-jobledger-ignored-keys" not in api.put("/queue/q", json={"timeout": "1m"}).headers


def test_the_header_rides_on_an_error_answer_too(api: TestClient) -> None:
    response = api.patch("/job/99", json={"status": "completed", "note": "x"})
    assert (response.status_code, response.headers["x-jobledger-ignored-keys"]) == (404, "note")


@pytest.mark.parametrize(("method", "url", "body", "named", "code"), IGNORED)
def test_a_strict_server_refuses_unknown_keys(
    redis_url: str,
    client: redis.Redis,
    namespace: str,
    method: str,
    url: str,
    body: Any,
    named: str,
    code: int,
) -> None:
    with app_client(redis_url, namespace, strict=True) as strict:
        put_queue(strict, "q")
        url = url.format(running=running_job(strict)) if "{running}" in url else url
        with unchanged(client, namespace):
            message = error_of(strict.request(method, url, json=body), 400)
    assert f"unknown field(s) {named}" in message
    assert "strict" in message


# --- a server that runs no checks (serve --no-scheduler) ----------------------------------------


@pytest.mark.parametrize("scheduler", [True, False])
def test_scheduler_setting_decides_whether_the_server_runs_the_checks(
    redis_url: str, client: redis.Redis, namespace: str, scheduler: bool
) -> None:
    """A job past its timeout when the server starts: timed out within a second by a server that
    runs the checks, still running after 1.5 s on one that leaves them to others."""
    with app_client(redis_url, namespace) as setup:
        put_queue(setup, "q")
        job_id = create_job(setup, timeout="1ms")
        fetch(setup)
    time.sleep(0.01)
    config = make_config(namespace, scheduler=scheduler)
    with TestClient(create_app(config, redis_url), base_url=BASE_URL) as served:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and served.get(f"/job/{job_id}/status").json() == "running":
            time.sleep(0.05)
        assert served.get(f"/job/{job_id}/status").json() == ("timed_out" if scheduler else "running")

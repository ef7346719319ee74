"""jobledger's extensions over HTTP: the new job options on create (201, or 200 with the
holder's id for a held unique_key), the job fields as the API writes them, PATCH with progress,
message and error, pause / resume, and a 400 naming the field for each bad new field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from tests.support.http import (
    RFC3339,
    create_job,
    error_of,
    fetch,
    job_field,
    no_content,
    put_queue,
    state_of,
    tick_at,
    unchanged,
)
from tests.support.ledger import ID_STEP

FAR = "2099-06-01T12:00:00+02:00"  # a run_at in the future, with an offset
FAR_UTC = "2099-06-01T10:00:00.000000Z"


QUEUES = ("q",)  # created on the app before each test (the api fixture)


@pytest.fixture
def running(api: TestClient) -> int:
    job_id = create_job(api, input="x", retries=2, retry_delays=["1h"])
    assert fetch(api)["id"] == job_id
    return job_id


def get_job(api: TestClient, job_id: int) -> dict[str, Any]:
    response = api.get(f"/job/{job_id}")
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()
    return job


def history_types(api: TestClient, job_id: int) -> list[str]:
    return [item["type"] for item in api.get(f"/job/{job_id}/history").json()]


# --- create with the new options ----------------------------------------------------------------


def test_create_with_every_new_option_shows_them_formatted(api: TestClient) -> None:
    body = {
        "input": {"n": 1}, "priority": 7, "run_at": FAR, "unique_key": "u-1", "quota_key": "user-9",
        "max_queued_time": 90, "retry_on": ["io"], "no_retry_on": ["fatal", "auth"],
        "retry_backoff": {"base": "10s", "factor": 3, "max": "1h30m"},
    }  # fmt: skip
    response = api.post("/queue/q/job", json=body)
    assert response.status_code == 201, response.text
    job_id = response.json()
    assert response.headers["location"] == f"/job/{job_id}"
    job = get_job(api, job_id)
    shown = {name: job[name] for name in (*body, "status", "retry_at", "progress", "message", "errors")}
    assert shown == {
        "input": {"n": 1}, "priority": 7, "run_at": FAR_UTC, "unique_key": "u-1", "quota_key": "user-9",
        "max_queued_time": "1m30s", "retry_on": ["io"], "no_retry_on": ["fatal", "auth"],
        "retry_backoff": {"base": "10s", "factor": 3, "max": "1h30m"},
        "status": "scheduled", "retry_at": None, "progress": None, "message": None, "errors": [],
    }  # fmt: skip
    assert api.get("/queue/q/job_ids").json()["scheduled"] == [job_id]
    assert api.get("/queue/q/job").status_code == 204


def test_a_delay_schedules_the_job_and_the_scheduler_releases_it(api: TestClient, ledger: Ledger) -> None:
    before = datetime.now(UTC) - timedelta(milliseconds=1)  # the ledger keeps milliseconds
    job_id = create_job(api, delay="2h")
    after = datetime.now(UTC)
    job = get_job(api, job_id)
    assert job["status"] == "scheduled" and RFC3339.match(job["run_at"])
    assert before + timedelta(hours=2) <= datetime.fromisoformat(job["run_at"]) <= after + timedelta(hours=2)
    assert tick_at(ledger, timedelta(hours=1))["releases"] == []
    assert tick_at(ledger, timedelta(hours=2, seconds=1))["releases"] == [job_id]
    assert history_types(api, job_id) == ["job_created", "job_released"]
    assert fetch(api)["id"] == job_id


def test_a_past_run_at_queues_the_job_at_once(api: TestClient) -> None:
    job_id = create_job(api, run_at="2001-01-01T00:00:00Z")
    assert job_field(api, job_id, "status") == "queued"
    assert fetch(api)["id"] == job_id


def test_a_held_unique_key_answers_200_with_the_holders_id(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    first = api.post("/queue/q/job", json={"unique_key": "k", "input": 1})
    assert first.status_code == 201
    job_id = first.json()
    with unchanged(client, namespace):
        again = api.post("/queue/q/job", json={"unique_key": "k", "input": 2})
    assert (again.status_code, again.json(), again.headers["location"]) == (200, job_id, f"/job/{job_id}")
    put_queue(api, "other")
    assert api.post("/queue/other/job", json={"unique_key": "k"}).status_code == 201
    fetch(api)
    no_content(api.patch(f"/job/{job_id}", json={"status": "completed"}))
    freed = api.post("/queue/q/job", json={"unique_key": "k"})
    assert freed.status_code == 201 and freed.json() != job_id


def test_a_job_takes_the_queue_defaults(api: TestClient) -> None:
    put_queue(api, "d", priority=30, max_queued_time="1m", retry_on=["io"], retry_backoff={"base": "2s"})
    job = get_job(api, create_job(api, "d"))
    shown = {
        name: job[name]
        for name in ("priority", "max_queued_time", "retry_on", "no_retry_on", "retry_backoff")
    }
    assert shown == {
        "priority": 30, "max_queued_time": "1m", "retry_on": ["io"], "no_retry_on": [],
        "retry_backoff": {"base": "2s", "factor": 2, "max": "1h"},
    }  # fmt: skip


# --- PATCH: progress, message, error ------------------------------------------------------------


def test_patch_progress_and_message(api: TestClient, running: int) -> None:
    no_content(api.patch(f"/job/{running}", json={"progress": 25, "message": "downloading"}))
    no_content(api.patch(f"/job/{running}", json={"progress": 75}))
    response = api.get(f"/job/{running}?fields=progress,message,status")
    assert response.json() == {"progress": 75, "message": "downloading", "status": "running"}
    items = [i for i in api.get(f"/job/{running}/history").json() if i["type"] == "job_progressed"]
    assert [i["data"] for i in items] == [{"progress": 25, "message": "downloading"}, {"progress": 75}]
    assert all(RFC3339.match(i["at"]) and i["job"] == running and i["queue"] == "q" for i in items)


def test_patch_progress_of_a_queued_job_is_409(api: TestClient, client: redis.Redis, namespace: str) -> None:
    job_id = create_job(api)
    with unchanged(client, namespace):
        assert "queued" in error_of(api.patch(f"/job/{job_id}", json={"progress": 5}), 409)


@pytest.mark.parametrize(
    ("reported", "kind", "message"),
    [
        ("disk full", "error", "disk full"),
        ({"kind": "IOError", "message": "no route"}, "IOError", "no route"),
    ],
)
def test_patch_failed_with_an_error_records_it(
    api: TestClient, running: int, reported: Any, kind: str, message: str
) -> None:
    no_content(api.patch(f"/job/{running}", json={"status": "failed", "error": reported}))
    job = get_job(api, running)
    assert (job["status"], job["ended"]) == ("failed", False)
    assert RFC3339.match(job["retry_at"])
    (recorded,) = job["errors"]
    assert RFC3339.match(recorded.pop("at"))
    assert recorded == {"attempt": 1, "kind": kind, "message": message}
    failed = api.get(f"/job/{running}/history").json()[-1]
    assert (failed["type"], failed["data"]["error"]) == ("job_failed", {"kind": kind, "message": message})


def test_a_kind_in_no_retry_on_ends_the_job_over_http(api: TestClient) -> None:
    job_id = create_job(api, retries=3, no_retry_on=["fatal"])
    fetch(api)
    no_content(api.patch(f"/job/{job_id}", json={"status": "failed", "error": {"kind": "fatal"}}))
    assert api.get(f"/job/{job_id}?fields=status,ended,retry_at").json() == {
        "status": "failed", "ended": True, "retry_at": None
    }  # fmt: skip


# --- pause and resume ---------------------------------------------------------------------------


def test_pause_and_resume(api: TestClient, client: redis.Redis, namespace: str) -> None:
    job_id = create_job(api)
    before = state_of(client, namespace).events
    no_content(api.put("/queue/q/pause"))
    no_content(api.put("/queue/q/pause"))  # already paused: 204, nothing appended
    assert state_of(client, namespace).events == before + 1
    assert api.get("/queue/q").json()["paused"] is True
    assert create_job(api) == job_id + ID_STEP  # still takes jobs
    assert api.get("/queue/q/job").status_code == 204
    assert api.get("/queue/q/job?count=3").status_code == 204
    no_content(api.put("/queue/q/resume"))
    no_content(api.put("/queue/q/resume"))
    assert state_of(client, namespace).events == before + 3  # paused, created, resumed
    assert api.get("/queue/q").json()["paused"] is False
    assert [j["id"] for j in api.get("/queue/q/job?count=3").json()] == [job_id, job_id + ID_STEP]
    types = [e["type"] for e in api.get("/events", params={"queue": "q"}).json()["events"]]
    assert [t for t in types if t.startswith("queue_")] == ["queue_created", "queue_paused", "queue_resumed"]


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_pause_or_resume_a_missing_queue_is_404(
    api: TestClient, client: redis.Redis, namespace: str, action: str
) -> None:
    with unchanged(client, namespace):
        assert "nope" in error_of(api.put(f"/queue/nope/{action}"), 404)
        assert "invalid queue name" in error_of(api.put(f"/queue/b%20d/{action}"), 400)


# --- bad input for each new field: 400 naming it, nothing appended -----------------------------

BAD_FIELDS: list[tuple[str, str, dict[str, Any], tuple[str, ...]]] = [
    ("POST", "/queue/q/job", {"priority": 101}, ("priority", "less than or equal to 100")),
    ("POST", "/queue/q/job", {"priority": -1}, ("priority", "greater than or equal to 0")),
    ("POST", "/queue/q/job", {"priority": "1"}, ("priority", "integer")),
    ("POST", "/queue/q/job", {"priority": 1.5}, ("priority", "integer")),
    ("POST", "/queue/q/job", {"delay": "soon"}, ("delay", "'soon' is not a duration")),
    ("POST", "/queue/q/job", {"delay": -5}, ("delay", "negative")),
    ("POST", "/queue/q/job", {"run_at": "tomorrow"}, ("run_at", "'tomorrow' is not an rfc 3339 time")),
    ("POST", "/queue/q/job", {"run_at": 4102444800}, ("run_at", "rfc 3339")),
    ("POST", "/queue/q/job", {"run_at": FAR, "delay": "1s"}, ("run_at or delay",)),
    (
        "POST",
        "/queue/q/job",
        {"retry_backoff": {"base": "x"}},
        ("retry_backoff.base", "'x' is not a duration"),
    ),
    ("POST", "/queue/q/job", {"retry_backoff": {}}, ("retry_backoff.base", "required")),
    ("POST", "/queue/q/job", {"retry_backoff": {"base": "1s", "factor": 0.5}}, ("retry_backoff.factor",)),
    ("POST", "/queue/q/job", {"retry_backoff": "1s"}, ("retry_backoff",)),
    ("POST", "/queue/q/job", {"unique_key": ""}, ("unique_key", "at least 1 character")),
    ("POST", "/queue/q/job", {"unique_key": 5}, ("unique_key", "string")),
    ("POST", "/queue/q/job", {"quota_key": "x" * 256}, ("quota_key", "at most 255 characters")),
    ("POST", "/queue/q/job", {"max_queued_time": "later"}, ("max_queued_time", "not a duration")),
    ("POST", "/queue/q/job", {"retry_on": "io"}, ("retry_on", "list")),
    ("POST", "/queue/q/job", {"no_retry_on": [""]}, ("no_retry_on.0", "at least 1 character")),
    ("PUT", "/queue/q", {"priority": 101}, ("priority", "less than or equal to 100")),
    ("PUT", "/queue/q", {"paused": "yes"}, ("paused", "boolean")),
    ("PUT", "/queue/q", {"max_queued_time": True}, ("max_queued_time", "boolean")),
    ("PUT", "/queue/q", {"retry_backoff": {"base": "x"}}, ("retry_backoff.base", "'x' is not a duration")),
    ("PUT", "/queue/q", {"retry_on": [1]}, ("retry_on.0", "string")),
    ("PATCH", "/job/{running}", {"status": "completed", "error": "x"}, ("error", "'failed' or 'timed_out'")),
    ("PATCH", "/job/{running}", {"error": "x"}, ("error", "'failed' or 'timed_out'")),
    ("PATCH", "/job/{running}", {"progress": -1}, ("progress", "greater than or equal to 0")),
    ("PATCH", "/job/{running}", {"progress": 101}, ("progress", "less than or equal to 100")),
    ("PATCH", "/job/{running}", {"progress": "50"}, ("progress", "integer")),
    ("PATCH", "/job/{running}", {"message": 5}, ("message", "string")),
    ("PATCH", "/job/{running}", {"message": "m" * 1001}, ("message", "at most 1000 characters")),
    ("PATCH", "/job/{running}", {"status": "failed", "error": {"kind": ""}}, ("error.kind", "at least 1")),
    ("PATCH", "/job/{running}", {"status": "failed", "error": 5}, ("error",)),
]


@pytest.mark.parametrize(("method", "url", "body", "words"), BAD_FIELDS)
def test_a_bad_new_field_is_400_naming_it(
    api: TestClient, client: redis.Redis, namespace: str, running: int,
    method: str, url: str, body: dict[str, Any], words: tuple[str, ...],
) -> None:  # fmt: skip
    with unchanged(client, namespace):
        message = error_of(api.request(method, url.format(running=running), json=body), 400)
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize(
    "given", ["2099-01-02T03:04:05.678Z", "2099-01-02T05:04:05.678+02:00", "2099-01-02T03:04:05.678"]
)
def test_run_at_is_written_back_in_utc_with_microseconds(api: TestClient, given: str) -> None:
    job_id = create_job(api, run_at=given)
    assert job_field(api, job_id, "run_at") == "2099-01-02T03:04:05.678000Z"

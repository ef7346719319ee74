"""``/launcher`` over HTTP: create, list, read, delete; bad specs refused with 400 and nothing
appended; a launcher's jobs and events seen through the API."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from tests.support.http import (
    RFC3339,
    app_client,
    error_of,
    job_field,
    no_content,
    tick_at,
    unchanged,
)
from tests.support.ledger import nth_id

CRON = {"type": "@cron", "arguments": "*/5 * * * * *", "queue": "q"}


QUEUES = ("q",)  # created on the app before each test (the api fixture)


def create(api: TestClient, **body: Any) -> int:
    response = api.post("/launcher", json={**CRON, **body})
    assert response.status_code == 201, response.text
    launcher_id = response.json()["id"]
    assert isinstance(launcher_id, int)
    assert response.headers["location"] == f"/launcher/{launcher_id}"
    return launcher_id


def test_create_read_list_and_delete(api: TestClient, namespace: str) -> None:
    template = {"input": {"to": "ada"}, "timeout": "90s", "retry_delays": ["10s"], "tags": ["nightly"]}
    shown = {**template, "timeout": "1m30s"}
    first = create(api, template=template, max_pending=2)
    second = create(api, type="@event", arguments={"type": "job_completed", "queue": "q"}, debounce="1m")
    assert (first, second) == (nth_id(namespace, 1), nth_id(namespace, 2))

    got = api.get(f"/launcher/{first}").json()
    assert RFC3339.match(got.pop("created_at")) and RFC3339.match(got.pop("next_at"))
    assert got == {
        "id": first, "type": "@cron", "arguments": "*/5 * * * * *", "queue": "q",
        "template": shown,
        "max_pending": 2, "debounce": "0s", "fired": 0, "skipped": 0, "last_fired_at": None,
        "last_job": None, "pending": 0,
    }  # fmt: skip
    event = api.get(f"/launcher/{second}").json()
    assert event["arguments"] == {"type": "job_completed", "queue": "q"}
    assert event["debounce"] == "1m" and event["next_at"] is None
    assert [item["id"] for item in api.get("/launcher").json()] == [first, second]

    no_content(api.delete(f"/launcher/{first}"))
    assert "does not exist" in error_of(api.get(f"/launcher/{first}"), 404)
    error_of(api.delete(f"/launcher/{first}"), 404)
    assert [item["id"] for item in api.get("/launcher").json()] == [second]


@pytest.mark.parametrize("raw", ["0", "-1", "x", "1.5"])
def test_an_id_that_is_not_a_positive_integer_names_no_launcher(api: TestClient, raw: str) -> None:
    error_of(api.get(f"/launcher/{raw}"), 404)
    error_of(api.delete(f"/launcher/{raw}"), 404)


BAD_SPECS = [
    ({"type": "cron"}, "type"),
    ({"arguments": "*/5 * * *"}, "five"),
    ({"arguments": "*/5 * * * * * *"}, "six"),
    ({"arguments": "*/5 * * * * L"}, "day of week"),
    ({"arguments": "? * * * * *"}, "second"),
    ({"arguments": "0 0 0 1 FOO *"}, "month"),
    ({"arguments": "61 * * * * *"}, "not valid"),
    ({"arguments": "0 0 0 30 2 *"}, "no time that ever comes"),
    ({"arguments": 5}, "cron expression"),
    ({"type": "@interval", "arguments": "soon"}, "not a duration"),
    ({"type": "@interval", "arguments": "0.5s"}, "shorter than one second"),
    ({"type": "@at", "arguments": "tomorrow"}, "rfc 3339"),
    ({"type": "@at", "arguments": "9999-01-01T00:00:00Z"}, "year 3000"),
    ({"type": "@event", "arguments": {"queue": "q"}}, "type"),
    ({"type": "@event", "arguments": {"type": "job_exploded"}}, "unknown event type"),
    ({"type": "@event", "arguments": {"type": "launcher_fired"}}, "launcher events"),
    ({"type": "@event", "arguments": {"type": "job_created", "tag": "x"}}, "unknown field"),
    ({"type": "@event", "arguments": "job_completed"}, "event filter"),
    ({"debounce": "10s"}, "debounce"),
    ({"template": {"run_at": "2030-01-01T00:00:00Z"}}, "run_at"),
    ({"template": {"colour": "red"}}, "template.colour"),
    ({"template": {"timeout": "forever"}}, "template.timeout"),
    ({"max_pending": -1}, "max_pending"),
    ({"queue": "no spaces"}, "queue"),
    ({"extra": 1}, "extra"),
]


@pytest.mark.parametrize(("change", "named"), BAD_SPECS)
def test_bad_specs_are_400_and_append_nothing(
    api: TestClient, client: redis.Redis, namespace: str, change: dict[str, Any], named: str
) -> None:
    with unchanged(client, namespace):
        assert named in error_of(api.post("/launcher", json={**CRON, **change}), 400)


def test_a_body_without_queue_or_not_an_object_is_400(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    with unchanged(client, namespace):
        assert "queue" in error_of(
            api.post("/launcher", json={"type": "@cron", "arguments": "* * * * * *"}), 400
        )
        error_of(api.post("/launcher", json=[CRON]), 400)
        error_of(api.post("/launcher", content=b"{", headers={"content-type": "application/json"}), 400)


def test_a_launcher_on_a_missing_queue_is_404(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        assert "does not exist" in error_of(api.post("/launcher", json={**CRON, "queue": "nope"}), 404)


def test_its_jobs_and_events_through_the_api(api: TestClient, ledger: Ledger) -> None:
    launcher_id = create(api, arguments="* * * * * *", template={"input": [1, 2]})
    tick_at(ledger, timedelta(seconds=2))
    got = api.get(f"/launcher/{launcher_id}").json()
    assert got["fired"] == 1 and got["pending"] == 1
    job_id = got["last_job"]
    assert job_field(api, job_id, "launcher") == launcher_id
    assert job_field(api, job_id, "input") == [1, 2]
    [fired] = api.get("/events?type=launcher_fired").json()["events"]
    assert fired["queue"] == "q" and fired["job"] is None
    assert fired["data"]["launcher"] == launcher_id and fired["data"]["job"] == job_id
    [created] = api.get("/events?type=launcher_created").json()["events"]
    assert created["data"]["type"] == "@cron" and created["data"]["template"] == {}
    assert created["data"]["input"] == [1, 2]


def test_a_read_only_server_refuses_launcher_writes(redis_url: str, namespace: str) -> None:
    with app_client(redis_url, namespace, read_only=True) as api:
        assert api.get("/launcher").json() == []
        refused = api.post("/launcher", json=CRON)
        error_of(refused, 405)
        assert refused.headers["allow"] == "GET, HEAD"
        refused = api.delete("/launcher/1")
        error_of(refused, 405)
        assert refused.headers["allow"] == "GET, HEAD"
        refused = api.patch("/launcher")  # no route for that method: Starlette's 405, as JSON
        error_of(refused, 405)
        assert set(refused.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}

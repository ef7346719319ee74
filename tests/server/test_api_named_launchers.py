"""Named launchers over HTTP: ``PUT /launcher/{name}`` (created, updated, or unchanged and nothing
appended), pause, resume and fire by id or by name, bad input refused with 400 and nothing appended,
and ``[launcher.NAME]`` sections of the config declared at every start."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from tests.support.http import app_client, error_of, no_content, unchanged
from tests.support.ledger import events
from tests.support.private_redis import wait_until

QUEUES = ("q", "other")  # created on the app before each test (the api fixture)
NIGHTLY = {"type": "@cron", "arguments": "0 3 * * *", "queue": "q", "tz": "Europe/Paris"}


def put(api: TestClient, name: str, status: int, **body: Any) -> dict[str, Any]:
    response = api.put(f"/launcher/{name}", json={**NIGHTLY, **body})
    assert response.status_code == status, response.text
    assert response.headers["location"] == f"/launcher/{name}"
    got: dict[str, Any] = response.json()
    return got


def types(client: redis.Redis, namespace: str) -> list[str]:
    return [e["type"] for e in events(client, namespace) if e["type"].startswith("launcher_")]


def test_the_same_declaration_again_appends_nothing_and_a_change_updates(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    made = put(api, "nightly", 201)
    assert made == {"id": made["id"], "name": "nightly", "outcome": "created"}
    with unchanged(client, namespace):
        assert put(api, "nightly", 200) == {**made, "outcome": "unchanged"}
    shown = api.get("/launcher/nightly").json()
    assert shown == api.get(f"/launcher/{made['id']}").json()
    assert (shown["name"], shown["tz"], shown["arguments"]) == ("nightly", "Europe/Paris", "0 0 3 * * *")
    first_at = shown["next_at"]

    changed = put(api, "nightly", 200, template={"input": {"full": True}}, max_pending=1)
    assert changed == {**made, "outcome": "updated"}
    shown = api.get("/launcher/nightly").json()
    assert shown["template"] == {"input": {"full": True}} and shown["max_pending"] == 1
    assert shown["next_at"] == first_at  # the same schedule: its next firing stays
    put(api, "nightly", 200, queue="other", tz="America/New_York")
    shown = api.get("/launcher/nightly").json()
    assert (shown["queue"], shown["tz"], shown["template"]) == ("other", "America/New_York", {})
    assert shown["next_at"] != first_at
    assert [item["name"] for item in api.get("/launcher").json()] == ["nightly"]
    assert types(client, namespace) == ["launcher_created", "launcher_updated", "launcher_updated"]
    [updated, _] = api.get("/events?type=launcher_updated").json()["events"]
    assert updated["data"]["name"] == "nightly" and updated["data"]["max_pending"] == 1


BAD = [
    ("42", {}, "not a launcher name"),
    ("-x", {}, "not a launcher name"),
    ("n" * 256, {}, "not a launcher name"),
    ("nightly", {"tz": "Mars/Olympus"}, "not a time zone"),
    ("nightly", {"tz": 5}, "tz"),
    ("nightly", {"type": "@interval", "arguments": "1h"}, "tz applies to @cron"),
    ("nightly", {"arguments": "0 3 * *"}, "five"),
    ("nightly", {"queue": "no spaces"}, "queue"),
    ("nightly", {"extra": 1}, "extra"),
]


@pytest.mark.parametrize(("name", "change", "named"), BAD)
def test_bad_names_and_declarations_are_400_and_append_nothing(
    api: TestClient, client: redis.Redis, namespace: str, name: str, change: dict[str, Any], named: str
) -> None:
    with unchanged(client, namespace):
        assert named in error_of(api.put(f"/launcher/{name}", json={**NIGHTLY, **change}), 400)


def test_a_declaration_on_a_missing_queue_is_404(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    with unchanged(client, namespace):
        assert "does not exist" in error_of(api.put("/launcher/x", json={**NIGHTLY, "queue": "nope"}), 404)


@pytest.mark.parametrize("path", ["/launcher/nope", "/launcher/999", "/launcher/0"])
def test_a_launcher_that_does_not_exist_is_404_and_nothing_appended(
    api: TestClient, client: redis.Redis, namespace: str, path: str
) -> None:
    with unchanged(client, namespace):
        error_of(api.get(path), 404)
        error_of(api.delete(path), 404)
        error_of(api.put(path + "/pause"), 404)
        error_of(api.put(path + "/resume"), 404)
        error_of(api.post(path + "/fire"), 404)


def test_pause_resume_and_fire_by_name_or_id(api: TestClient, client: redis.Redis, namespace: str) -> None:
    launcher_id = put(api, "nightly", 201)["id"]
    no_content(api.put("/launcher/nightly/pause"))
    with unchanged(client, namespace):
        no_content(api.put(f"/launcher/{launcher_id}/pause"))  # paused already
    shown = api.get("/launcher/nightly").json()
    assert shown["paused"] is True and shown["next_at"] is None
    with unchanged(client, namespace):
        assert put(api, "nightly", 200)["outcome"] == "unchanged"  # a restart's declaration: still paused

    fired = api.post("/launcher/nightly/fire")  # by hand, paused or not
    assert fired.status_code == 201, fired.text
    job_id = fired.json()["job"]
    assert fired.headers["location"] == f"/job/{job_id}"
    assert api.get(f"/job/{job_id}?fields=launcher").json()["launcher"] == launcher_id
    shown = api.get("/launcher/nightly").json()
    assert (shown["fired"], shown["last_job"], shown["next_at"]) == (1, job_id, None)
    [event] = api.get("/events?type=launcher_fired").json()["events"]
    assert event["data"]["manual"] is True and event["actor"] == "local"

    no_content(api.put(f"/launcher/{launcher_id}/resume"))
    shown = api.get("/launcher/nightly").json()
    assert shown["paused"] is False and shown["next_at"] is not None
    assert types(client, namespace) == [
        "launcher_created", "launcher_paused", "launcher_fired", "launcher_resumed"
    ]  # fmt: skip


def test_fire_of_a_held_back_launcher_is_409_and_appends_nothing(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    put(api, "once", 201, max_pending=1)
    assert api.post("/launcher/once/fire").status_code == 201
    with unchanged(client, namespace):
        assert "max_pending" in error_of(api.post("/launcher/once/fire"), 409)


CONFIGURED = {"nightly": {**NIGHTLY, "template": {"input": {"report": "daily"}}}}


def of_launcher(client: redis.Redis, namespace: str, launcher_id: int) -> list[str]:
    """The types of the events of one launcher."""
    found = [e for e in events(client, namespace) if e["type"].startswith("launcher_")]
    return [e["type"] for e in found if json.loads(e["data"])["launcher"] == launcher_id]


def test_config_sections_are_declared_at_start_and_again_at_each_restart_append_nothing(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    queues: dict[str, Any] = {"q": {}}
    with app_client(redis_url, namespace, queues=queues, launchers=CONFIGURED) as api:
        wait_until(lambda: api.get("/launcher/nightly").status_code == 200, "the configured launcher")
        shown = api.get("/launcher/nightly").json()
    assert shown["template"] == {"input": {"report": "daily"}}
    assert of_launcher(client, namespace, shown["id"]) == ["launcher_created"]
    for restart in range(2):  # the same config again; a probe declared after it says it was applied
        probe = {"type": "@interval", "arguments": "1h", "queue": "q"}
        launchers = {**CONFIGURED, f"probe{restart}": probe}
        with app_client(redis_url, namespace, queues=queues, launchers=launchers) as api:
            path = f"/launcher/probe{restart}"
            wait_until(lambda path=path: api.get(path).status_code == 200, "the declarations")  # type: ignore[misc]
    assert of_launcher(client, namespace, shown["id"]) == ["launcher_created"]
    changed = {"nightly": {**CONFIGURED["nightly"], "arguments": "0 4 * * *"}}
    with app_client(redis_url, namespace, queues=queues, launchers=changed) as api:
        wait_until(lambda: api.get("/launcher/nightly").json()["arguments"] == "0 0 4 * * *", "the update")
    assert of_launcher(client, namespace, shown["id"]) == ["launcher_created", "launcher_updated"]

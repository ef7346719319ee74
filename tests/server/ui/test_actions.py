"""The dashboard's actions with auth off: requeue, cancel and delete run the API's commands and are
recorded with the actor ``local``; a post from another site, or a bad one, changes nothing."""

from __future__ import annotations

import time

import pytest
import redis
from starlette.testclient import TestClient

from tests.server.ui.html import parse
from tests.support.http import app_client, create_job, error_of, fetch, unchanged
from tests.support.ledger import events


def failed_job(ui: TestClient) -> int:
    create_job(ui, "q")
    job = fetch(ui, "q")
    assert (
        ui.patch(f"/job/{job['id']}", json={"status": "failed", "attempt": job["attempt"]}).status_code == 204
    )
    job_id: int = job["id"]
    return job_id


@pytest.mark.parametrize(
    ("action", "status", "event"),
    [("requeue", "queued", "job_requeued"), ("cancel", "cancelled", "job_cancelled"),
     ("delete", None, "job_deleted")],
)  # fmt: skip
def test_an_action_changes_the_job_and_is_recorded_with_its_actor(
    ui: TestClient, client: redis.Redis, namespace: str, action: str, status: str | None, event: str
) -> None:
    job_id = failed_job(ui)
    form = {"action": action, "back": "failed", "confirm": "yes"}  # delete asks first: below
    response = ui.post(f"/ui/job/{job_id}/action", data=form, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui/failed"
    answer = ui.get(f"/job/{job_id}/status")
    assert (answer.json() if status else answer.status_code) == (status or 404)
    last = events(client, namespace, job_id)[-1]
    assert (last["type"], last["actor"]) == (event, "local")
    shown = parse(ui.get("/ui/failed").text)  # the flash message, once
    assert shown.one(id="flash").text() == f"job {job_id} {status or 'deleted'} by local".replace(
        "queued", "requeued"
    )
    assert parse(ui.get("/ui/failed").text).all(id="flash") == []


def test_an_action_from_the_job_page_goes_back_to_it(ui: TestClient) -> None:
    job_id = failed_job(ui)
    response = ui.post(f"/ui/job/{job_id}/action", data={"action": "requeue", "back": "job"},
                       follow_redirects=False)  # fmt: skip
    assert response.headers["location"] == f"/ui/job/{job_id}"


def test_an_action_the_job_cannot_take_is_a_409_page(
    ui: TestClient, client: redis.Redis, namespace: str
) -> None:
    job_id = create_job(ui, "q")
    with unchanged(client, namespace):
        response = ui.post(f"/ui/job/{job_id}/action", data={"action": "requeue"})
    assert response.status_code == 409
    assert "queued" in parse(response.text).one(id="flash").text()


@pytest.mark.parametrize(
    "headers",
    [{"origin": "https://evil.example"}, {"sec-fetch-site": "cross-site"}, {"sec-fetch-site": "same-site"},
     {"origin": "null"}],
)  # fmt: skip
def test_a_post_from_another_site_is_refused(
    ui: TestClient, client: redis.Redis, namespace: str, headers: dict[str, str]
) -> None:
    job_id = failed_job(ui)
    with unchanged(client, namespace):
        response = ui.post(f"/ui/job/{job_id}/action", data={"action": "delete"}, headers=headers)
    assert "another site" in error_of(response, 403)


def test_a_post_from_this_site_passes(ui: TestClient) -> None:
    job_id = failed_job(ui)
    headers = {"origin": "http://localhost", "sec-fetch-site": "same-origin"}
    response = ui.post(f"/ui/job/{job_id}/action", data={"action": "cancel"}, headers=headers,
                       follow_redirects=False)  # fmt: skip
    assert response.status_code == 303


@pytest.mark.parametrize(
    ("path", "form", "status", "says"),
    [
        ("/ui/job/1/action", {"action": "explode"}, 400, "unknown action 'explode'"),
        ("/ui/job/1/action", {}, 400, "unknown action ''"),
        ("/ui/job/999/action", {"action": "cancel"}, 404, "job 999 does not exist"),
        ("/ui/job/x/action", {"action": "cancel"}, 404, "does not exist"),
    ],
)
def test_a_bad_action_is_a_clear_error(
    ui: TestClient,
    client: redis.Redis,
    namespace: str,
    path: str,
    form: dict[str, str],
    status: int,
    says: str,
) -> None:
    failed_job(ui)
    with unchanged(client, namespace):
        response = ui.post(path, data=form)
    assert response.status_code == status
    assert says in parse(response.text).one(id="flash").text()


def test_verify_on_demand_reports_ok(ui: TestClient) -> None:
    failed_job(ui)
    response = ui.post("/ui/ledger/verify", data={}, headers={"hx-request": "true"})
    assert response.status_code == 202
    run = parse(response.text).one(data_run=True).attrs["data-run"]
    deadline = time.monotonic() + 30
    while True:
        fragment = parse(ui.get(f"/ui/ledger/verify/{run}").text).one(data_run=run)
        if "data-ok" in fragment.attrs or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert fragment.attrs["data-ok"] == "true" and fragment.text().startswith("ok")


def test_verify_without_htmx_goes_to_the_ledger_page_showing_the_run(ui: TestClient) -> None:
    response = ui.post("/ui/ledger/verify", data={}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/ui/ledger?run=")
    doc = parse(ui.get(response.headers["location"]).text)
    assert doc.one(id="verify-result").one(data_run=True)


def test_verify_finds_a_projection_changed_behind_the_ledger(
    ui: TestClient, client: redis.Redis, namespace: str
) -> None:
    job_id = failed_job(ui)
    client.hset(f"{{{namespace}}}:job:{job_id}", "status", "completed")  # what no event says
    run = parse(ui.post("/ui/ledger/verify", data={}, headers={"hx-request": "true"}).text).one(data_run=True)
    deadline = time.monotonic() + 30
    while "data-ok" not in run.attrs and time.monotonic() < deadline:
        time.sleep(0.05)
        run = parse(ui.get(f"/ui/ledger/verify/{run.attrs['data-run']}").text).one(data_run=True)
    assert run.attrs["data-ok"] == "false"
    assert f"job:{job_id}" in run.text() and "status" in run.text()


def test_a_read_only_server_refuses_actions(ui: TestClient, redis_url: str, namespace: str) -> None:
    job_id = failed_job(ui)
    with app_client(redis_url, namespace, read_only=True) as ro:
        response = ro.post(f"/ui/job/{job_id}/action", data={"action": "cancel"})
    assert response.status_code == 405
    assert "read-only" in parse(response.text).one(id="flash").text()
    assert ui.get(f"/job/{job_id}/status").json() == "failed"


def test_a_launcher_is_paused_resumed_and_fired_from_its_page(
    ui: TestClient, client: redis.Redis, namespace: str
) -> None:
    ui.put("/queue/reports", json={})
    made = ui.put("/launcher/nightly", json={"type": "@cron", "arguments": "0 2 * * *", "queue": "reports"})
    assert made.status_code in (200, 201), made.text
    launcher = ui.get("/launcher/nightly").json()["id"]
    row = parse(ui.get("/ui/launchers").text).one("tr", data_launcher=str(launcher))
    assert "nightly" in row.one(data_label="Name").text()
    assert {b.attrs["value"] for b in row.all("button", name="action")} == {"pause", "fire"}

    def act(action: str) -> str:
        response = ui.post(f"/ui/launcher/{launcher}/action", data={"action": action}, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"] == "/ui/launchers", response.text
        return parse(ui.get("/ui/launchers").text).one(id="flash").text()

    assert act("pause") == "launcher nightly paused by local"
    row = parse(ui.get("/ui/launchers").text).one("tr", data_launcher=str(launcher))
    assert "paused" in row.one(data_label="Name").text()
    assert {b.attrs["value"] for b in row.all("button", name="action")} == {"resume", "fire"}
    assert ui.get("/launcher/nightly").json()["paused"] is True
    assert act("resume") == "launcher nightly resumed by local"
    assert ui.get("/launcher/nightly").json()["paused"] is False
    said = act("fire")
    job = int(said.rsplit(" ", 1)[1])
    assert said == f"launcher nightly fired by local: job {job}"
    assert ui.get(f"/job/{job}").json()["queue"] == "reports"
    types = [e["type"] for e in events(client, namespace)][-4:]
    assert types[:2] == ["launcher_paused", "launcher_resumed"] and "job_created" in types

    with unchanged(client, namespace):
        bad = ui.post(f"/ui/launcher/{launcher}/action", data={"action": "explode"})
        assert bad.status_code == 400 and "pause, resume or fire" in bad.text
        assert ui.post("/ui/launcher/999/action", data={"action": "pause"}).status_code == 404

"""The queues page: its table refreshed by itself, the hour's throughput drawn as an SVG chart,
lifetime totals that survive expiry, and pause, resume and drain, each appended with its actor (with
auth on, only for the admin scope, as the API's pause and resume)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory
from starlette.testclient import TestClient

from jobledger.ledger import commands
from jobledger.ledger.runner import Ledger
from jobledger.server import bulk_runs
from jobledger.server.ui import actions
from tests.server.ui.conftest import Secured
from tests.server.ui.html import parse
from tests.server.ui.test_pages import finish, page
from tests.support.http import create_job, fetch, put_queue, unchanged
from tests.support.ledger import events


def post(ui: TestClient, queue: str, **form: str) -> int:
    return ui.post(f"/ui/queue/{queue}/action", data=form, follow_redirects=False).status_code


def test_the_table_refreshes_itself_from_its_own_route(ui: TestClient) -> None:
    live = page(ui, "/ui").one(id="queues-live")
    assert (live.attrs["hx-get"], live.attrs["hx-trigger"]) == ("/ui/queues", "every 2s")
    create_job(ui, "q")
    fragment = page(ui, live.attrs["hx-get"])
    assert fragment.one(id="queues-live").one("td", data_status="queued").text() == "1"
    assert fragment.all("nav") == []  # the fragment alone


def test_the_chart_draws_the_hour_a_bar_a_minute(ui: TestClient, frozen: FrozenDateTimeFactory) -> None:
    for _ in range(4):
        create_job(ui, "q")
    finish(ui, "q", "completed")
    frozen.tick(timedelta(minutes=5))
    finish(ui, "q", "completed")
    finish(ui, "q", "failed")
    chart = page(ui, "/ui").one("tr", data_queue="q").one("svg", class_="chart")
    assert chart.attrs["data-peak"] == "2"
    bars = {g.attrs["data-minutes-ago"]: g for g in chart.all("g", data_minutes_ago=True)}
    assert set(bars) == {"0", "5"}
    assert [r.attrs["class"] for r in bars["0"].all("rect")] == ["done", "bad"]
    heights = [float(r.attrs["height"]) for r in (bars["5"].one("rect"), *bars["0"].all("rect"))]
    assert heights[0] == heights[1] == heights[2] > 0  # one run each: half the busiest minute's two
    frozen.tick(timedelta(minutes=61))
    assert page(ui, "/ui").one("svg", class_="chart").all("g", data_minutes_ago=True) == []


def test_lifetime_totals_survive_expiry(
    ui: TestClient, ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ui, "q", expires_after="1m")
    for _ in range(3):
        create_job(ui, "q")
    finish(ui, "q", "completed")
    finish(ui, "q", "failed")
    frozen.tick(timedelta(minutes=2))
    assert len(ledger.run(commands.check_expiry(10))) == 2
    row = page(ui, "/ui").one("tr", data_queue="q")
    assert row.one("td", data_status="completed").text() == "0"  # gone from the counts...
    totals = {dd.attrs["data-total"]: dd.text() for dd in row.all("dd", data_total=True)}
    assert totals == {"created": "3", "completed": "1", "failed": "1", "timed_out": "0", "cancelled": "0",
                      "expired": "2"}  # fmt: skip  # ...not from the totals


def test_pause_and_resume_append_their_events_with_the_actor(
    ui: TestClient, client: redis.Redis, namespace: str
) -> None:
    form = page(ui, "/ui").one("tr", data_queue="q").one("form", class_="inline queue-actions")
    assert [b.attrs["value"] for b in form.all("button", name="action")] == ["pause", "drain"]
    assert post(ui, "q", action="pause") == 303
    last = events(client, namespace)[-1]
    assert (last["type"], last["queue"], last["actor"]) == ("queue_paused", "q", "local")
    doc = page(ui, "/ui")
    assert doc.one(id="flash").text() == "queue q paused by local"
    row = doc.one("tr", data_queue="q")
    assert row.one("td", data_paused=True).attrs["data-paused"] == "true"
    assert [b.attrs["value"] for b in row.all("button", name="action")] == ["resume", "drain"]
    assert post(ui, "q", action="resume", back="queue") == 303
    assert events(client, namespace)[-1]["type"] == "queue_resumed"


def test_drain_asks_then_cancels_every_waiting_job_as_one_bulk_operation(
    ui: TestClient, client: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_runs, "BATCH", 3)  # several batches
    running = create_job(ui, "q")
    fetch(ui, "q")
    waiting = [create_job(ui, "q") for _ in range(5)]
    waiting += [create_job(ui, "q", quota_key="k"), create_job(ui, "q", delay="1h")]  # a lane, scheduled
    with unchanged(client, namespace):
        asked = ui.post("/ui/queue/q/action", data={"action": "drain"})
    assert asked.status_code == 200 and "Drain queue q?" in parse(asked.text).one("h1").text()
    assert post(ui, "q", action="drain", confirm="yes") == 303
    assert page(ui, "/ui").one(id="flash").text() == "queue q: 7 waiting jobs cancelled by local"
    started = [e for e in events(client, namespace) if e["type"] == "bulk_started"]
    assert len(started) == 1 and json.loads(started[0]["data"]) == {
        "action": "cancel", "queue": "q", "status": ["queued", "scheduled"]
    }  # fmt: skip
    operation = started[0]["id"]
    for job in waiting:
        last = events(client, namespace, job)[-1]
        assert (last["type"], last["actor"], json.loads(last["data"])) == (
            "job_cancelled", "local", {"operation": operation}
        )  # fmt: skip
    assert ui.get(f"/job/{running}/status").json() == "running"
    assert ui.get(f"/bulk/{operation}").json()["done"] == 7


def test_a_long_drain_goes_on_on_its_operation_s_page(
    ui: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(actions, "DRAIN_WAIT", 0)
    for _ in range(3):
        create_job(ui, "q")
    answer = ui.post("/ui/queue/q/action", data={"action": "drain", "confirm": "yes"}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/bulk/")
    doc = page(ui, answer.headers["location"])
    assert doc.one(id="flash").text().startswith("queue q draining (operation ")
    assert doc.one("dd", data_filter="status").text() == "queued, scheduled"


@pytest.mark.parametrize(
    ("queue", "form", "status", "says"),
    [
        ("q", {"action": "explode"}, 400, "unknown action 'explode'"),
        ("nope", {"action": "pause"}, 404, "queue 'nope' does not exist"),
        ("nope", {"action": "drain"}, 404, "queue 'nope' does not exist"),
        ("nope", {"action": "drain", "confirm": "yes"}, 404, "queue 'nope' does not exist"),
    ],
)
def test_a_bad_queue_action_is_a_clear_error_and_appends_nothing(
    ui: TestClient,
    client: redis.Redis,
    namespace: str,
    queue: str,
    form: dict[str, str],
    status: int,
    says: str,
) -> None:
    create_job(ui, "q")
    with unchanged(client, namespace):
        response = ui.post(f"/ui/queue/{queue}/action", data=form)
    assert response.status_code == status and says in parse(response.text).one(id="flash").text()


@pytest.mark.parametrize("role", ["reader", "worker"])
def test_queue_actions_need_the_admin_scope(
    secured: Secured, client: redis.Redis, namespace: str, role: str
) -> None:
    secured.create_job()
    secured.sign_in(role)
    csrf = parse(secured.client.get("/ui").text).all("input", name="csrf")[0].attrs["value"]
    for action in ("pause", "drain"):
        with unchanged(client, namespace):
            response = secured.client.post("/ui/queue/q/action", data={"action": action, "confirm": "yes",
                                                                       "csrf": csrf})  # fmt: skip
        assert response.status_code == 403 and "admin" in parse(response.text).one(id="flash").text()


def test_an_admin_pauses_and_drains_as_itself(secured: Secured, client: redis.Redis, namespace: str) -> None:
    job = secured.create_job()
    secured.sign_in("admin")
    csrf = parse(secured.client.get("/ui").text).all("input", name="csrf")[0].attrs["value"]
    ui = secured.client
    assert post(ui, "q", action="pause", csrf=csrf) == 303
    assert post(ui, "q", action="drain", confirm="yes", csrf=csrf) == 303
    assert [(e["type"], e["actor"]) for e in events(client, namespace)[-4:]] == [
        ("queue_paused", "admin"), ("bulk_started", "admin"), ("job_cancelled", "admin"),
        ("bulk_finished", "admin"),
    ]  # fmt: skip
    assert events(client, namespace, job)[-1]["type"] == "job_cancelled"
    with unchanged(client, namespace):
        assert post(ui, "q", action="resume") == 403  # no csrf field

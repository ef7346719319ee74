"""The dashboard's bulk operations: the failed page's "all matching" form, the preview that counts
and appends nothing, the confirmation that starts one operation over failed and timed-out jobs,
its page with counts that refresh themselves, and the API's scopes on every queue it touches."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.server import bulk_runs
from jobledger.server.ui.render import fragment
from tests.server.ui.conftest import Secured
from tests.server.ui.html import Element, parse
from tests.server.ui.test_failed_page import failed
from tests.server.ui.test_pages import finish, page
from tests.support.http import create_job, put_queue, unchanged
from tests.support.ledger import events


def _post(ui: TestClient, **form: str) -> Any:
    return ui.post("/ui/bulk", data=form, follow_redirects=False)


def _finished(ui: TestClient, location: str) -> Element:
    """The operation's page once its run has ended."""
    for _ in range(200):
        doc = page(ui, location)
        if doc.one(id="bulk-counts").attrs["data-finished"] == "true":
            return doc
        time.sleep(0.05)
    raise AssertionError(f"{location} did not finish")


def _statuses(ui: TestClient, ids: list[int]) -> list[str]:
    return [ui.get(f"/job/{i}/status").json() for i in ids]


def test_the_failed_page_offers_to_act_on_all_it_matches_with_its_filter(ui: TestClient) -> None:
    assert page(ui, "/ui/failed").all(id="bulk-matching") == []  # nothing failed: nothing offered
    failed(ui, "q", "SMTPError")
    form = page(ui, "/ui/failed?queue=q&error_kind=SMTPError").one("form", id="bulk-matching")
    assert form.attrs["action"] == "/ui/bulk"
    hidden = {i.attrs["name"]: i.attrs["value"] for i in form.all("input", type="hidden")}
    assert hidden == {"csrf": "", "queue": "q", "error_kind": "SMTPError"}
    assert [b.attrs["value"] for b in form.all("button", name="action")] == ["requeue", "cancel", "delete"]


def test_preview_counts_then_confirm_requeues_failed_and_timed_out_as_one_operation(
    ui: TestClient, client: redis.Redis, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk_runs, "BATCH", 4)  # several batches
    put_queue(ui, "other")
    smtp = [failed(ui, "q", "SMTPError") for _ in range(6)]
    create_job(ui, "q")
    timed_out = finish(ui, "q", "timed_out")
    others = [failed(ui, "q", "DNSError"), failed(ui, "other", "SMTPError")]
    with unchanged(client, namespace):  # the preview appends nothing
        asked = _post(ui, action="requeue", queue="q", error_kind="SMTPError")
    assert asked.status_code == 200, asked.text
    doc = parse(asked.text)
    assert doc.one("h1").text() == "Requeue 6 matching jobs?"
    assert (
        "6 failed or timed-out jobs of queue q whose latest error is a SMTPError"
        in doc.one(id="confirm-says").text()
    )
    confirm = doc.one("form", id="confirm")
    fields = {i.attrs["name"]: i.attrs["value"] for i in confirm.all("input", type="hidden")}
    assert fields == {
        "csrf": "",
        "action": "requeue",
        "queue": "q",
        "error_kind": "SMTPError",
        "expected": "6",
        "confirm": "yes",
    }
    assert doc.one("a", id="confirm-back").attrs["href"] == "/ui/failed?queue=q&error_kind=SMTPError"
    assert _statuses(ui, smtp) == ["failed"] * 6
    no_kind = parse(_post(ui, action="requeue", queue="q").text).one("h1").text()
    assert no_kind == "Requeue 8 matching jobs?"  # the timed-out job too
    started = _post(ui, **fields)
    assert started.status_code == 303
    location = started.headers["location"]
    assert location.endswith("?expected=6")  # the preview's count, for the page's progress bar
    operation = location.removeprefix("/ui/bulk/").removesuffix("?expected=6")
    doc = _finished(ui, location)
    assert doc.one(id="bulk-done").text() == "6" and doc.one("dd", id="bulk-matched").text() == "6"
    assert doc.one("dd", data_filter="status").text() == "failed, timed_out"
    assert _statuses(ui, smtp) == ["queued"] * 6
    assert _statuses(ui, [timed_out, *others]) == ["timed_out", "failed", "failed"]
    audit = [e for e in events(client, namespace) if e["type"].startswith("bulk_")]
    assert [e["type"] for e in audit] == ["bulk_started", "bulk_finished"] and audit[0]["id"] == operation
    requeued = [e for e in events(client, namespace) if e["type"] == "job_requeued"]
    assert all(json.loads(e["data"])["operation"] == operation for e in requeued) and len(requeued) == 6
    # all of the page, unfiltered: the timed-out job and the rest, in the same way
    _finished(ui, _post(ui, action="requeue", confirm="yes").headers["location"])
    assert _statuses(ui, [timed_out, *others]) == ["queued"] * 3


def test_the_counts_refresh_themselves_until_the_operation_has_finished(ui: TestClient) -> None:
    failed(ui, "q", "E")
    location = _post(ui, action="cancel", confirm="yes").headers["location"]
    doc = _finished(ui, location)
    counts = doc.one(id="bulk-counts")
    assert "hx-trigger" not in counts.attrs  # finished: no more fetching
    assert doc.one("dd", id="bulk-state").text().startswith("finished at")
    fragment = page(ui, location + "/counts")
    assert fragment.all("nav") == [] and fragment.one(id="bulk-counts").attrs["data-finished"] == "true"
    page(ui, "/ui/bulk/1-0", 404)


def test_a_running_operation_s_counts_fetch_themselves() -> None:
    state: dict[str, Any] = {
        "operation": "5-0", "action": "requeue", "filter": {}, "started_at": "2026-01-01T00:00:00Z",
        "finished_at": None, "done": 2, "matched": None, "running": True, "matched_so_far": 3, "expected": 8,
    }  # fmt: skip
    doc = parse(fragment("_bulk_counts.html", op=state, live=1))
    counts = doc.one(id="bulk-counts")
    assert counts.attrs["hx-get"] == "/ui/bulk/5-0/counts?expected=8"
    assert counts.attrs["hx-trigger"] == "every 1s"
    assert doc.one("dd", id="bulk-matched").text() == "3 so far"
    assert (doc.one("progress").attrs["value"], doc.one("progress").attrs["max"]) == ("2", "8")


@pytest.mark.parametrize(
    ("form", "says"),
    [
        ({"action": "explode"}, "unknown action 'explode'"),
        ({"action": "requeue", "queue": "no such name!"}, "invalid queue name"),
        ({"action": "requeue", "since": "yesterday"}, "since must be a time"),
        (
            {"action": "requeue", "since": "2026-01-02T00:00", "until": "2026-01-01T00:00"},
            "since must come before",
        ),
        ({"action": "requeue", "error_kind": "x" * 101, "confirm": "yes"}, "error_kind must be at most"),
    ],
)
def test_a_bad_filter_or_action_is_400_and_appends_nothing(
    ui: TestClient, client: redis.Redis, namespace: str, form: dict[str, str], says: str
) -> None:
    failed(ui, "q", "E")
    with unchanged(client, namespace):
        response = _post(ui, **form)
    assert response.status_code == 400 and says in parse(response.text).one(id="flash").text()


def _csrf(secured: Secured) -> str:
    return parse(secured.client.get("/ui/failed").text).all("input", name="csrf")[0].attrs["value"]


@pytest.mark.parametrize(
    ("role", "form", "status"),
    [
        ("admin", {"action": "delete"}, 200),
        ("worker", {"action": "requeue", "queue": "q"}, 200),
        ("worker", {"action": "requeue"}, 403),  # queue 'other' has a failed job; work:q does not cover it
        ("worker", {"action": "delete", "queue": "q"}, 403),  # a delete needs admin
        ("reader", {"action": "requeue", "queue": "q"}, 403),
        ("producer", {"action": "requeue", "queue": "q"}, 403),  # not even read: no failed page either
    ],
)
def test_scopes_are_the_api_s_on_every_queue_touched_and_refused_appends_nothing(
    secured: Secured, client: redis.Redis, namespace: str, role: str, form: dict[str, str], status: int
) -> None:
    assert secured.client.put("/queue/other", json={}, headers=secured.bearer).status_code == 201
    for queue in ("q", "other"):
        job = secured.client.post(f"/queue/{queue}/job", json={}, headers=secured.bearer).json()
        taken = secured.client.get(f"/queue/{queue}/job", headers=secured.bearer).json()
        assert taken["id"] == job
        update = {"status": "failed", "attempt": taken["attempt"]}
        assert secured.client.patch(f"/job/{job}", json=update, headers=secured.bearer).status_code == 204
    secured.sign_in(role)
    csrf = _csrf(secured) if role != "producer" else "no page to read it from"
    with unchanged(client, namespace):
        preview = _post(secured.client, csrf=csrf, **form)
    assert preview.status_code == status, preview.text
    if status == 403:
        assert "may not" in parse(preview.text).one(id="flash").text()
    with unchanged(client, namespace):
        assert _post(secured.client, **form, confirm="yes").status_code == 403  # no csrf field
    confirmed = _post(secured.client, csrf=csrf, **form, confirm="yes")
    if status == 200:
        assert confirmed.status_code == 303
        started = [e for e in events(client, namespace) if e["type"] == "bulk_started"]
        assert [e["actor"] for e in started] == [role]
    else:
        assert confirmed.status_code == 403
        assert [e for e in events(client, namespace) if e["type"] == "bulk_started"] == []

"""The job page with auth off: its timeline above its fields, the actions its status allows and no
other, delete asked before it is done, an expired job told from a deleted one, tags as chips."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory
from starlette.testclient import TestClient

from jobledger.ledger import commands
from jobledger.ledger.runner import Ledger
from tests.server.ui.html import Element, parse
from tests.server.ui.test_pages import finish, page
from tests.support.http import create_job, fetch, put_queue, unchanged
from tests.support.ledger import events


def offered(doc: Element) -> list[str]:
    return [b.attrs["value"] for b in doc.one(id="actions").all("button", name="action")]


def test_the_timeline_comes_before_the_fields(ui: TestClient) -> None:
    job = create_job(ui, "q", tags=["welcome", "vip"])
    html = ui.get(f"/ui/job/{job}").text
    assert html.index('id="actions"') < html.index('id="timeline"') < html.index('id="fields"')
    summary = page(ui, f"/ui/job/{job}").one(id="summary")
    assert [a.text() for a in summary.all("a", class_="tag chip")] == ["welcome", "vip"]
    assert summary.all("a", class_="tag chip")[0].attrs["href"] == "/ui/queue/q?tag=welcome"


@pytest.mark.parametrize(
    ("outcome", "actions"),
    [
        (None, ["cancel", "delete"]),  # queued
        ("running", ["cancel", "delete"]),
        ("completed", ["delete"]),
        ("failed", ["requeue", "cancel", "delete"]),
        ("timed_out", ["requeue", "delete"]),  # ended: a cancel would be refused
        ("cancelled", ["requeue", "delete"]),
    ],
)
def test_only_the_actions_its_status_allows(ui: TestClient, outcome: str | None, actions: list[str]) -> None:
    job = create_job(ui, "q")
    if outcome is not None:
        fetch(ui, "q")
    if outcome not in (None, "running"):
        assert ui.patch(f"/job/{job}", json={"status": outcome}).status_code == 204
    assert offered(page(ui, f"/ui/job/{job}")) == actions
    for action in ("requeue", "cancel"):  # what is not offered is what the ledger would refuse
        status = ui.post(f"/ui/job/{job}/action", data={"action": action}, follow_redirects=False).status_code
        assert (status == 303) == (action in actions), (action, status)
        if status == 303:
            break


def test_delete_asks_first_and_appends_nothing_until_confirmed(
    ui: TestClient, client: redis.Redis, namespace: str
) -> None:
    job = create_job(ui, "q")
    with unchanged(client, namespace):
        asked = ui.post(f"/ui/job/{job}/action", data={"action": "delete", "back": "job"})
    assert asked.status_code == 200
    form = parse(asked.text).one("form", id="confirm")
    fields = {i.attrs["name"]: i.attrs["value"] for i in form.all("input", type="hidden")}
    assert fields == {"csrf": "", "action": "delete", "back": "job", "confirm": "yes"}
    assert form.attrs["action"] == f"/ui/job/{job}/action"
    assert parse(asked.text).one("a", id="confirm-back").attrs["href"] == f"/ui/job/{job}"
    done = ui.post(form.attrs["action"], data=fields, follow_redirects=False)
    assert done.status_code == 303 and ui.get(f"/job/{job}").status_code == 404
    assert [e["type"] for e in events(client, namespace, job)][-1] == "job_deleted"


def test_a_deleted_job_says_deleted_and_by_whom(ui: TestClient) -> None:
    job = create_job(ui, "q")
    assert ui.delete(f"/job/{job}").status_code == 204
    doc = page(ui, f"/ui/job/{job}")
    assert doc.one(id="status").attrs["data-status"] == "deleted"
    assert "deleted by local" in doc.one(id="gone").text() and doc.all(id="actions") == []
    put_queue(ui, "doomed")
    queued = create_job(ui, "doomed")
    assert ui.delete("/queue/doomed").status_code == 204
    assert "with its queue" in page(ui, f"/ui/job/{queued}").one(id="gone").text()


def test_an_expired_job_says_expired(ui: TestClient, ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ui, "q", expires_after="1m")
    job = create_job(ui, "q")
    finish(ui, "q", "completed")
    frozen.tick(timedelta(minutes=2))
    assert ledger.run(commands.check_expiry(10)) == [job]
    for path in (f"/ui/job/{job}", f"/ui/job/{job}/state"):
        doc = page(ui, path)
        assert doc.one(id="status").attrs["data-status"] == "expired"
        assert "expired" in doc.one(id="gone").text() and "deleted" not in doc.one(id="gone").text()


def test_the_state_fragment_brings_the_head_out_of_band(ui: TestClient) -> None:
    job = create_job(ui, "q")
    fetch(ui, "q")
    fragment = page(ui, f"/ui/job/{job}/state")
    head = fragment.one(id="job-head")
    assert head.attrs["hx-swap-oob"] == "true" and offered(head) == ["cancel", "delete"]
    assert fragment.one(id="fields").one(data_field="status").text() == "running"
    assert page(ui, f"/ui/job/{job}").one(id="job-head").attrs.get("hx-swap-oob") is None

"""The failed page with auth off: each job's latest error (kind, message, attempt) and end time, the
filters by queue, error kind and time range (a bounded walk), and bad filters answered 400 with
nothing appended."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory
from starlette.testclient import TestClient

from jobledger.projections import failed_filter
from jobledger.server.ui import failed_page
from tests.server.ui.html import Element
from tests.server.ui.test_pages import finish, page
from tests.support.http import create_job, put_queue, unchanged


def failed(ui: TestClient, queue: str, kind: str, message: str = "boom") -> int:
    create_job(ui, queue)
    return finish(ui, queue, "failed", error={"kind": kind, "message": message})


def ids(doc: Element) -> list[int]:
    return [int(r.attrs["data-job"]) for r in doc.one("table", id="jobs").all("tr", data_job=True)]


def test_each_row_says_why_the_job_failed(ui: TestClient) -> None:
    put_queue(ui, "q", retries=1)  # the first failure waits to retry, the second ends it
    job = create_job(ui, "q")
    finish(ui, "q", "failed", error={"kind": "SMTPError", "message": "relay refused"})
    row = page(ui, "/ui/failed").one("tr", data_job=str(job))
    assert "retrying" in row.one(data_label="Status").text()  # it waits to retry
    late = create_job(ui, "q")
    finish(ui, "q", "timed_out")
    doc = page(ui, "/ui/failed")
    row = doc.one("tr", data_job=str(job))
    assert row.one("code", class_="error-kind").text() == "SMTPError"
    assert row.one("span", class_="error-message").text() == "relay refused"
    assert row.one("td", data_field="attempt").text() == "1"
    assert row.one(data_label="Ended").one("time").text().endswith("Z")
    timed = doc.one("tr", data_job=str(late))
    assert timed.one("code", class_="error-kind").text() == "timeout"
    assert "timed out" in timed.one("span", class_="error-message").text()


def test_filters_by_queue_error_kind_and_time(ui: TestClient, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ui, "other")
    early = failed(ui, "q", "SMTPError")
    cut = datetime.now(UTC) + timedelta(minutes=30)
    frozen.tick(timedelta(hours=1))
    smtp = failed(ui, "q", "SMTPError")
    dns = failed(ui, "q", "DNSError")
    elsewhere = failed(ui, "other", "SMTPError")
    assert ids(page(ui, "/ui/failed")) == [elsewhere, dns, smtp, early]
    assert ids(page(ui, "/ui/failed?queue=q")) == [dns, smtp, early]
    assert ids(page(ui, "/ui/failed?error_kind=SMTPError")) == [elsewhere, smtp, early]
    local, rfc = cut.strftime("%Y-%m-%dT%H:%M"), cut.strftime("%Y-%m-%dT%H:%M:%SZ")  # the form's, the API's
    assert ids(page(ui, f"/ui/failed?queue=q&error_kind=SMTPError&since={local}")) == [smtp]
    assert ids(page(ui, f"/ui/failed?until={rfc}")) == [early]
    assert ids(page(ui, "/ui/failed?error_kind=Nothing")) == []
    doc = page(ui, f"/ui/failed?queue=q&error_kind=SMTPError&since={local}")
    form = doc.one("form", id="failed-filters")  # the form keeps what was asked
    assert form.one("select", name="queue").one("option", selected=True).attrs["value"] == "q"
    assert form.one("input", name="error_kind").attrs["value"] == "SMTPError"
    assert form.one("input", name="since").attrs["value"] == local
    assert doc.all(id="capped") == []


def test_a_filtered_page_pages_and_keeps_its_filter(ui: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failed_page, "PAGE_SIZE", 3)
    monkeypatch.setattr(failed_filter, "CHUNK", 2)  # several steps of the walk per page
    made = [failed(ui, "q", "A" if i % 2 else "B") for i in range(10)]
    first = page(ui, "/ui/failed?error_kind=A")
    following = first.one("a", rel="next").attrs["href"]
    assert "error_kind=A" in following
    second = page(ui, "/ui/failed" + following)
    wanted = [j for i, j in enumerate(made) if i % 2][::-1]
    assert ids(first) + ids(second) == wanted and second.all("a", rel="next") == []


def test_a_walk_stops_at_its_budget_and_says_so(ui: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failed_filter, "CHUNK", 2)
    monkeypatch.setattr(failed_filter, "BUDGET", 4)
    rare = failed(ui, "q", "Rare")
    for _ in range(6):
        failed(ui, "q", "Common")
    doc = page(ui, "/ui/failed?error_kind=Rare")
    assert ids(doc) == [] and "stopped" in doc.one(id="capped").text()
    assert ids(page(ui, "/ui/failed?error_kind=Common")) != [] and rare


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("since=yesterday", "since must be a time"),
        ("until=2026-13-01T00:00", "until must be a time"),
        ("since=2026-05-02T00:00&until=2026-05-01T00:00", "since must come before until"),
        ("queue=bad%20name%20%2F", "invalid queue name"),
        ("error_kind=" + "x" * 101, "error_kind must be at most 100"),
        ("page=0&error_kind=A", "page must be an integer"),
    ],
)
def test_a_bad_filter_is_a_400_page_and_appends_nothing(
    ui: TestClient, client: redis.Redis, namespace: str, query: str, says: str
) -> None:
    failed(ui, "q", "A")
    with unchanged(client, namespace):
        doc = page(ui, f"/ui/failed?{query}", 400)
    assert says in doc.one(id="flash").text()


def test_blank_filter_fields_are_no_filter(ui: TestClient, frozen: FrozenDateTimeFactory) -> None:
    job = failed(ui, "q", "A")
    frozen.tick(timedelta(minutes=1))
    assert ids(page(ui, "/ui/failed?queue=&error_kind=&since=&until=")) == [job]

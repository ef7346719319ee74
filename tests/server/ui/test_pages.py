"""The dashboard's pages with auth off: each answers 200 with the data it promises, in the elements
the URL contract names; bad input is a clear 4xx page."""

from __future__ import annotations

import json
from datetime import timedelta
from html import unescape

import pytest
from freezegun.api import FrozenDateTimeFactory
from starlette.testclient import TestClient

from jobledger.ledger.requests import QueueSettings
from jobledger.projections import job_pages, job_search
from tests.server.ui.html import Element, parse
from tests.support.http import create_job, fetch, put_queue

NAV = {"/ui", "/ui/events", "/ui/failed", "/ui/launchers", "/ui/ledger"}


def page(ui: TestClient, path: str, status: int = 200) -> Element:
    response = ui.get(path, follow_redirects=False)
    assert response.status_code == status, (path, response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    return parse(response.text)


def finish(ui: TestClient, queue: str, status: str, **body: object) -> int:
    job = fetch(ui, queue)
    response = ui.patch(f"/job/{job['id']}", json={"status": status, "attempt": job["attempt"], **body})
    assert response.status_code == 204, response.text
    job_id: int = job["id"]
    return job_id


@pytest.mark.parametrize(
    "path", ["/ui", "/ui/queue/q", "/ui/events", "/ui/failed", "/ui/launchers", "/ui/ledger"]
)
def test_every_page_has_the_nav_bar_and_who_is_looking(ui: TestClient, path: str) -> None:
    doc = page(ui, path)
    assert {a.attrs["href"] for a in doc.one("nav", id="nav").all("a")} >= NAV
    assert doc.one(id="whoami").text() == "local"


def test_with_no_queue_the_overview_says_so_and_shows_no_table(ui: TestClient) -> None:
    assert ui.delete("/queue/q").status_code == 204
    doc = page(ui, "/ui")
    assert doc.all("table") == [] and doc.one("p", class_="empty").text() == "No queues yet."


def test_the_queues_page_counts_each_status_and_shows_paused(ui: TestClient) -> None:
    put_queue(ui, "slow", timeout="1h", retries=3)
    for _ in range(3):
        create_job(ui, "q")
    finish(ui, "q", "completed")
    assert ui.put("/queue/slow/pause").status_code == 204
    doc = page(ui, "/ui")
    row = doc.one("table", id="queues").one("tr", data_queue="q")
    counts = {td.attrs["data-status"]: td.text() for td in row.all("td", data_status=True)}
    assert counts == {"queued": "2", "running": "0", "failed": "0", "completed": "1", "cancelled": "0",
                      "timed_out": "0", "scheduled": "0"}  # fmt: skip
    slow = doc.one("tr", data_queue="slow")
    assert slow.one("td", data_paused=True).attrs["data-paused"] == "true"
    assert "timeout 1h" in slow.text() and "retries 3" in slow.text()


def test_throughput_counts_the_runs_ended_in_the_last_hour(
    ui: TestClient, frozen: FrozenDateTimeFactory
) -> None:
    for _ in range(3):
        create_job(ui, "q")
    finish(ui, "q", "completed")
    finish(ui, "q", "failed")
    frozen.tick(timedelta(minutes=30))
    finish(ui, "q", "cancelled")  # not a run's outcome: not counted
    cell = page(ui, "/ui").one("tr", data_queue="q").one("td", data_throughput=True)
    assert cell.attrs["data-throughput"] == "2" and "1 failed" in cell.text()
    frozen.tick(timedelta(minutes=31))  # the first two ended more than an hour ago
    assert page(ui, "/ui").one("td", data_throughput=True).attrs["data-throughput"] == "0"


def test_a_stale_minute_bucket_starts_again(ui: TestClient, frozen: FrozenDateTimeFactory) -> None:
    """Sixty minutes later the same bucket is reused: it counts the new minute only."""
    for _ in range(2):
        create_job(ui, "q")
    finish(ui, "q", "completed")
    frozen.tick(timedelta(minutes=60))
    finish(ui, "q", "completed")
    assert page(ui, "/ui").one("td", data_throughput=True).attrs["data-throughput"] == "1"


def test_the_queue_page_lists_its_jobs_newest_first_and_pages(ui: TestClient) -> None:
    ids = [create_job(ui, "q") for _ in range(55)]
    first = page(ui, "/ui/queue/q")
    rows = first.one("table", id="jobs").all("tr", data_job=True)
    assert [int(r.attrs["data-job"]) for r in rows] == ids[::-1][:50]
    assert first.all("a", rel="prev") == []
    following = first.one("a", rel="next").attrs["href"]
    second = page(ui, "/ui/queue/q" + following)
    assert [int(r.attrs["data-job"]) for r in second.all("tr", data_job=True)] == ids[::-1][50:]
    assert second.all("a", rel="next") == [] and second.one("a", rel="prev")


def test_the_queue_page_shows_every_setting_as_the_api_does_and_says_what_it_does(ui: TestClient) -> None:
    put_queue(ui, "q", timeout="90s", retry_delays=["5s", "1m"], max_queued_time="2m", max_running=3)
    settings = page(ui, "/ui/queue/q").one("dl", id="settings")
    shown = {dd.attrs["data-setting"]: dd.text() for dd in settings.all("dd", data_setting=True)}
    assert set(shown) == set(QueueSettings.model_fields) - {"paused"}  # paused: the badge
    assert (shown["timeout"], shown["max_queued_time"], shown["max_running"]) == ("1m30s", "2m", "3")
    assert (shown["retry_delays"], shown["retry_on"], shown["retry_backoff"]) == ('["5s", "1m"]', "—", "—")
    hints = {dt.text(): dt.attrs["title"] for dt in settings.all("dt")}
    assert hints["max running"] == QueueSettings.model_fields["max_running"].description


def test_the_queue_page_filters_by_status_and_by_tag(ui: TestClient) -> None:
    tagged = create_job(ui, "q", tags=["red"])
    plain = create_job(ui, "q", tags=["blue"])
    done = finish(ui, "q", "completed")
    assert done == tagged
    by_status = page(ui, "/ui/queue/q?status=completed").all("tr", data_job=True)
    assert [r.attrs["data-job"] for r in by_status] == [str(tagged)]
    queued = page(ui, "/ui/queue/q?status=queued").all("tr", data_job=True)
    assert [r.attrs["data-job"] for r in queued] == [str(plain)]
    by_tag = page(ui, "/ui/queue/q?tag=blue").all("tr", data_job=True)
    assert [r.attrs["data-job"] for r in by_tag] == [str(plain)]
    assert page(ui, "/ui/queue/q?tag=red&status=queued").all("tr", data_job=True) == []


@pytest.mark.parametrize("small_tag", [5_000, 1], ids=["tag-read-whole", "status-sets-walked"])
def test_a_tag_page_lists_the_tagged_jobs_newest_first_and_pages(
    ui: TestClient, monkeypatch: pytest.MonkeyPatch, small_tag: int
) -> None:
    monkeypatch.setattr(job_pages, "SMALL_TAG", small_tag)
    monkeypatch.setattr(job_pages, "WALK_CHUNK", 7)  # several chunks a set
    put_queue(ui, "other")
    create_job(ui, "other", tags=["red"])  # the same tag on another queue: not listed
    red = [create_job(ui, "q", tags=["red"] if i % 3 else ["blue"]) for i in range(80)]
    red = [job_id for i, job_id in enumerate(red) if i % 3]
    ended = [finish(ui, "q", "completed") for _ in range(10)]
    first = page(ui, "/ui/queue/q?tag=red")
    second = page(ui, "/ui/queue/q" + first.one("a", rel="next").attrs["href"])
    listed = [int(r.attrs["data-job"]) for d in (first, second) for r in d.all("tr", data_job=True)]
    assert listed == red[::-1] and second.all("a", rel="next") == []
    completed = page(ui, "/ui/queue/q?tag=red&status=completed").all("tr", data_job=True)
    assert [int(r.attrs["data-job"]) for r in completed] == sorted(set(ended) & set(red), reverse=True)


def test_queued_jobs_are_listed_in_the_order_they_are_handed_out(ui: TestClient) -> None:
    low = create_job(ui, "q")
    high = create_job(ui, "q", priority=5)
    keyed = create_job(ui, "q", quota_key="k")  # waits in its quota lane
    rows = page(ui, "/ui/queue/q?status=queued").all("tr", data_job=True)
    assert [int(r.attrs["data-job"]) for r in rows] == [high, low, keyed]


def test_the_search_form_goes_to_the_job(ui: TestClient) -> None:
    job_id = create_job(ui, "q")
    form = page(ui, "/ui/queue/q").one("form", id="search")
    assert form.one("input", name="id")
    response = ui.get(form.attrs["action"], params={"id": str(job_id)}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == f"/ui/job/{job_id}"
    assert "positive integers" in page(ui, "/ui/search?id=abc", 400).one(id="flash").text()


def test_the_queue_page_finds_jobs_by_what_is_in_them(
    ui: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada = create_job(ui, "q", input={"to": "ada@example.com"})
    create_job(ui, "q", input={"to": "bob@example.com"})
    tagged = create_job(ui, "q", tags=["ada-campaign"])
    doc = page(ui, "/ui/queue/q?search=ada")
    assert doc.one("form", id="filters").one("input", name="search").attrs["value"] == "ada"
    assert [int(r.attrs["data-job"]) for r in doc.all("tr", data_job=True)] == [ada, tagged]
    assert "whole queue" in doc.one(id="search-pager").text()
    assert not page(ui, "/ui/queue/q?search=nobody").all("tr", data_job=True)
    assert "do not go together" in page(ui, "/ui/queue/q?search=ada&tag=x", 400).one(id="flash").text()
    assert "1 to 255" in page(ui, "/ui/queue/q?search=" + "a" * 256, 400).one(id="flash").text()

    monkeypatch.setattr(job_search, "SCAN_BUDGET", 1)  # a page reads one job: the search goes on
    first = page(ui, "/ui/queue/q?search=ada")
    assert [int(r.attrs["data-job"]) for r in first.all("tr", data_job=True)] == [ada]
    further = first.one(id="search-pager").one("a", rel="next").attrs["href"]
    assert f"after={ada}" in further
    found: list[int] = []
    while further:
        doc = page(ui, "/ui/queue/q" + unescape(further))
        found += [int(r.attrs["data-job"]) for r in doc.all("tr", data_job=True)]
        links = doc.one(id="search-pager").all("a", rel="next")
        further = links[0].attrs["href"] if links else ""
    assert found == [tagged]


def test_the_job_page_shows_fields_json_errors_and_timeline(ui: TestClient) -> None:
    job_id = create_job(ui, "q", input={"to": "ada@example.com", "n": [1, 2]}, tags=["welcome"])
    error = {"kind": "SMTPError", "message": "relay refused", "traceback": "Traceback...\nSMTPError"}
    finish(ui, "q", "failed", error=error, output={"partial": True})
    doc = page(ui, f"/ui/job/{job_id}")
    assert doc.one(id="actions").one("form").attrs["action"] == f"/ui/job/{job_id}/action"
    fields = doc.one(id="fields")
    assert fields.one(data_field="queue").text() == "q" and "welcome" in fields.one(data_field="tags").text()
    assert json.loads(doc.one("pre", id="input").text()) == {"to": "ada@example.com", "n": [1, 2]}
    assert '\n  "to": "ada@example.com",\n' in unescape(ui.get(f"/ui/job/{job_id}").text)  # one key a line
    assert json.loads(doc.one("pre", id="output").text()) == {"partial": True}
    errors = doc.one(id="errors")
    assert (
        "SMTPError" in errors.text()
        and errors.one("pre", class_="traceback").text() == "Traceback... SMTPError"
    )
    items = doc.one("ol", id="timeline").all("li", data_event_id=True)
    assert [i.attrs["data-type"] for i in items] == ["job_created", "job_started", "job_failed"]
    assert {i.one(class_="actor").text() for i in items} == {"local"}
    assert items[0].one(class_="since").text() == "start"
    assert all(i.one(class_="since").text().startswith("+") for i in items[1:])
    stream = doc.one("ol", id="timeline").attrs["sse-connect"]
    assert stream.startswith(f"/ui/job/{job_id}/stream?after={items[-1].attrs['data-event-id']}")


def test_the_job_page_fetches_its_state_again_as_its_timeline_grows(ui: TestClient) -> None:
    job_id = create_job(ui, "q")
    doc = page(ui, f"/ui/job/{job_id}")
    assert doc.one(id="status").attrs["data-status"] == "queued"
    state = doc.one(id="job-state")
    assert (state.attrs["hx-get"], state.attrs["hx-trigger"]) == (
        f"/ui/job/{job_id}/state",
        "htmx:sseMessage from:#timeline",
    )
    assert state.one(id="fields").one(data_field="status").text() == "queued"
    fetch(ui, "q")
    fresh = page(ui, state.attrs["hx-get"])
    assert fresh.one(id="status").attrs["data-status"] == "running"
    assert fresh.one(id="fields").one(data_field="status").text() == "running"
    assert fresh.all("ol", id="timeline") == [] and fresh.all("nav") == []  # the fragment alone
    assert ui.delete(f"/job/{job_id}").status_code == 204
    assert page(ui, state.attrs["hx-get"]).one(id="status").attrs["data-status"] == "deleted"


def test_the_job_fields_read_as_json_writes_them(ui: TestClient) -> None:
    job_id = create_job(ui, "q")
    fields = page(ui, f"/ui/job/{job_id}").one(id="fields")
    assert fields.one(data_field="ended").text() == "false"
    assert not {"True", "False", "None"} & set(fields.text().replace('"', " ").split())


def test_labels_are_in_sentence_case(ui: TestClient) -> None:
    css = ui.get("/ui/static/ui.css").text
    assert "capitalize" not in css  # it would show "Events In The Stream"
    assert "::first-letter { text-transform: uppercase; }" in css  # a field name still starts a label
    assert "Events in the stream" in page(ui, "/ui/ledger").text()


def test_a_deleted_job_still_shows_its_timeline(ui: TestClient) -> None:
    job_id = create_job(ui, "q")
    assert ui.delete(f"/job/{job_id}").status_code == 204
    doc = page(ui, f"/ui/job/{job_id}")
    types = [i.attrs["data-type"] for i in doc.one("ol", id="timeline").all("li", data_event_id=True)]
    assert types == ["job_created", "job_deleted"]


def test_user_data_is_escaped(ui: TestClient) -> None:
    job_id = create_job(ui, "q", input={"x": "<script>alert(1)</script>"}, tags=["<b>t</b>"])
    html = ui.get(f"/ui/job/{job_id}").text + ui.get("/ui/queue/q").text + ui.get("/ui/events").text
    assert "<script>alert" not in html and "<b>t</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_event_data_shows_its_characters_as_they_are(ui: TestClient) -> None:
    job_id = create_job(ui, "q", tags=["<i>"])
    fetch(ui, "q")
    short, long = {"html": "<b>bold</b> & é"}, {"html": "<b>" + "x" * 200 + "</b>"}
    for output in (short, long):
        assert ui.put(f"/job/{job_id}/output", json=output).status_code == 204
    for path in (f"/ui/job/{job_id}", f"/ui/events?job={job_id}"):
        html = ui.get(path).text
        assert "\\u003c" not in html and "<b>" not in html and "<i>" not in html  # never escaped, never a tag
        assert "&lt;b&gt;bold&lt;/b&gt; &amp; é" in html
        doc = page(ui, path)
        items = doc.all("li", data_type="job_output_set")
        data = {i.one(class_="data").text() for i in items}
        assert json.dumps({"output": short}, ensure_ascii=False) in data  # short: inline, as sent
        (folded,) = [i.one("details", class_="data").one("pre") for i in items if i.all("details")]
        assert json.loads(folded.text()) == {"output": long}
    tags = page(ui, f"/ui/job/{job_id}").one(data_field="tags")
    assert [a.text() for a in tags.all("a", class_="tag chip")] == ["<i>"]  # a chip, not JSON


def test_the_events_page_shows_recent_events_and_filters(ui: TestClient) -> None:
    job_id = create_job(ui, "q")
    create_job(ui, "q")
    items = page(ui, "/ui/events").one("ol", id="events").all("li", data_event_id=True)
    assert [i.attrs["data-type"] for i in items][:3] == ["job_created", "job_created", "queue_created"]
    filtered = page(ui, f"/ui/events?job={job_id}").one("ol", id="events")
    assert [i.attrs["data-type"] for i in filtered.all("li", data_event_id=True)] == ["job_created"]
    assert f"job={job_id}" in filtered.attrs["sse-connect"]
    by_type = page(ui, "/ui/events?type=queue_created&actor=local").all("li", data_event_id=True)
    assert [i.attrs["data-type"] for i in by_type] == ["queue_created"]
    assert page(ui, "/ui/events?actor=nobody").all("li", data_event_id=True) == []


def test_the_filter_form_s_empty_fields_are_no_filter(ui: TestClient) -> None:
    create_job(ui, "q")
    events = page(ui, "/ui/events?type=&queue=q&job=&actor=").one("ol", id="events")
    types = [i.attrs["data-type"] for i in events.all("li", data_event_id=True)]
    assert types == ["job_created", "queue_created"]
    live = events.attrs["sse-connect"]  # the live feed is asked for the same
    assert "queue=q" in live and "type=" not in live and "job=" not in live and "actor=" not in live
    every = page(ui, "/ui/events?type=&queue=&job=&actor=").all("li", data_event_id=True)
    assert every == page(ui, "/ui/events").all("li", data_event_id=True) != []


def test_the_events_page_looks_back_past_events_its_filter_skips(ui: TestClient) -> None:
    response = ui.post("/queue/q/jobs", json=[{"input": i} for i in range(700)])
    assert response.status_code == 201, response.text
    items = page(ui, "/ui/events?type=queue_created&actor=local").all("li", data_event_id=True)
    assert [i.attrs["data-type"] for i in items] == ["queue_created"]  # 700 events back
    assert len(page(ui, "/ui/events").all("li", data_event_id=True)) == 100


def test_the_failed_page_lists_failed_and_timed_out_jobs_with_actions(ui: TestClient) -> None:
    put_queue(ui, "other")
    failed = create_job(ui, "q")
    timed_out = create_job(ui, "other")
    create_job(ui, "q")
    finish(ui, "q", "failed")
    finish(ui, "other", "timed_out")
    doc = page(ui, "/ui/failed")
    rows = doc.one("table", id="jobs").all("tr", data_job=True)
    assert [int(r.attrs["data-job"]) for r in rows] == [timed_out, failed]
    form = rows[0].one("form")
    assert form.attrs["action"] == f"/ui/job/{timed_out}/action" and form.attrs["method"] == "post"
    # a timed-out job that has ended cannot be cancelled (the ledger would say 409): not offered
    assert [b.attrs["value"] for b in form.all("button", name="action")] == ["requeue", "delete"]
    buttons = rows[1].one("form").all("button", name="action")
    assert [b.attrs["value"] for b in buttons] == ["requeue", "cancel", "delete"]


def test_the_launchers_page(ui: TestClient) -> None:
    put_queue(ui, "reports")
    body = {"type": "@interval", "arguments": "1h", "queue": "reports"}
    launcher = ui.post("/launcher", json=body).json()["id"]
    row = page(ui, "/ui/launchers").one("table", id="launchers").one("tr", data_launcher=str(launcher))
    assert row.one(data_field="fired").text() == "0" and row.one(data_field="skipped").text() == "0"
    assert row.one(data_field="next_at").one("time").text().endswith("Z")


def test_the_ledger_page_counts_events(ui: TestClient) -> None:
    create_job(ui, "q")
    doc = page(ui, "/ui/ledger")
    assert doc.one(id="event-count").attrs["data-count"] == "2"  # queue_created, job_created
    assert doc.one(id="archive").text() == "nothing archived"
    assert doc.one("form", id="verify").attrs["action"] == "/ui/ledger/verify"


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/ui/job/999", 404, "job 999 does not exist"),
        ("/ui/job/abc", 404, "does not exist"),
        ("/ui/queue/nope", 404, "queue 'nope' does not exist"),
        ("/ui/queue/q?page=0", 400, "page must be an integer"),
        ("/ui/queue/q?page=x", 400, "page must be an integer"),
        ("/ui/queue/q?status=lost", 400, "unknown status 'lost'"),
        ("/ui/failed?page=-1", 400, "page must be an integer"),
        ("/ui/events?type=nonsense", 400, "unknown event type"),
        ("/ui/events?job=x", 400, "job must be a positive integer"),
        ("/ui/ledger/verify/unknown", 404, "no such verify run"),
    ],
)
def test_bad_input_is_a_clear_error_page(ui: TestClient, path: str, status: int, says: str) -> None:
    doc = page(ui, path, status)
    assert says in doc.one(id="flash").text()
    assert doc.one(id="error").attrs["data-status"] == str(status)


def test_the_static_assets_are_served(ui: TestClient) -> None:
    for name in ("htmx.min.js", "htmx-ext-sse.min.js", "ui.css", "LICENSE-htmx.txt"):
        assert ui.get(f"/ui/static/{name}").status_code == 200
    assert "htmx" in ui.get("/ui/static/htmx.min.js").text
    assert ui.get("/ui/static/nothing.js").status_code == 404


def test_with_auth_off_the_sign_in_page_sends_to_the_dashboard(ui: TestClient) -> None:
    response = ui.get("/ui/signin", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui"

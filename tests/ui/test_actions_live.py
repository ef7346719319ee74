"""Acting from the dashboard and watching it live, in a real browser with auth off: a failed job
requeued from the failed jobs page while its own page, open in another tab, grows its timeline as the
events happen; cancel and delete; the live ledger and its filters; a cross-site POST refused."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from jobledger.ledger.runner import Ledger
from tests.ui import story
from tests.ui.browser import Dashboard, expect
from tests.ui.conftest import OpenTab, api

if TYPE_CHECKING:
    from playwright.sync_api import Page

TIMELINE = "ol#timeline li[data-event-id]"


def action(page: Page, job: int, name: str) -> None:
    """Press the ``name`` button of ``job``'s form on the failed jobs page."""
    form = page.locator(f'form[action$="/ui/job/{job}/action"]')
    form.locator(f'button[name=action][value="{name}"]').click()


def test_a_requeue_grows_the_open_job_page_live(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        job = story.failed(http, "emails")
    watcher = tab(server, "job")
    timeline = watcher.open(f"/ui/job/{job}").locator(TIMELINE)
    expect(timeline).to_have_count(3)
    expect(watcher.page.locator("#status")).to_have_attribute("data-status", "failed")

    actor = tab(server, "failed")
    failed = actor.open("/ui/failed")
    action(failed, job, "requeue")
    expect(failed.locator("#flash")).to_be_visible()
    actor.shot("requeued")

    expect(timeline).to_have_count(4)
    expect(timeline.nth(3)).to_contain_text("job_requeued")
    expect(timeline.nth(3).locator(".actor")).to_have_text(re.compile(r"\blocal\b"))
    status = watcher.page.locator("#status")
    expect(status).to_have_attribute("data-status", "queued")  # was failed: the fields follow the timeline
    expect(watcher.page.locator('#fields [data-field="status"]')).to_have_text("queued")
    watcher.shot("after requeue")
    with api(server) as http:
        requeued = story.history(http, job)[-1]
        assert (requeued["type"], requeued["actor"]) == ("job_requeued", "local")
        assert story.status(http, job) == "queued"
        story.start(http, "emails", job)  # a worker takes it: the page shows that too, as it happens
    expect(timeline).to_have_count(5)
    expect(timeline.nth(4)).to_contain_text("job_started")
    expect(timeline.nth(4).locator(".since")).not_to_be_empty()
    expect(status).to_have_attribute("data-status", "running")
    expect(status).to_have_text("running")
    watcher.shot("after start")


def test_cancel_and_delete_from_the_failed_jobs_page(server: str, tab: OpenTab, ledger: Ledger) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        cancelled = story.failed(http, "emails")
        deleted = story.failed(http, "emails")
        late = story.timed_out(http, ledger, "emails")
    dash = tab(server)
    page = dash.open("/ui/failed")
    for job in (cancelled, deleted, late):
        expect(page.locator(f'form[action$="/ui/job/{job}/action"]')).to_have_count(1)
    action(page, cancelled, "cancel")
    expect(page.locator("#flash")).to_contain_text(str(cancelled))
    dash.shot("cancelled")
    page = dash.open("/ui/failed", "failed again")
    action(page, deleted, "delete")
    expect(page.locator("#confirm-says")).to_contain_text("history stays")  # asked first
    dash.shot("delete asked")
    page.locator("#confirm button[type=submit]").click()
    expect(page.locator("#flash")).to_contain_text(str(deleted))
    dash.shot("deleted")
    with api(server) as http:
        assert story.status(http, cancelled) == "cancelled"
        assert http.get(f"/job/{deleted}").status_code == 404
        assert story.history(http, cancelled)[-1]["actor"] == "local"
    page = dash.open("/ui/failed", "failed at last")
    expect(page.locator(f'form[action$="/ui/job/{late}/action"]')).to_have_count(1)
    for gone in (cancelled, deleted):
        expect(page.locator(f'form[action$="/ui/job/{gone}/action"]')).to_have_count(0)


def _newest_event(server: str, job: int) -> str:
    with api(server) as http:
        return str(story.history(http, job)[-1]["id"])


def test_the_live_ledger_shows_events_as_they_happen(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.queue(http, "reports")
    dash = tab(server)
    page = dash.open("/ui/events")
    with api(server) as http:
        job = story.create(http, "emails")
    expect(page.locator(f'#events [data-event-id="{_newest_event(server, job)}"]')).to_be_visible()
    expect(page.locator("#events")).to_contain_text("job_created")
    dash.shot("live event")


def set_filter(page: Page, name: str, value: str) -> None:
    """Set the filter form's field ``name`` (a text box or a list) and submit the form."""
    field = page.locator(f"form [name={name}]").first
    if field.evaluate("e => e.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)
    field.evaluate("e => e.form.requestSubmit()")


def test_the_live_ledger_filters(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.queue(http, "reports")
        before = story.create(http, "reports")
    dash = tab(server)
    page = dash.open("/ui/events?queue=reports")
    expect(page.locator(f'#events [data-event-id="{_newest_event(server, before)}"]')).to_be_visible()
    dash.shot("filtered by queue")
    with api(server) as http:
        hidden = story.create(http, "emails")
        shown = story.create(http, "reports")
    expect(page.locator(f'#events [data-event-id="{_newest_event(server, shown)}"]')).to_be_visible()
    expect(page.locator(f'#events [data-event-id="{_newest_event(server, hidden)}"]')).to_have_count(0)

    page = dash.open(f"/ui/events?type=job_failed&job={shown}", "filtered by type and job")
    with api(server) as http:
        story.queue(http, "invoices")
        other = story.failed(http, "invoices")
        story.start(http, "reports", before)
        story.start(http, "reports", shown)
        story.end(http, shown, "failed", error={"message": "no"})
    expect(page.locator(f'#events [data-event-id="{_newest_event(server, shown)}"]')).to_be_visible()
    expect(page.locator(f'#events [data-event-id="{_newest_event(server, other)}"]')).to_have_count(0)
    expect(page.locator("#events")).not_to_contain_text("job_started")


def test_the_live_ledger_filter_form(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "reports")
        job = story.create(http, "reports")
    dash = tab(server)
    page = dash.open("/ui/events")
    set_filter(page, "queue", "reports")
    page.wait_for_url(re.compile(r"/ui/events\?.*queue=reports"))
    dash.shot("filter form")
    shown = page.locator(f'#events [data-event-id="{_newest_event(server, job)}"]')
    expect(shown).to_be_visible(timeout=2000)  # the page is rendered by now: no live wait


def cross_site_post(dash: Dashboard, server: str, job: int, name: str) -> int:
    """From a page of another site, a form that POSTs ``name`` for ``job`` to the dashboard, sent as
    a browser sends it; the status it was answered with."""
    evil = "http://localhost:1/prize.html"
    html = (f'<form id="f" method="post" action="{server}/ui/job/{job}/action">'
            f'<input name="action" value="{name}"><input name="csrf" value="guess"></form>'
            '<script>document.getElementById("f").submit()</script>')  # fmt: skip
    dash.page.route(evil, lambda route: route.fulfill(status=200, content_type="text/html", body=html))
    with dash.page.expect_response(lambda r: r.url.endswith(f"/ui/job/{job}/action")) as answer:
        dash.page.goto(evil)
    dash.shot("cross-site post")
    return answer.value.status


def test_a_cross_site_post_is_refused(server: str, tab: OpenTab, ledger: Ledger) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        job = story.failed(http, "emails")
    length = story.event_count(ledger)
    status = cross_site_post(tab(server), server, job, "delete")
    assert status == 403, status
    assert story.event_count(ledger) == length
    with api(server) as http:
        assert story.status(http, job) == "failed"

"""Every page of the dashboard in a real browser, with auth off: reached through the nav bar, showing
what the ledger holds; a queue's jobs paged, filtered and searched; a job's fields, input and output,
errors and timeline; launchers; the ledger and a verify run."""

from __future__ import annotations

import json
import re
import time

import httpx2

from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import check, tick
from tests.ui import story
from tests.ui.browser import expect
from tests.ui.conftest import OpenTab, api

#: Every page the nav bar links, with an element each must show.
PAGES = {
    "/ui": "#queues",
    "/ui/events": "#events",
    "/ui/failed": "#flash, form, table, main",
    "/ui/launchers": "#launchers",
    "/ui/ledger": "#event-count",
}


def test_every_page_is_reached_from_the_nav_bar(server: str, tab: OpenTab, ledger: Ledger) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.completed(http, "emails")
        story.failed(http, "emails")
        story.create(http, "emails")
    dash = tab(server)
    page = dash.open("/ui")
    row = page.locator('#queues tr[data-queue="emails"]')
    expect(row.locator('td[data-status="queued"]')).to_have_text(re.compile(r"^\s*1\s*$"))
    expect(row.locator('td[data-status="completed"]')).to_have_text(re.compile(r"^\s*1\s*$"))
    expect(row.locator('td[data-status="failed"]')).to_have_text(re.compile(r"^\s*1\s*$"))
    expect(row.locator("td[data-throughput]")).to_have_count(1)
    for path, shown in PAGES.items():
        page.locator(f'nav a[href="{path}"]').first.click()
        page.wait_for_url(re.compile(re.escape(path) + r"(\?.*)?$"))
        expect(page.locator(shown).first).to_be_visible()
        dash.shot(f"nav {path}")
        width, screen = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width <= screen, (path, width, screen)  # a desktop's window shows the whole page


def test_the_queues_overview_shows_paused_and_throughput(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.queue(http, "reports")
        for _ in range(3):
            story.completed(http, "emails")
        assert http.put("/queue/reports/pause").status_code in (200, 204)
    page = tab(server).open("/ui")
    expect(page.locator('#queues tr[data-queue="reports"]')).to_contain_text(re.compile("paused", re.I))
    expect(page.locator('#queues tr[data-queue="emails"]')).not_to_contain_text(re.compile("paused", re.I))
    throughput = page.locator('#queues tr[data-queue="emails"] td[data-throughput]')
    expect(throughput).to_contain_text("3")


def test_a_queue_page_pages_filters_and_searches(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        failed = story.failed(http, "emails", message="bounced")
        queued = [story.create(http, "emails", tags=["vip"] if n % 4 == 0 else []) for n in range(120)]
        grace = story.create(http, "emails", input={"to": "grace@example.org", "plan": "annual"})
    dash = tab(server)
    page = dash.open("/ui/queue/emails")
    rows = page.locator("#jobs tr[data-job]")
    first = set(rows.evaluate_all("rows => rows.map(r => r.dataset.job)"))
    assert first and len(first) < 121, "the first page shows some of the jobs, not all"

    page.locator("a[rel=next]").first.click()
    expect(page.locator("a[rel=prev]").first).to_be_visible()
    second = set(rows.evaluate_all("rows => rows.map(r => r.dataset.job)"))
    assert second and not second & first, "the next page shows other jobs"
    dash.shot("next page")
    page.locator("a[rel=prev]").first.click()
    expect(rows).to_have_count(len(first))

    page = dash.open("/ui/queue/emails?status=failed", "status failed")
    expect(rows).to_have_count(1)
    expect(page.locator(f'#jobs tr[data-job="{failed}"]')).to_be_visible()

    page = dash.open("/ui/queue/emails?status=queued&tag=vip", "tag vip")
    tagged = {str(j) for n, j in enumerate(queued) if n % 4 == 0}
    shown = set(rows.evaluate_all("rows => rows.map(r => r.dataset.job)"))
    assert shown and shown <= tagged, shown - tagged

    page = dash.open("/ui/queue/emails", "before a search")
    page.locator("form#filters input[name=search]").fill("grace@example")
    page.locator("form#filters input[name=search]").press("Enter")
    expect(rows).to_have_count(1)
    expect(page.locator(f'#jobs tr[data-job="{grace}"]')).to_be_visible()
    expect(page.locator("#search-pager")).to_contain_text("searched the whole queue")
    dash.shot("found by an input value")

    page.locator("form#search input[name=id]").fill(str(queued[7]))
    page.locator("form#search input[name=id]").press("Enter")
    page.wait_for_url(re.compile(rf"/ui/job/{queued[7]}$"))
    expect(page.locator("#fields")).to_contain_text("emails")
    dash.shot("search result")


def test_a_job_page_shows_fields_json_errors_and_its_timeline(
    server: str, tab: OpenTab, ledger: Ledger
) -> None:
    with api(server) as http:
        story.queue(http, "emails", retries=1)
        job = story.create(http, "emails", input={"to": "ada@example.org", "attempt": [1, 2]})
        story.start(http, "emails", job)
        story.end(http, job, "failed", error={"message": "mx down", "traceback": story.TRACEBACK})
        assert [int(j) for j in check(ledger, "retries")] == [job]
        story.start(http, "emails", job)
        story.end(http, job, "completed", output={"sent": True, "id": "m-1"})
        events = story.history(http, job)
    page = tab(server).open(f"/ui/job/{job}")
    expect(page.locator("#fields")).to_contain_text("completed")
    for where, value in (("#input", {"to": "ada@example.org", "attempt": [1, 2]}),
                         ("#output", {"sent": True, "id": "m-1"})):  # fmt: skip
        text = page.locator(where).inner_text()
        assert json.loads(text) == value, text
        assert "\n" in text.strip(), f"{where} is not formatted over lines: {text!r}"
    expect(page.locator("#errors")).to_contain_text("mx down")
    expect(page.locator("#errors")).to_contain_text("ConnectionError: mx down")
    items = page.locator("ol#timeline li[data-event-id]")
    expect(items).to_have_count(len(events))
    assert {e["actor"] for e in events} == {"local", "scheduler"}
    assert items.evaluate_all("li => li.map(e => e.dataset.eventId)") == [e["id"] for e in events]
    for n, event in enumerate(events):
        item = items.nth(n)
        expect(item).to_contain_text(event["type"])
        expect(item.locator(".actor")).to_have_text(re.compile(rf"\b{event['actor']}\b"))
        expect(item.locator(".since")).to_have_count(1)


def test_the_launchers_page_shows_firings_and_the_last_job(server: str, tab: OpenTab, ledger: Ledger) -> None:
    with api(server) as http:
        story.queue(http, "reports")
        response = http.post("/launcher", json={"type": "@interval", "arguments": "1s", "queue": "reports"})
        assert response.status_code == 201, response.text
        launcher = response.json()["id"]
    time.sleep(1.05)
    fired = tick(ledger)["launchers"]
    assert fired, "the launcher fired"
    with api(server) as http:
        job = http.get("/queue/reports/job").json()["id"]
    page = tab(server).open("/ui/launchers")
    row = page.locator("#launchers tr", has_text="reports").first
    expect(row).to_contain_text(str(launcher))
    link = row.locator(f'a[href$="/ui/job/{job}"]')
    expect(link).to_be_visible()
    link.click()
    page.wait_for_url(re.compile(rf"/ui/job/{job}$"))
    expect(page.locator("ol#timeline li[data-event-id]").first).to_contain_text("job_created")


def test_the_ledger_page_counts_events_and_runs_verify(server: str, tab: OpenTab, ledger: Ledger) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.completed(http, "emails")
    dash = tab(server)
    page = dash.open("/ui/ledger")
    count = story.event_count(ledger)
    expect(page.locator("#event-count")).to_contain_text(
        f"{count:,}".replace(",", "") if count < 1000 else ""
    )
    expect(page.locator("#archive")).to_be_visible()
    page.locator(
        'form[action$="/ui/ledger/verify"] button, form[action$="/ui/ledger/verify"] input[type=submit]'
    ).first.click()
    expect(page.locator("#verify-result")).to_contain_text(re.compile(r"\bok\b", re.I), timeout=30_000)
    dash.shot("verified")
    assert story.event_count(ledger) == count, "verify appends nothing"


def test_an_unknown_job_is_a_clear_not_found_page(server: str, tab: OpenTab) -> None:
    response = tab(server).page.goto(f"{server}/ui/job/999999")
    assert response is not None and response.status == 404
    with httpx2.Client(base_url=server) as http:
        assert http.get("/ui/job/999999").status_code == 404

"""The daily operations in a real browser, auth off: pause and resume a queue from the queues page
and watch its counts move live; narrow the failed page by queue, error kind and time; requeue all it
matches, after a preview and a confirmation, and watch the operation's counts move; and every page
at a phone's size (390x844), screenshot saved for a person to look at."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from jobledger.ledger.runner import Ledger
from jobledger.server import bulk_runs
from tests.ui import story
from tests.ui.browser import expect
from tests.ui.conftest import OpenTab, api

PHONE = {"width": 390, "height": 844}


def test_pause_resume_and_counts_moving_live(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.create(http, "emails")
    dash = tab(server)
    page = dash.open("/ui")
    row = page.locator('#queues tr[data-queue="emails"]')
    expect(row.locator('td[data-status="queued"]')).to_have_text(re.compile(r"^\s*1\s*$"))
    row.locator('button[value="pause"]').click()
    expect(page.locator("#flash")).to_have_text("queue emails paused by local")
    expect(row.locator("td[data-paused]")).to_have_attribute("data-paused", "true")
    with api(server) as http:  # paused: a worker gets nothing; producers still add
        assert http.get("/queue/emails/job").status_code == 204
        for _ in range(2):
            story.create(http, "emails")
    expect(row.locator('td[data-status="queued"]')).to_have_text(re.compile(r"^\s*3\s*$"))  # no reload
    dash.shot("paused, counts moved")
    row.locator('button[value="resume"]').click()
    expect(row.locator("td[data-paused]")).to_have_attribute("data-paused", "false")
    with api(server) as http:
        job = story.create(http, "emails")
        fetched = http.get("/queue/emails/job").json()["id"]
        story.end(http, fetched, "completed")
        assert [e["actor"] for e in http.get("/events", params={"queue": "emails"}).json()["events"]
                if e["type"] in ("queue_paused", "queue_resumed")] == ["local", "local"]  # fmt: skip
    expect(row.locator('td[data-status="completed"]')).to_have_text(re.compile(r"^\s*1\s*$"))
    expect(row.locator("svg.chart g[data-minutes-ago]")).to_have_count(1)
    expect(row.locator('dd[data-total="completed"]')).to_have_text("1")
    dash.shot("resumed, a run in the chart")
    assert job


def test_drain_asks_then_empties_the_queue(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        for _ in range(3):
            story.create(http, "emails")
    dash = tab(server)
    page = dash.open("/ui")
    row = page.locator('#queues tr[data-queue="emails"]')
    row.locator('button[value="drain"]').click()
    expect(page.locator("h1")).to_have_text("Drain queue emails?")
    dash.shot("drain asked")
    page.locator("#confirm button[type=submit]").click()
    expect(page.locator("#flash")).to_have_text("queue emails: 3 waiting jobs cancelled by local")
    expect(row.locator('td[data-status="cancelled"]')).to_have_text(re.compile(r"^\s*3\s*$"))


def test_the_failed_page_filters(server: str, tab: OpenTab) -> None:
    with api(server) as http:
        story.queue(http, "emails")
        story.queue(http, "reports")
        smtp = story.failed(
            http,
            "emails",
            "relay refused",
        )
        story.end(http, story.create(http, "emails"), "cancelled")
        dns = story.create(http, "reports")
        story.start(http, "reports", dns)
        story.end(http, dns, "failed", error={"kind": "DNSError", "message": "no such host"})
    dash = tab(server)
    page = dash.open("/ui/failed")
    rows = page.locator("#jobs tr[data-job]")
    expect(rows).to_have_count(2)
    expect(page.locator(f'tr[data-job="{dns}"] .error-kind')).to_have_text("DNSError")
    expect(page.locator(f'tr[data-job="{dns}"] .error-message')).to_have_text("no such host")
    page.locator("#failed-filters select[name=queue]").select_option("emails")
    page.locator("#failed-filters button[type=submit]").click()
    page.wait_for_url(re.compile(r"queue=emails"))
    expect(rows).to_have_count(1)
    expect(page.locator(f'tr[data-job="{smtp}"]')).to_have_count(1)
    page.locator("#failed-filters select[name=queue]").select_option("")
    page.locator("#failed-filters input[name=error_kind]").fill("DNSError")
    page.locator("#failed-filters input[name=since]").fill("2000-01-01T00:00")
    page.locator("#failed-filters button[type=submit]").click()
    page.wait_for_url(re.compile(r"error_kind=DNSError"))
    expect(rows).to_have_count(1)
    expect(page.locator(f'tr[data-job="{dns}"]')).to_have_count(1)
    dash.shot("filtered")
    page.locator("#failed-filters input[name=since]").fill("2999-01-01T00:00")
    page.locator("#failed-filters button[type=submit]").click()
    expect(rows).to_have_count(0)
    expect(page.locator("p.empty")).to_contain_text("match")


def test_every_page_at_a_phone_s_size(server: str, tab: OpenTab, ledger: Ledger) -> None:
    with api(server) as http:
        story.queue(http, "emails", timeout="10m", retries=2)
        story.queue(http, "reports")
        for n in range(3):
            story.completed(http, "emails", output={"sent": n})
        job = story.failed(http, "emails", tags=["welcome", "vip"], input={"to": "ada@example.com"})
        story.create(http, "reports")
        assert http.post("/launcher", json={"type": "@interval", "arguments": "1h", "queue": "reports"})
    dash = tab(server, "phone")
    dash.page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    for path in ("/ui", "/ui/queue/emails", f"/ui/job/{job}", "/ui/failed", "/ui/events", "/ui/launchers",
                 "/ui/ledger"):  # fmt: skip
        page = dash.open(path, f"phone {path}")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"] + 1, (path, width)  # nothing wider than the screen
    page = dash.open("/ui", "phone queues again")
    expect(page.locator('#queues tr[data-queue="emails"] td[data-label="Queue"]')).to_be_visible()


def _ended_badly(http: httpx2.Client, queue: str, n: int, status: str) -> list[int]:
    """``n`` jobs of ``queue`` that ran and ended ``failed`` or ``timed_out``, in one batch each way."""
    made = http.post(f"/queue/{queue}/jobs", json=[{"input": {"n": i}} for i in range(n)]).json()
    taken = http.get(f"/queue/{queue}/job", params={"count": n}).json()
    assert sorted(j["id"] for j in taken) == sorted(made)
    error = {"kind": "SMTPError", "message": "relay refused"}
    updates = [{"id": j["id"], "status": status, "error": error} for j in taken]
    assert http.patch("/jobs", json={"updates": updates}).status_code == 200
    return list(made)


def test_bulk_requeue_asks_with_a_count_then_its_counts_move_live(
    server: str, tab: OpenTab, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_batches(monkeypatch, size=10, pause=0.05)  # 30 batches: the page sees it run
    with api(server) as http:
        story.queue(http, "emails")
        story.queue(http, "reports")
        mine = _ended_badly(http, "emails", 240, "failed") + _ended_badly(http, "emails", 60, "timed_out")
        theirs = _ended_badly(http, "reports", 20, "failed")
    dash = tab(server)
    page = dash.open("/ui/failed")
    page.locator("#failed-filters select[name=queue]").select_option("emails")
    page.locator("#failed-filters button[type=submit]").click()
    page.wait_for_url(re.compile(r"queue=emails"))
    page.locator('#bulk-matching button[value="requeue"]').click()
    expect(page.locator("h1")).to_have_text("Requeue 300 matching jobs?")
    expect(page.locator("#confirm-says")).to_contain_text("of queue emails")
    dash.shot("bulk requeue asked")
    with api(server) as http:  # nothing done before the confirmation
        assert http.get("/queue/emails/size").json() == 0
    page.locator("#confirm button[type=submit]").click()
    page.wait_for_url(re.compile(r"/ui/bulk/"))
    expect(page.locator("#bulk-state")).to_have_text("running…")
    expect(page.locator("#bulk-progress")).to_have_attribute("max", "300")
    dash.shot("bulk requeue running")
    expect(page.locator("#bulk-counts")).to_have_attribute("data-finished", "true")  # no reload
    expect(page.locator("#bulk-done")).to_have_text("300")
    expect(page.locator("#bulk-matched")).to_have_text("300")
    expect(page.locator('dd[data-filter="status"]')).to_have_text("failed, timed_out")
    dash.shot("bulk requeue finished")
    with api(server) as http:
        assert {story.status(http, j) for j in mine} == {"queued"}
        assert {story.status(http, j) for j in theirs} == {"failed"}
    page = dash.open("/ui")
    row = page.locator('#queues tr[data-queue="emails"]')
    expect(row.locator('td[data-status="queued"]')).to_have_text(re.compile(r"^\s*300\s*$"))
    expect(row.locator('td[data-status="failed"]')).to_have_text(re.compile(r"^\s*0\s*$"))
    page = dash.open("/ui/failed")
    expect(page.locator("#jobs tr[data-job]")).to_have_count(20)
    dash.page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    page.locator('#bulk-matching button[value="cancel"]').click()
    expect(page.locator("h1")).to_have_text("Cancel 20 matching jobs?")
    dash.shot("phone bulk cancel asked")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"] + 1
    page.locator("#confirm button[type=submit]").click()
    expect(page.locator("#bulk-done")).to_have_text("20")
    dash.shot("phone bulk cancel finished")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"] + 1


def slow_batches(monkeypatch: pytest.MonkeyPatch, size: int, pause: float) -> None:
    """Bulk operations of the served app (in this process) in batches of ``size``, ``pause`` seconds
    apart."""
    monkeypatch.setattr(bulk_runs, "BATCH", size)
    original = bulk_runs.batches

    async def slowed(*args: Any) -> AsyncIterator[list[int]]:
        async for ids in original(*args):
            await asyncio.sleep(pause)
            yield ids

    monkeypatch.setattr(bulk_runs, "batches", slowed)

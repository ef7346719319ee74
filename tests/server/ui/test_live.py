"""The dashboard's live feeds against a live server: a job's timeline and the ledger, as HTML items
over Server-Sent Events, and a feed opened with a session ends when its token is revoked."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2

from jobledger.ledger.durations import parse_time
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret, revoke_token
from jobledger.server.ui.render import duration
from jobledger.server.ui.session import COOKIE
from tests.server.ui.html import Element, parse
from tests.support.ledger import create, fetch_one, put_queue, update
from tests.support.live_server import live_server


def blocks(response: httpx2.Response) -> Iterator[tuple[str | None, str]]:
    """Each SSE block that carries data: its event name (None for a message) and its data."""
    name, data = None, []
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            yield name, "\n".join(data)
            name, data = None, []


def item(data: str) -> Element:
    (li,) = parse(data).all("li")
    return li


def test_a_jobs_timeline_grows_live(server: str, ledger: Ledger) -> None:
    put_queue(ledger, "q")
    job_id = create(ledger, "q")
    page = parse(httpx2.get(f"{server}/ui/job/{job_id}").text)
    stream = page.one("ol", id="timeline").attrs["sse-connect"]
    with httpx2.Client(base_url=server, timeout=10) as http, http.stream("GET", stream) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        feed = blocks(r)
        fetched = fetch_one(ledger, "q")
        started = item(next(feed)[1])
        update(ledger, job_id, status="completed", attempt=fetched.attempt)
        completed = item(next(feed)[1])
    assert (started.attrs["data-type"], completed.attrs["data-type"]) == ("job_started", "job_completed")
    assert started.one(class_="actor").text() == "local"
    assert started.one(class_="since").text().startswith("+") and completed.one(class_="since").text()


def test_a_reconnecting_timeline_goes_on_after_the_last_event_it_was_sent(
    server: str, ledger: Ledger
) -> None:
    put_queue(ledger, "q")
    job_id = create(ledger, "q")
    first = parse(httpx2.get(f"{server}/ui/job/{job_id}").text).one("li", data_event_id=True)
    time.sleep(0.05)
    fetched = fetch_one(ledger, "q")
    update(ledger, job_id, status="completed", attempt=fetched.attempt)
    stream = f"/ui/job/{job_id}/stream?after=0-0&prev=0"  # the page's query; the header wins
    headers = {"last-event-id": first.attrs["data-event-id"]}
    with httpx2.Client(base_url=server, timeout=10) as http, http.stream("GET", stream, headers=headers) as r:
        feed = blocks(r)
        started, completed = item(next(feed)[1]), item(next(feed)[1])
    assert (started.attrs["data-type"], completed.attrs["data-type"]) == ("job_started", "job_completed")
    times = [parse_time(e.one("time").attrs["datetime"]) for e in (first, started, completed)]
    assert started.one(class_="since").text() == "+" + duration(times[1] - times[0])  # from the job's event
    assert completed.one(class_="since").text() == "+" + duration(times[2] - times[1])


def test_the_live_ledger_sends_only_what_matches_its_filters(server: str, ledger: Ledger) -> None:
    put_queue(ledger, "q")
    put_queue(ledger, "other")
    with (
        httpx2.Client(base_url=server, timeout=10) as http,
        http.stream("GET", "/ui/events/stream", params={"queue": "q", "type": "job_created"}) as r,
    ):
        feed = blocks(r)
        create(ledger, "other")
        wanted = create(ledger, "q", input={"x": "<b>"})
        shown = item(next(feed)[1])
    assert (
        shown.attrs["data-type"] == "job_created" and shown.one("a", class_="job").text() == f"job {wanted}"
    )
    assert "<b>" not in shown.text() or "&lt;b&gt;" not in shown.text()


def test_a_feed_opened_with_a_session_ends_when_the_token_is_revoked(
    redis_url: str, namespace: str, ledger: Ledger
) -> None:
    secret = new_secret()
    ledger.run(create_token("watcher", ["read"], digest(secret)))
    with live_server(redis_url, namespace, auth=True) as url:
        cookies = {COOKIE: secret}
        with (
            httpx2.Client(base_url=url, timeout=10, cookies=cookies) as http,
            http.stream("GET", "/ui/events/stream") as r,
        ):
            assert r.status_code == 200
            feed = blocks(r)
            ledger.run(revoke_token("watcher"))
            ended = [(name, data) for name, data in feed]  # the token_revoked event may come first
    assert ended[-1][0] == "error" and '"status":401' in ended[-1][1]


def test_a_feed_without_a_session_is_sent_to_sign_in(redis_url: str, namespace: str) -> None:
    with live_server(redis_url, namespace, auth=True) as url:
        response = httpx2.get(f"{url}/ui/events/stream", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/ui/signin")

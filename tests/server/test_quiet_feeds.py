"""Every live feed across a quiet spell longer than redis-py 8's default socket timeout (5 s), in
real time, since the quiet spell is what is tested: the SSE stream keeps its connection and its
keep-alives, ``Client.wait`` / ``AsyncClient.wait`` / ``follow`` return or deliver what comes after
it, and a long-polling fetch gets the job created after it.  Nothing is logged meanwhile."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx2
import pytest

from jobledger.client import AsyncClient, Client, Event, Job
from jobledger.ledger.runner import Ledger
from tests.support.ledger import create, fetch_one, put_queue, update
from tests.support.live_server import live_server

#: Seconds with no event at all: longer than redis-py 8's default socket timeout.
QUIET = 6.5
#: How long an observer may take to see what happened after the quiet spell.
MARGIN = 3.0


def with_query(url: str, option: str) -> str:
    return url + ("&" if "?" in url else "?") + option


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


class Lines:
    """The lines of a streamed answer, read in a thread, each with when it came."""

    def __init__(self, response: httpx2.Response) -> None:
        self.got: list[tuple[float, str]] = []
        self.started = time.monotonic()
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(response,), daemon=True)
        self._thread.start()

    def _read(self, response: httpx2.Response) -> None:
        try:
            for line in response.iter_lines():
                self.got.append((time.monotonic() - self.started, line))
                if line.startswith("data: ") or line.startswith("event: "):
                    break
        except httpx2.HTTPError as exc:
            self.got.append((time.monotonic() - self.started, f"!{type(exc).__name__}"))
        finally:
            self.done.set()


def test_the_event_stream_keeps_its_connection_and_its_keep_alives_through_a_quiet_spell(
    redis_url: str, namespace: str, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """Through a Redis URL that sets a 3 s socket timeout: however short the timeout of the
    server's client, its blocking reads end before it, with a keep-alive each time."""
    put_queue(ledger, "q")
    with (
        live_server(with_query(redis_url, "socket_timeout=3"), namespace) as url,
        httpx2.Client(base_url=url, timeout=httpx2.Timeout(10, read=20)) as http,
        http.stream("GET", "/events/stream") as response,
    ):
        assert response.status_code == 200
        lines = Lines(response)
        time.sleep(QUIET)
        job_id = create(ledger, "q")
        assert lines.done.wait(MARGIN)
    keep_alives = [at for at, line in lines.got if line == ": keep-alive"]
    assert len(keep_alives) >= 2, lines.got  # one about every 2 s
    assert all(at < QUIET for at in keep_alives)
    last_at, last = lines.got[-1]
    assert last.startswith("data: "), lines.got  # not an `event: error`, not a dropped connection
    assert f'"job":{job_id}' in last and QUIET <= last_at < QUIET + MARGIN
    assert warnings_logged(caplog) == []


def _wait_sync(url: str, job_id: int) -> tuple[Job, float]:
    started = time.monotonic()
    with Client(url) as api:
        return api.wait(job_id, timeout=15), time.monotonic() - started


def _wait_async(url: str, job_id: int) -> tuple[Job, float]:
    async def wait() -> tuple[Job, float]:
        started = time.monotonic()
        async with AsyncClient(url) as api:
            return await api.wait(job_id, timeout=15), time.monotonic() - started

    return asyncio.run(wait())


def _follow_sync(url: str, job_id: int) -> list[Event]:
    with Client(url) as api:
        return _until_completed(api.follow(job=job_id))


def _follow_async(url: str, job_id: int) -> list[Event]:
    async def follow() -> list[Event]:
        seen: list[Event] = []
        async with AsyncClient(url) as api:
            feed = api.follow(job=job_id)
            async for event in feed:
                seen.append(event)
                if event.type == "job_completed":
                    break
            await feed.aclose()
        return seen

    return asyncio.run(follow())


def _until_completed(events: Iterator[Event]) -> list[Event]:
    seen = []
    for event in events:
        seen.append(event)
        if event.type == "job_completed":
            break
    return seen


def _in_threads(*calls: Callable[[], Any]) -> list[Future[Any]]:
    pool = ThreadPoolExecutor(len(calls))
    futures = [pool.submit(call) for call in calls]
    pool.shutdown(wait=False)
    return futures


def test_waits_and_follows_see_what_comes_after_a_quiet_spell(
    server: str, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    put_queue(ledger, "q")
    job_id = create(ledger, "q")
    started = fetch_one(ledger, "q")
    waits = _in_threads(lambda: _wait_sync(server, job_id), lambda: _wait_async(server, job_id))
    follows = _in_threads(lambda: _follow_sync(server, job_id), lambda: _follow_async(server, job_id))
    time.sleep(QUIET)
    assert not any(f.done() for f in waits + follows), [f.exception() for f in waits + follows if f.done()]
    update(ledger, job_id, status="completed", attempt=started.attempt, output="done")
    for future in waits:
        job, after = future.result(timeout=MARGIN)
        assert (job.status, job.output) == ("completed", "done")
        assert QUIET <= after < QUIET + MARGIN
    for future in follows:
        assert [e.type for e in future.result(timeout=MARGIN)] == ["job_completed"]
    assert warnings_logged(caplog) == []


def test_a_long_poll_gets_the_job_created_after_a_quiet_spell(
    server: str, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """Over plain HTTP, and through a client whose own timeout (3 s) is shorter than the wait."""
    put_queue(ledger, "q")

    def raw() -> tuple[httpx2.Response, float]:
        started = time.monotonic()
        with httpx2.Client(base_url=server, timeout=20) as http:
            return http.get("/queue/q/job", params={"wait": "10s"}), time.monotonic() - started

    def client() -> list[Any]:
        with Client(server, timeout=3) as api:
            return [job.id for job in api.fetch("q", wait=10)]

    polls = _in_threads(raw, client)
    time.sleep(QUIET)
    assert not any(f.done() for f in polls), [f.exception() for f in polls if f.done()]
    first, second = create(ledger, "q"), create(ledger, "q")
    response, after = polls[0].result(timeout=MARGIN)
    assert response.status_code == 200 and QUIET <= after < QUIET + MARGIN
    got = [response.json()["id"], *polls[1].result(timeout=MARGIN)]
    assert sorted(got) == [first, second]
    assert warnings_logged(caplog) == []

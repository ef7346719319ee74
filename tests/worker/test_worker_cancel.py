"""A running job cancelled, deleted or timed out elsewhere: its handler learns of it within about a
second, without heartbeats (an async handler is cancelled, a plain one sees ``ctx.cancelled``), and
the worker records nothing for that attempt."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable

import pytest

from jobledger.client import Client
from jobledger.ledger.runner import Ledger
from jobledger.replay.placement import misplaced
from jobledger.scheduler.loop import tick
from jobledger.worker.worker import JobContext
from tests.support.live_server import eventually
from tests.worker.worker_support import TRANSPORTS, make_worker, types, working

#: How soon a handler must learn of its cancellation (about a second, with a margin for a busy machine).
PROMPTLY = 1.5


def end_it(how: str, api: Client, ledger: Ledger) -> Callable[[int], object]:
    """What ends the running attempt from outside: a cancel, a delete, or the scheduler's timeout."""
    if how == "cancel":
        return api.cancel
    if how == "delete":
        return api.delete
    return lambda job_id: eventually(lambda: tick(ledger)["timeouts"] == [job_id], timeout=5)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("how", ["cancel", "delete", "timeout"])
def test_an_async_handler_is_cancelled_within_a_second(
    transport: str,
    how: str,
    api: Client,
    server: str,
    redis_url: str,
    namespace: str,
    ledger: Ledger,
    caplog: pytest.LogCaptureFixture,
) -> None:
    noticed: list[float] = []

    async def handler(job: JobContext) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            noticed.append(time.monotonic())
            assert job.cancelled and job.lost
            raise
        return "never"

    api.put_queue("q", timeout="1s" if how == "timeout" else "5m")
    job_id = api.submit("q")
    caplog.set_level(logging.INFO, logger="jobledger.worker")
    worker = make_worker(transport, handler, "q", server, redis_url, namespace)
    with working(worker):
        eventually(lambda: api.get(job_id).status == "running")
        time.sleep(1.0)  # past the moment after which the worker watches the job
        end_it(how, api, ledger)(job_id)
        ended = time.monotonic()
        eventually(lambda: noticed, timeout=5)
        assert noticed[0] - ended < PROMPTLY
        eventually(lambda: worker.counts["cancelled"] == 1, timeout=5)
    assert worker.counts["completed"] == 0
    if how != "delete":
        assert types(api, job_id)[-1] == {"cancel": "job_cancelled", "timeout": "job_timed_out"}[how]
    ended_as = "timed out" if how == "timeout" else "cancelled"
    assert f"job {job_id} (q, attempt 1): {ended_as} after" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert misplaced(ledger.client, namespace) == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_plain_handler_sees_ctx_cancelled_even_when_cancelled_at_once(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger
) -> None:
    """Cancelled before the worker watches its job: the first look at it sees the cancellation."""
    noticed: list[float] = []
    running = threading.Event()

    def handler(job: JobContext) -> str:
        running.set()
        deadline = time.monotonic() + 15
        while not job.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        noticed.append(time.monotonic())
        return "finished anyway"

    api.put_queue("q")
    job_id = api.submit("q")
    worker = make_worker(transport, handler, "q", server, redis_url, namespace)
    with working(worker):
        assert running.wait(10)
        api.cancel(job_id)
        cancelled = time.monotonic()
        eventually(lambda: noticed, timeout=15)
        eventually(lambda: worker.counts["cancelled"] == 1, timeout=5)
    assert noticed[0] - cancelled < PROMPTLY
    job = api.get(job_id)
    assert (job.status, job.output) == ("cancelled", None)
    assert "job_completed" not in types(api, job_id)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_jobs_of_one_queue_share_its_feed_and_each_learns_of_its_own_end(
    transport: str, api: Client, server: str, redis_url: str, namespace: str
) -> None:
    """Several long jobs at once: only the one cancelled is told, the others complete."""
    release = threading.Event()

    async def handler(job: JobContext) -> int:
        while not release.is_set():
            await asyncio.sleep(0.02)
        return job.id

    api.put_queue("q")
    ids = [api.submit("q") for _ in range(3)]
    worker = make_worker(transport, handler, "q", server, redis_url, namespace, concurrency=3)
    with working(worker):
        eventually(lambda: all(api.get(i).status == "running" for i in ids))
        time.sleep(1.0)
        api.cancel(ids[1])
        eventually(lambda: worker.counts["cancelled"] == 1, timeout=5)
        release.set()
        eventually(lambda: worker.counts["completed"] == 2, timeout=10)
    assert [api.get(i).status for i in ids] == ["completed", "cancelled", "completed"]

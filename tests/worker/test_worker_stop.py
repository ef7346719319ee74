"""Stopping a worker: no new job, running ones get the grace period, those still running after it are
handed back (running -> queued, ``job_returned``: no retry counted, the old attempt fenced off), and
a second signal hands them back at once.  In process, and as ``jobledger worker`` processes stopped
by signals; and a long-polling fetch whose client hangs up starts no job for nobody."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from pathlib import Path

import httpx2
import pytest

from jobledger.client import Client, Conflict
from jobledger.ledger.runner import Ledger
from jobledger.replay.placement import misplaced
from jobledger.worker.worker import JobContext
from tests.support.live_server import eventually
from tests.worker.worker_support import (
    TRANSPORTS,
    cli_transport_args,
    cli_worker,
    make_worker,
    read_until,
    types,
    wait_for,
    working,
)


def assert_handed_back(api: Client, ledger: Ledger, job_id: int, worker_id: str | None = None) -> None:
    """The job went back to its queue by ``job_returned``, with no retry counted, and the attempt it
    ran as can no longer act on it."""
    job = api.get(job_id)
    assert (job.status, job.ended, job.retries_attempted, job.attempt) == ("queued", False, 0, 1)
    returned = api.history(job_id)[-1]
    assert returned.type == "job_returned" and returned.data["attempt"] == 1
    if worker_id is not None:
        assert returned.data["worker"] == worker_id
    with pytest.raises(Conflict):
        api.complete(job_id, "late", attempt=1)
    with pytest.raises(Conflict):
        api.heartbeat(job_id, attempt=1)
    assert misplaced(ledger.client, ledger.keys.namespace) == []
    (again,) = api.fetch("q")
    assert (again.id, again.attempt) == (job_id, 2)


# In process


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stop_takes_no_new_job_and_lets_running_ones_finish(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, gate: threading.Event
) -> None:
    running = threading.Event()

    def handler(job: JobContext) -> str:
        running.set()
        wait_for(gate)
        return "finished"

    api.put_queue("q")
    first, second = api.submit("q"), api.submit("q")
    worker = make_worker(transport, handler, "q", server, redis_url, namespace, grace_period=15)
    with working(worker, stop=False):
        assert running.wait(10)
        worker.stop()
        gate.set()
    assert api.get(first).status == "completed"
    assert api.get(second).status == "queued"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", ["async", "plain"])
def test_stop_hands_back_jobs_still_running_after_the_grace_period(
    transport: str,
    kind: str,
    api: Client,
    server: str,
    redis_url: str,
    namespace: str,
    ledger: Ledger,
    gate: threading.Event,
) -> None:
    cancelled: list[bool] = []
    running = threading.Event()

    async def slow(job: JobContext) -> str:
        running.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never recorded"

    def plain(job: JobContext) -> str:
        running.set()
        wait_for(gate)
        return "never recorded"

    api.put_queue("q", retries=1)
    job_id = api.submit("q")
    handler = slow if kind == "async" else plain
    worker = make_worker(transport, handler, "q", server, redis_url, namespace, grace_period=0.2)
    with working(worker):
        assert running.wait(10)
    assert worker.counts == {"completed": 0, "failed": 0, "cancelled": 0, "returned": 1}
    assert cancelled == ([True] if kind == "async" else [])
    assert types(api, job_id) == ["job_created", "job_started", "job_returned"]
    assert_handed_back(api, ledger, job_id, worker.worker_id)


# As a process, stopped by signals


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sigterm_mid_job_lets_the_job_finish_and_takes_no_other(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    release, started = tmp_path / "release", tmp_path / "started"
    api.put_queue("q", retries=1)
    first = api.submit("q", {"release": str(release), "started": str(started)})
    second = api.submit("q", {"release": str(release)})
    args = cli_transport_args(transport, server, redis_url, namespace)
    with cli_worker("--queue", "q", "--grace-period", "30s", *args) as proc:
        log = read_until(proc, "started:")
        assert "queues q, concurrency 1" in log
        eventually(started.exists, timeout=20)
        proc.send_signal(signal.SIGTERM)
        log = read_until(proc, "stopping: waiting up to 30s for 1 running job")
        assert "HTTP Request" not in log, "httpx2's line per request stays out of the worker's log at info"
        release.touch()
        log = read_until(proc, "stopped:")
        assert f"job {first} (q, attempt 1): completed in " in log
        assert proc.wait(timeout=20) == 0
    assert api.get(first).status == "completed"
    assert api.get(second).status == "queued"
    assert misplaced(ledger.client, namespace) == []


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sigterm_past_the_grace_period_hands_the_job_back(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    api.put_queue("q", retries=1)
    started = tmp_path / "started"
    job_id = api.submit("q", {"release": str(tmp_path / "never"), "started": str(started)})
    args = cli_transport_args(transport, server, redis_url, namespace)
    with cli_worker("--queue", "q", "--grace-period", "0.5s", "--worker-id", "w-cli", *args) as proc:
        eventually(started.exists, timeout=20)
        proc.send_signal(signal.SIGTERM)
        log = read_until(proc, "stopped:")
        assert f"job {job_id} (q, attempt 1): handed back after " in log
        assert proc.wait(timeout=20) == 0
    assert_handed_back(api, ledger, job_id, "w-cli")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_second_sigterm_hands_the_job_back_at_once(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    api.put_queue("q")
    started = tmp_path / "started"
    job_id = api.submit("q", {"release": str(tmp_path / "never"), "started": str(started)})
    args = cli_transport_args(transport, server, redis_url, namespace)
    with cli_worker("--queue", "q", "--grace-period", "30s", *args) as proc:
        eventually(started.exists, timeout=20)
        proc.send_signal(signal.SIGTERM)
        read_until(proc, "stopping: waiting up to 30s")
        proc.send_signal(signal.SIGTERM)
        second = time.monotonic()
        assert proc.wait(timeout=20) == 0
        took = time.monotonic() - second
        assert took < 2.5, f"the second signal hands back and exits at once, not after {took:.1f}s"
    assert_handed_back(api, ledger, job_id)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_idle_worker_stops_at_once_and_leaves_no_job_behind(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger
) -> None:
    api.put_queue("q")
    args = cli_transport_args(transport, server, redis_url, namespace)
    with cli_worker("--queue", "q", *args) as proc:
        read_until(proc, "started:")
        time.sleep(0.5)  # waiting for a job
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        assert proc.wait(timeout=20) == 0
        assert time.monotonic() - signalled < 2.5
    job_id = api.submit("q")
    time.sleep(0.3)
    assert api.get(job_id).status == "queued"
    assert types(api, job_id) == ["job_created"]


def test_a_long_poll_whose_client_hung_up_starts_no_job(api: Client, server: str) -> None:
    api.put_queue("q")

    async def give_up() -> None:
        async with httpx2.AsyncClient(base_url=server) as http:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(http.get("/queue/q/job", params={"wait": "30s"}), 0.3)

    asyncio.run(give_up())
    time.sleep(0.2)  # the server has seen the connection close
    job_id = api.submit("q")
    time.sleep(0.3)
    assert (api.get(job_id).status, types(api, job_id)) == ("queued", ["job_created"])
    (fetched,) = api.fetch("q", wait=5)
    assert (fetched.id, fetched.attempt) == (job_id, 1)

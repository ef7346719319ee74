"""The Worker against a real server, over both transports (HTTP, and straight to Redis): jobs end to
end, output while running, heartbeats past heartbeat_timeout, failures and retries, fencing, the
graceful stop in process and on SIGTERM in a ``jobledger worker`` subprocess, polling backoff."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from api.client import Client
from api.worker import JobContext, Worker
from api.worker_transports import Assignment, HttpTransport
from ledger.runner import Ledger
from ledger.scheduler import tick
from replay.placement import misplaced
from tests.live_server import eventually, live_server

TRANSPORTS = ["http", "redis"]
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def server(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace) as url:
        yield url


@pytest.fixture
def api(server: str) -> Iterator[Client]:
    with Client(server) as client:
        yield client


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Released at the end of every test, so no handler thread outlives it."""
    event = threading.Event()
    yield event
    event.set()


def make_worker(transport: str, handler: Any, queues: Any, server: str, redis_url: str, namespace: str,
                **options: Any) -> Worker:  # fmt: skip
    where: dict[str, Any] = {"url": server}
    if transport == "redis":
        where = {"redis_url": redis_url, "namespace": namespace}
    return Worker(handler, queues, transport=transport, **where, **options)


@contextmanager
def working(worker: Worker, stop: bool = True) -> Iterator[Worker]:
    """Run the worker in a thread while the block runs; stop it (unless the block does: a second
    stop would skip the grace period) and wait for it after."""
    failures: list[BaseException] = []

    def main() -> None:
        try:
            asyncio.run(worker.run_async())
        except BaseException as exc:  # noqa: BLE001 (reported to the test below)
            failures.append(exc)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    assert worker.started.wait(10)
    try:
        yield worker
    finally:
        if stop:
            worker.stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the worker did not stop"
        assert not failures, failures


def types(api: Client, job_id: int, skip: tuple[str, ...] = ("job_heartbeat",)) -> list[str]:
    return [e.type for e in api.history(job_id) if e.type not in skip]


def wait_for(gate: threading.Event) -> None:
    assert gate.wait(15), "the test never released the handler"


# End to end


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_jobs_are_processed_end_to_end(
    transport: str, api: Client, server: str, redis_url: str, namespace: str
) -> None:
    async def double(job: JobContext) -> dict[str, int]:
        return {"double": job.input["n"] * 2}

    api.put_queue("q")
    ids = [api.submit("q", {"n": n}) for n in range(6)]
    worker = make_worker(transport, double, "q", server, redis_url, namespace, concurrency=3)
    with working(worker):
        jobs = [api.wait(i, timeout=15) for i in ids]
    assert [(j.status, j.output, j.attempt) for j in jobs] == [
        ("completed", {"double": n * 2}, 1) for n in range(6)
    ]
    assert {j.worker for j in jobs} == {worker.worker_id}
    assert worker.counts == {"completed": 6, "failed": 0, "abandoned": 0}
    for job_id in ids:
        history = api.history(job_id)
        assert [e.type for e in history] == ["job_created", "job_started", "job_completed"]
        assert history[1].data == {"attempt": 1, "worker": worker.worker_id}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_plain_handler_reports_output_while_it_runs(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, gate: threading.Event
) -> None:
    def handler(job: JobContext) -> None:
        job.set_output({"step": 1})
        wait_for(gate)

    api.put_queue("q")
    job_id = api.submit("q", "x")
    with working(make_worker(transport, handler, ["q"], server, redis_url, namespace)):
        eventually(lambda: api.output(job_id) == {"step": 1})
        assert api.get(job_id).status == "running"
        gate.set()
        job = api.wait(job_id, timeout=15)
    assert (job.status, job.output) == ("completed", {"step": 1})
    assert types(api, job_id) == ["job_created", "job_started", "job_output_set", "job_completed"]


# Heartbeats


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_heartbeats_keep_a_long_job_alive_past_its_heartbeat_timeout(
    transport: str,
    api: Client,
    server: str,
    redis_url: str,
    namespace: str,
    ledger: Ledger,
    gate: threading.Event,
) -> None:
    def handler(job: JobContext) -> str:
        wait_for(gate)
        return "done"

    api.put_queue("q", heartbeat_timeout=0.6)
    api.put_queue("bare", heartbeat_timeout=0.6)
    kept, bare_id = api.submit("q"), api.submit("bare")
    with working(make_worker(transport, handler, "q", server, redis_url, namespace)):
        eventually(lambda: api.get(kept).status == "running")
        assert [j.id for j in api.fetch("bare")] == [bare_id]  # a job nobody heartbeats: the control

        def long_past_timeout() -> bool:
            started = api.get(kept).started_at
            assert started is not None
            return (datetime.now(UTC) - started).total_seconds() > 1.5 and types(api, kept, ()).count(
                "job_heartbeat"
            ) >= 3

        eventually(long_past_timeout, timeout=15)
        assert tick(ledger)["timeouts"] == [bare_id]
        assert api.get(kept).status == "running"
        gate.set()
        assert api.wait(kept, timeout=15).status == "completed"
    assert api.get(bare_id).status == "timed_out"


# Failures


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_exception_fails_the_job_and_the_queue_retries_it(
    transport: str,
    api: Client,
    server: str,
    redis_url: str,
    namespace: str,
    ledger: Ledger,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def flaky(job: JobContext) -> str:
        if job.attempt == 1:
            raise ValueError(f"boom on {job.input}")
        return "ok"

    api.put_queue("q", retries=1)
    api.put_queue("once", retries=0)
    retried, final = api.submit("q", "a"), api.submit("once", "b")
    caplog.set_level(logging.WARNING, logger="jobledger.worker")
    with working(make_worker(transport, flaky, ["q", "once"], server, redis_url, namespace)):
        eventually(lambda: api.get(retried).status == "failed")
        assert api.get(retried).ended is False
        assert api.wait(final, timeout=15).status == "failed"
        eventually(lambda: tick(ledger)["retries"] == [retried])
        job = api.wait(retried, timeout=15)
    assert (job.status, job.output, job.attempt, job.retries_attempted) == ("completed", "ok", 2, 1)
    assert types(api, retried) == [
        "job_created", "job_started", "job_failed", "job_requeued", "job_started", "job_completed"
    ]  # fmt: skip
    assert "ValueError: boom on a" in caplog.text and "ValueError: boom on b" in caplog.text
    errors = api.get_fields(final, "errors")["errors"]
    assert [(e["attempt"], e["kind"], e["message"]) for e in errors] == [(1, "ValueError", "boom on b")]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_exception_kind_decides_retry(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger
) -> None:
    async def broken(job: JobContext) -> str:
        raise KeyError(job.input)

    api.put_queue("q", retries=3, no_retry_on=["KeyError"])
    job_id = api.submit("q", "x")
    with working(make_worker(transport, broken, ["q"], server, redis_url, namespace)):
        job = api.wait(job_id, timeout=15)
    assert (job.status, job.ended, job.retries_attempted) == ("failed", True, 0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_job_taken_away_is_never_completed_by_the_old_attempt(
    transport: str, api: Client, server: str, redis_url: str, namespace: str
) -> None:
    seen: list[bool] = []

    def handler(job: JobContext) -> str:
        eventually(lambda: job.lost, timeout=15)
        seen.append(job.lost)
        return "too late"

    api.put_queue("q")
    job_id = api.submit("q")
    worker = make_worker(transport, handler, "q", server, redis_url, namespace, heartbeat_interval=0.05)
    with working(worker):
        eventually(lambda: api.get(job_id).status == "running")
        api.cancel(job_id)
        eventually(lambda: seen)
    job = api.get(job_id)
    assert (seen, job.status, job.output) == ([True], "cancelled", None)
    assert "job_completed" not in types(api, job_id)
    assert worker.counts["completed"] == 0


# Stopping


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stop_takes_no_new_job_and_lets_running_ones_finish(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, gate: threading.Event
) -> None:
    def handler(job: JobContext) -> str:
        wait_for(gate)
        return "finished"

    api.put_queue("q")
    first, second = api.submit("q"), api.submit("q")
    worker = make_worker(transport, handler, "q", server, redis_url, namespace, grace_period=15)
    with working(worker, stop=False):
        eventually(lambda: api.get(first).status == "running")
        worker.stop()
        gate.set()
    assert api.get(first).status == "completed"
    assert api.get(second).status == "queued"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_stop_fails_jobs_still_running_after_the_grace_period(
    transport: str,
    api: Client,
    server: str,
    redis_url: str,
    namespace: str,
    ledger: Ledger,
    gate: threading.Event,
) -> None:
    def handler(job: JobContext) -> str:
        wait_for(gate)
        return "never recorded"

    api.put_queue("q", retries=1)
    job_id = api.submit("q")
    worker = make_worker(transport, handler, "q", server, redis_url, namespace, grace_period=0.2)
    with working(worker):
        eventually(lambda: api.get(job_id).status == "running")
    job = api.get(job_id)
    assert (job.status, job.ended, job.output) == ("failed", False, None)
    assert worker.counts == {"completed": 0, "failed": 0, "abandoned": 1}
    assert tick(ledger)["retries"] == [job_id]
    assert api.get(job_id).status == "queued"
    assert misplaced(ledger.client, namespace) == []


@contextmanager
def cli_worker(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``jobledger worker tests.worker_handlers:wait_for_release ARGS`` as a subprocess, killed
    after the block if it is still running."""
    command = [sys.executable, "-m", "api.cli", "worker", "tests.worker_handlers:wait_for_release", *args]
    with subprocess.Popen(command, cwd=REPO, stderr=subprocess.PIPE, text=True) as proc:
        try:
            yield proc
        finally:
            proc.kill()


def read_until(proc: subprocess.Popen[str], text: str) -> str:
    """The worker's log up to the first line containing ``text`` (the pipe blocks, the test's
    timeout bounds it)."""
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:
        seen += line
        if text in line:
            return seen
    raise AssertionError(f"the worker exited without logging {text!r}:\n{seen}")


def cli_transport_args(transport: str, server: str, redis_url: str, namespace: str) -> list[str]:
    if transport == "http":
        return ["--url", server]
    return ["--transport", "redis", "--redis-url", redis_url, "--namespace", namespace]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_sigterm_mid_job_lets_the_job_finish_and_takes_no_other(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    api.put_queue("q", retries=1)
    first, second = api.submit("q", {"release": str(release)}), api.submit("q", {"release": str(release)})
    args = cli_transport_args(transport, server, redis_url, namespace)
    with cli_worker("--queue", "q", "--grace-period", "30s", *args) as proc:
        eventually(lambda: api.get(first).status == "running", timeout=20)
        proc.send_signal(signal.SIGTERM)
        log = read_until(proc, "stopping: waiting up to 30s for 1 running job")
        assert "HTTP Request" not in log, "httpx's line per request stays out of the worker's log at info"
        release.touch()
        assert proc.wait(timeout=20) == 0
    assert api.get(first).status == "completed"
    assert api.get(second).status == "queued"
    assert misplaced(ledger.client, namespace) == []


def test_sigterm_past_the_grace_period_hands_the_job_back_for_a_retry(
    api: Client, server: str, ledger: Ledger, tmp_path: Path
) -> None:
    api.put_queue("q", retries=1)
    job_id = api.submit("q", {"release": str(tmp_path / "never")})
    with cli_worker("--queue", "q", "--grace-period", "0.3s", "--url", server) as proc:
        eventually(lambda: api.get(job_id).status == "running", timeout=20)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    job = api.get(job_id)
    assert (job.status, job.ended) == ("failed", False)
    assert tick(ledger)["retries"] == [job_id]
    assert api.get(job_id).status == "queued"
    assert misplaced(ledger.client, ledger.keys.namespace) == []


# Fetching


def test_queues_are_served_in_the_order_given(api: Client, server: str) -> None:
    async def noop(job: JobContext) -> None:
        return None

    api.put_queue("high")
    api.put_queue("low")
    low = [api.submit("low") for _ in range(3)]
    high = [api.submit("high") for _ in range(3)]
    with working(Worker(noop, ["high", "low"], url=server)):
        jobs = [api.wait(i, timeout=15) for i in high + low]
    started = [j.started_at.timestamp() for j in jobs if j.started_at is not None]
    assert len(started) == 6
    assert max(started[:3]) <= min(started[3:])


class CountingTransport(HttpTransport):
    """The HTTP transport, noting when each fetch was made."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.fetches: list[float] = []

    async def fetch(self, queue: str, count: int, worker: str) -> list[Assignment]:
        self.fetches.append(time.monotonic())
        return await super().fetch(queue, count, worker)


def test_an_empty_queue_is_polled_with_growing_pauses(api: Client, server: str) -> None:
    api.put_queue("q")
    transport = CountingTransport(server)
    with working(Worker(lambda job: None, "q", transport=transport, poll_interval=(0.02, 0.16))):
        eventually(lambda: len(transport.fetches) >= 7)
    gaps = [b - a for a, b in zip(transport.fetches, transport.fetches[1:], strict=False)][:6]
    pauses = [0.02, 0.04, 0.08, 0.16, 0.16, 0.16]
    assert all(gap >= pause * 0.9 for gap, pause in zip(gaps, pauses, strict=True)), gaps

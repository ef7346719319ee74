"""The Worker against a real server, over both transports (HTTP, and straight to Redis): jobs end to
end, output while running, heartbeats past heartbeat_timeout, failures with their traceback and
retries, its log lines, the order of its queues, and an idle worker that does not poll yet picks a
new job up at once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx2
import pytest
import redis

from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import tick
from jobledger.worker.transports import tail
from jobledger.worker.worker import JobContext
from tests.benchmarks.ours.server import bundled_server
from tests.support.ledger import stream_length
from tests.support.live_server import eventually, live_server
from tests.worker.worker_support import (
    TRANSPORTS,
    command_counts,
    make_worker,
    ran_between,
    types,
    wait_for,
    working,
)

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
    assert worker.counts == {"completed": 6, "failed": 0, "cancelled": 0, "returned": 0}
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


# Failures, and what the log says


def explode(message: str) -> None:
    raise ValueError(message)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_exception_fails_the_job_with_its_traceback_and_the_queue_retries_it(
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
            explode(("." * 10_000 if job.input == "long" else "") + f"boom on {job.input}")
        return "ok"

    api.put_queue("q", retries=1)
    api.put_queue("once", retries=0)
    retried, final = api.submit("q", "a"), api.submit("once", "long")
    caplog.set_level(logging.INFO, logger="jobledger.worker")
    worker = make_worker(transport, flaky, ["q", "once"], server, redis_url, namespace)
    with working(worker):
        eventually(lambda: api.get(retried).status == "failed")
        assert api.get(retried).ended is False
        assert api.wait(final, timeout=15).status == "failed"
        eventually(lambda: tick(ledger)["retries"] == [retried])
        job = api.wait(retried, timeout=15)
    assert (job.status, job.output, job.attempt, job.retries_attempted) == ("completed", "ok", 2, 1)
    assert types(api, retried) == [
        "job_created", "job_started", "job_failed", "job_requeued", "job_started", "job_completed"
    ]  # fmt: skip
    (short,) = api.get_fields(retried, "errors")["errors"]
    assert (short["attempt"], short["kind"], short["message"]) == (1, "ValueError", "boom on a")
    assert short["traceback"].startswith("Traceback (most recent call last):")
    assert "in flaky" in short["traceback"] and short["traceback"].endswith("ValueError: boom on a\n")
    (long,) = api.get_fields(final, "errors")["errors"]
    assert len(long["traceback"].encode()) == 8192 and len(long["message"]) == 1000
    assert long["traceback"].startswith("[...]") and long["traceback"].endswith("....boom on long\n")
    failed_event = next(e for e in api.history(final) if e.type == "job_failed")
    assert failed_event.data["error"]["traceback"] == long["traceback"]
    lines = [r for r in caplog.records if r.name == "jobledger.worker"]
    started = [r.getMessage() for r in lines if "started:" in r.getMessage()]
    assert started == [
        f"worker {worker.worker_id} started: {worker.transport.describe()}, queues q, once, concurrency 1"
    ]
    per_job = [r.getMessage() for r in lines if r.getMessage().startswith("job ")]
    assert per_job[0].startswith(f"job {retried} (q, attempt 1): failed after ")
    assert per_job[0].endswith("s: ValueError: boom on a")
    assert f"job {final} (once, attempt 1): failed after " in "\n".join(per_job)
    assert per_job[-1].startswith(f"job {retried} (q, attempt 2): completed in ")
    assert len(per_job) == 3
    assert [r.levelname for r in lines if "completed in" in r.getMessage()] == ["INFO"]


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


def test_a_long_traceback_keeps_its_end() -> None:
    text = "é" * 5000 + "the end\n"
    cut = tail(text, 8192)
    assert len(cut.encode()) <= 8192 and cut.startswith("[...]\n") and cut.endswith("é" * 10 + "the end\n")
    assert tail("short", 8192) == "short"


def test_a_traceback_travels_to_the_job_and_its_history_and_bad_ones_are_refused(
    api: Client, server: str, ledger: Ledger, namespace: str
) -> None:
    api.put_queue("q")
    job_id = api.submit("q")
    (fetched,) = api.fetch("q")
    before = stream_length(ledger.client, namespace)
    for error in (
        {"kind": "E", "traceback": 12},
        {"kind": "E", "traceback": "x" * 8193},
        {"kind": "E", "traceback": "é" * 4097},  # 8194 bytes in UTF-8
    ):
        body = {"status": "failed", "attempt": fetched.attempt, "error": error}
        answer = httpx2.patch(f"{server}/job/{job_id}", json=body)
        assert answer.status_code == 400 and "traceback" in answer.json()["error"]
    assert stream_length(ledger.client, namespace) == before
    trace = "Traceback (most recent call last):\n  ...\nE: why\n" + "é" * 4000
    api.fail(job_id, attempt=fetched.attempt, error={"kind": "E", "message": "why", "traceback": trace})
    (error,) = api.get_fields(job_id, "errors")["errors"]
    assert (error["kind"], error["message"], error["traceback"]) == ("E", "why", trace)
    assert api.history(job_id)[-1].data["error"] == {"kind": "E", "message": "why", "traceback": trace}
    other = api.submit("q")
    api.fetch("q")
    api.fail(other, error="plain")  # an error without a traceback shows none
    assert api.get_fields(other, "errors")["errors"][0].keys() == {"at", "attempt", "kind", "message"}


# Fetching: the order of queues, and no polling while idle


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_queues_are_served_in_the_order_given(
    transport: str, api: Client, server: str, redis_url: str, namespace: str
) -> None:
    async def noop(job: JobContext) -> None:
        return None

    api.put_queue("high")
    api.put_queue("low")
    low = [api.submit("low") for _ in range(3)]
    high = [api.submit("high") for _ in range(3)]
    with working(make_worker(transport, noop, ["high", "low"], server, redis_url, namespace)):
        jobs = [api.wait(i, timeout=15) for i in high + low]
    started = [j.started_at.timestamp() for j in jobs if j.started_at is not None]
    assert len(started) == 6
    assert max(started[:3]) <= min(started[3:])


def test_a_poll_still_open_when_the_worker_took_another_queues_job_hands_its_job_back(
    api: Client, server: str, redis_url: str, namespace: str
) -> None:
    """Over HTTP a worker long-polls each of its queues at once.  When one answers, the others stay
    open (one given up as the server fetched for it would leave that job running for nobody until its
    timeout): a job one of them brings while the worker is busy goes back to its queue at once, and
    is worked when a slot is free."""
    gate = threading.Event()

    def handler(job: JobContext) -> str:
        if job.input.get("hold"):
            wait_for(gate)
        return "done"

    api.put_queue("a")
    api.put_queue("b")
    worker = make_worker("http", handler, ["a", "b"], server, redis_url, namespace)
    with working(worker):
        time.sleep(0.5)  # both polls open
        held = api.submit("a", {"hold": True})
        eventually(lambda: api.get(held).status == "running", timeout=10)
        late = api.submit("b", {})
        eventually(lambda: "job_returned" in types(api, late), timeout=10)
        assert api.get(late).status == "queued"
        gate.set()
        assert api.wait(late, timeout=15).status == "completed"
    assert types(api, late) == ["job_created", "job_started", "job_returned", "job_started", "job_completed"]
    assert worker.counts["completed"] == 2


@pytest.fixture
def private_redis() -> Iterator[str]:
    """A Redis server of this test's own, whose command counts only the test moves."""
    with bundled_server() as url:
        yield url


IDLE = 6.0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_idle_worker_does_not_poll_and_takes_a_new_job_at_once(transport: str, private_redis: str) -> None:
    """After a quiet spell longer than any client timeout, a job on either of its queues is started
    within a fraction of a second, and meanwhile the worker ran no fetch."""
    client = redis.Redis.from_url(private_redis)
    ledger = Ledger(client, "idle")
    for name in ("first", "second"):
        ledger.run(commands.put_queue(name, QueueSettings()))

    async def noop(job: JobContext) -> None:
        return None

    with live_server(private_redis, "idle") as server:
        worker = make_worker(transport, noop, ["first", "second"], server, private_redis, "idle")
        with working(worker):
            time.sleep(1.0)  # started, and waiting
            before = command_counts(client)
            time.sleep(IDLE)
            ran = ran_between(before, command_counts(client), "info")
            job_id = ledger.run(commands.create_job("second", JobOptions())).id
            eventually(lambda: worker.counts["completed"] == 1, timeout=5)
    created, started = (
        int(t or 0) for t in client.hmget(ledger.keys.job(job_id), "created_at", "started_at")
    )
    client.close()
    assert ran.get("fcall", 0) == 0, ran  # not one fetch
    assert sum(ran.values()) <= IDLE, ran  # at most one command a second
    assert started - created < 250, f"started {started - created} ms after it was created"

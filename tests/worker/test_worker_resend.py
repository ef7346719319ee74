"""A completion the ledger cannot take at once (Redis stalled, the server stopped) is sent again
until it is recorded, once: the resend of one that took effect unseen appends nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pytest
import redis

from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.worker import worker as worker_module
from jobledger.worker.jobs import JobContext
from jobledger.worker.metrics import WorkerMetrics
from jobledger.worker.transports import RedisTransport
from jobledger.worker.worker import Worker
from tests.support.ledger import events
from tests.support.live_server import live_server
from tests.support.private_redis import PrivateServer, free_port, wait_until
from tests.worker.worker_support import wait_for, working


def _completed(client: redis.Redis, namespace: str, job_id: int) -> list[str]:
    return [e["id"] for e in events(client, namespace, job_id) if e["type"] == "job_completed"]


def _held(gate: threading.Event) -> tuple[threading.Event, Callable[[JobContext], str]]:
    """A handler that says it started, then holds its job until ``gate`` opens."""
    started = threading.Event()

    def handler(job: JobContext) -> str:
        started.set()
        wait_for(gate)
        return "done"

    return started, handler


def test_a_completion_outlasts_a_stalled_redis(tmp_path: Path, gate: threading.Event) -> None:
    private = PrivateServer(tmp_path / "valkey")
    private.start()
    client = redis.Redis.from_url(private.url)
    try:
        ledger = Ledger(client, "stall")
        ledger.run(commands.put_queue("q", QueueSettings()))
        job_id = ledger.run(commands.create_job("q", JobOptions())).id
        # answers give up after 0.5 s, so the stall below outlasts several sends
        transport = RedisTransport(private.url + "?socket_timeout=0.5", "stall")
        started, handler = _held(gate)

        worker = Worker(handler, "q", transport=transport)
        with working(worker):
            assert started.wait(10)
            private.pause()
            gate.set()
            time.sleep(2.0)  # the completion is sent, times out, is sent again...
            private.resume()
            wait_until(lambda: len(_completed(client, "stall", job_id)) == 1, "the completion")
            time.sleep(0.5)
        assert len(_completed(client, "stall", job_id)) == 1
        assert worker.counts["completed"] == 1 and worker.counts["cancelled"] == 0
    finally:
        client.close()
        private.kill()


def test_a_completion_waits_for_a_stopped_server(
    redis_url: str, namespace: str, client: redis.Redis, gate: threading.Event
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started, handler = _held(gate)

    with ExitStack() as stack:
        first = live_server(redis_url, namespace, listen_port=port)
        first.__enter__()
        with Client(url) as api:
            api.put_queue("q")
            job_id = api.submit("q")
        metrics = WorkerMetrics()
        worker = Worker(handler, "q", url=url, metrics=metrics)
        with working(worker):
            assert started.wait(10)
            first.__exit__(None, None, None)  # the server stops while the handler runs
            gate.set()
            time.sleep(1.5)  # the completion finds no server, and is sent again...
            stack.enter_context(live_server(redis_url, namespace, listen_port=port))
            wait_until(lambda: len(_completed(client, namespace, job_id)) == 1, "the completion")
        assert len(_completed(client, namespace, job_id)) == 1
        assert worker.counts["completed"] == 1 and worker.counts["cancelled"] == 0
    resends = metrics.registry.get_sample_value("jobledger_worker_resends_total", {"queue": "q"})
    assert resends is not None and resends >= 1
    done = metrics.registry.get_sample_value(
        "jobledger_worker_jobs_total", {"queue": "q", "outcome": "completed"}
    )
    assert done == 1


HEARTBEAT_TIMEOUT = 9  # s: the worker beats every 3 s; its completion's tries go out 0, 0.2, 0.6,
# 1.4, 3.0 and 6.2 s after the server stops, the next one doubling past the deadline
SERVER_BACK_AFTER = 6.3  # s: a start that takes up to ~2 s is back before the deadline's last 0.5 s


def _last_heartbeat(client: redis.Redis, namespace: str, job_id: int) -> int | None:
    beat = client.hget(Keys(namespace).job(job_id), "last_heartbeat")
    return int(beat) if beat is not None else None


def test_a_completion_is_resent_in_time_for_a_deadline_it_can_meet(
    redis_url: str,
    namespace: str,
    client: redis.Redis,
    gate: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server stops right after a heartbeat and is back before the attempt's deadline: the
    completion's last tries are timed to land before that deadline, not at it or after."""
    # no watch of the job (an open feed that would hold up the server's stop)
    monkeypatch.setattr(worker_module, "WATCH_AFTER", 3600.0)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started, handler = _held(gate)

    with ExitStack() as stack:
        first = live_server(redis_url, namespace, listen_port=port)
        first.__enter__()
        with Client(url) as api:
            api.put_queue("q", heartbeat_timeout=f"{HEARTBEAT_TIMEOUT}s", timeout="1h")
            job_id = api.submit("q")
        worker = Worker(handler, "q", url=url)
        with working(worker):
            assert started.wait(10)
            before = _last_heartbeat(client, namespace, job_id)
            wait_until(lambda: _last_heartbeat(client, namespace, job_id) != before, "a heartbeat")
            beat = _last_heartbeat(client, namespace, job_id)
            assert beat is not None
            first.__exit__(None, None, None)
            gate.set()
            time.sleep(SERVER_BACK_AFTER)
            stack.enter_context(live_server(redis_url, namespace, listen_port=port))
            wait_until(lambda: len(_completed(client, namespace, job_id)) == 1, "the completion")
        [completion] = [e for e in events(client, namespace, job_id) if e["type"] == "job_completed"]
        assert int(completion["at"]) <= beat + HEARTBEAT_TIMEOUT * 1000 - 250
        assert worker.counts["completed"] == 1 and worker.counts["cancelled"] == 0

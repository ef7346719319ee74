"""A fetch that waited in a stalled Redis for longer than its job's timeout starts the job when it
runs, not when it was sent: the scheduler's check queued behind it does not time the job out, its
worker's completion is taken, and replay still gives the live projections.  Real time, and a
valkey-server of the test's own stopped with SIGSTOP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.clock import now_ms
from jobledger.ledger.runner import Ledger
from jobledger.replay.verify import verify
from jobledger.scheduler.loop import tick
from tests.support.ledger import create, put_queue, raw_job, status, update
from tests.support.private_redis import PrivateServer, wait_until

TIMEOUT_S = 2
STALL_S = 2.5  # longer than the job's timeout
NAMESPACE = "stalled"


def _in_thread(work: Callable[[], Any], into: list[Any]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.append(work()))
    thread.start()
    return thread


def _ledger_noting_its_stamps(url: str, stamps: list[int]) -> Ledger:
    """A ledger on a client of its own, connected now (so that a pause holds up its commands, not
    its handshake), whose clock notes each stamp it gives."""

    def clock() -> int:
        stamps.append(now_ms())
        return stamps[-1]

    client = redis.Redis.from_url(url, socket_timeout=30)
    client.ping()
    return Ledger(client, NAMESPACE, clock=clock)


def test_a_fetch_held_up_past_the_timeout_does_not_make_its_job_run_twice(tmp_path: Path) -> None:
    private = PrivateServer(tmp_path / "valkey")
    private.start()
    try:
        ledger = Ledger(redis.Redis.from_url(private.url), NAMESPACE)
        put_queue(ledger, "q", timeout=f"{TIMEOUT_S}s")
        job_id = create(ledger)
        fetch_stamps: list[int] = []
        check_stamps: list[int] = []
        worker = _ledger_noting_its_stamps(private.url, fetch_stamps)
        scheduler = _ledger_noting_its_stamps(private.url, check_stamps)
        fetched: list[Any] = []
        checked: list[Any] = []
        private.pause()
        try:
            fetching = _in_thread(lambda: worker.run(commands.fetch_jobs("q", 1, "w")), fetched)
            wait_until(lambda: bool(fetch_stamps), "the fetch to be sent")
            time.sleep(STALL_S)
            # the scheduler's checks, sent past the deadline the fetch's stamp would give, held up too
            checking = _in_thread(lambda: tick(scheduler), checked)
            wait_until(lambda: bool(check_stamps), "the check to be sent")
            time.sleep(0.2)
        finally:
            private.resume()
        fetching.join(timeout=10)
        checking.join(timeout=10)
        assert check_stamps[0] - fetch_stamps[0] >= TIMEOUT_S * 1000
        [[started]] = fetched
        assert started.id == job_id
        tick(scheduler)  # at once: well within the timeout of when the job was handed out
        assert status(ledger, job_id) == "running"
        assert int(raw_job(ledger, job_id)["started_at"]) > fetch_stamps[0] + TIMEOUT_S * 1000
        assert update(ledger, job_id, status="completed", attempt=started.attempt)
        assert status(ledger, job_id) == "completed"
        assert verify(ledger.client, NAMESPACE).ok
        for runner in (ledger, worker, scheduler):
            runner.client.close()
    finally:
        private.kill()

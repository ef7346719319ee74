"""A bulk operation whose server is killed half-way (SIGKILL, by PID): each job is left in one
consistent state, and running the operation again finishes it, each job acted on once."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2
import redis

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, JobUpdate
from jobledger.ledger.runner import Ledger
from jobledger.replay.placement import misplaced
from jobledger.runtime.embedded import free_port
from tests.cli.process_support import jobledger, wait_for, wait_serving
from tests.support.ledger import events, put_queue

JOBS = 10_000


def _failed_jobs(ledger: Ledger, n: int) -> list[int]:
    put_queue(ledger, "q")
    ids: list[int] = []
    for _ in range(0, n, 1000):
        made = ledger.run(commands.create_jobs("q", [JobOptions() for _ in range(1000)]))
        started = ledger.run(commands.fetch_jobs("q", 1000))
        failure = JobUpdate.model_validate({"status": "failed", "error": {"kind": "E"}})
        ledger.run(commands.update_jobs([(j.id, failure) for j in started]))
        ids += [m.id for m in made]
    return ids


def _serve(redis_url: str, namespace: str, port: int, log: Path):  # type: ignore[no-untyped-def]
    args = ["serve", "--redis-url", redis_url, "--namespace", namespace, "--host", "127.0.0.1"]
    return jobledger([*args, "--port", str(port), "--no-scheduler"], log)


def _statuses(client: redis.Redis, ledger: Ledger, ids: list[int]) -> dict[str, int]:
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hget(ledger.keys.job(job_id), "status")
    counted: dict[str, int] = {}
    for status in pipe.execute():
        counted[status.decode()] = counted.get(status.decode(), 0) + 1
    return counted


def test_a_bulk_killed_half_way_leaves_each_job_whole_and_a_rerun_finishes_it(
    redis_url: str, namespace: str, ledger: Ledger, client: redis.Redis, tmp_path: Path
) -> None:
    ids = _failed_jobs(ledger, JOBS)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with _serve(redis_url, namespace, port, tmp_path / "first.log") as server:
        wait_serving(server, base)
        body = {"action": "requeue", "queue": "q", "status": "failed"}
        answer = httpx2.post(f"{base}/bulk?wait=0", json=body)
        assert answer.status_code == 202, answer.text
        operation = answer.json()["operation"]

        def half_way() -> bool:
            return httpx2.get(f"{base}/bulk/{operation}").json()["done"] > 0

        wait_for(half_way, "the operation to start on its jobs")
        server.signal(signal.SIGKILL)
        assert server.wait(10) is not None
    counted = _statuses(client, ledger, ids)
    assert set(counted) <= {"failed", "queued"} and 0 < counted.get("queued", 0) < JOBS, counted
    assert misplaced(client, namespace) == []
    requeues = [e for e in events(client, namespace) if e["type"] == "job_requeued"]
    assert len(requeues) == counted["queued"]
    assert not [e for e in events(client, namespace) if e["type"] == "bulk_finished"]

    with _serve(redis_url, namespace, port, tmp_path / "again.log") as server:
        wait_serving(server, base)
        again = httpx2.post(f"{base}/bulk/{operation}?wait=60", timeout=70)
        assert again.status_code == 200, again.text
        assert again.json()["done"] == counted["failed"]
        record = httpx2.get(f"{base}/bulk/{operation}").json()
        assert record["done"] == JOBS and record["finished_at"] is not None
    assert _statuses(client, ledger, ids) == {"queued": JOBS}
    requeued = [e["job"] for e in events(client, namespace) if e["type"] == "job_requeued"]
    assert sorted(int(j) for j in requeued) == sorted(ids)  # each job once

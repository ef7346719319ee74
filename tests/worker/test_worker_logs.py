"""The worker's log says what happened to every job: its line for each job is never held back as a
repeat, and with ``json`` each is an object of the job's fields."""

from __future__ import annotations

import io
import json
import logging
import signal
from collections.abc import Iterator

import pytest

from jobledger.client import Client
from jobledger.runtime.logs import configure
from jobledger.worker.worker import JobContext
from tests.worker.worker_support import TRANSPORTS, cli_worker, make_worker, read_until, working

FAILURES = 10
#: The loggers :func:`configure` sets a level on, put back after each test.
CONFIGURED = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi", "httpx2", "httpcore2")


@pytest.fixture
def log_to() -> Iterator[io.StringIO]:
    """Where the test's :func:`configure` writes; the root logger's handlers and the levels it set
    are put back after the test."""
    root = logging.getLogger()
    saved = list(root.handlers), {name: logging.getLogger(name).level for name in CONFIGURED}
    try:
        yield io.StringIO()
    finally:
        root.handlers[:] = saved[0]
        for name, level in saved[1].items():
            logging.getLogger(name).setLevel(level)


async def broken(job: JobContext) -> str:
    raise ValueError(f"boom on {job.input}")


def fail_ten(
    api: Client, transport: str, server: str, redis_url: str, namespace: str
) -> tuple[list[int], str]:
    """Ten jobs failed by one worker: their ids, and the worker's."""
    api.put_queue("q", retries=0)
    ids = [api.submit("q", str(n)) for n in range(FAILURES)]
    worker = make_worker(transport, broken, ["q"], server, redis_url, namespace, concurrency=4)
    with working(worker):
        for job_id in ids:
            assert api.wait(job_id, timeout=15).status == "failed"
    return ids, worker.worker_id


def job_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " jobledger.worker: job " in line]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_failure_has_its_line_in_text(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, log_to: io.StringIO
) -> None:
    configure("info", "text", stream=log_to)
    ids, _ = fail_ten(api, transport, server, redis_url, namespace)
    lines = job_lines(log_to.getvalue())
    assert len(lines) == FAILURES, log_to.getvalue()
    for job_id in ids:
        (line,) = [line for line in lines if f" job {job_id} (q, attempt 1): failed after " in line]
        assert line.split()[1] == "WARNING"
        assert line.endswith(f"s: ValueError: boom on {ids.index(job_id)}")
    assert "repeated" not in log_to.getvalue()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_failure_is_an_object_of_its_fields_in_json(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, log_to: io.StringIO
) -> None:
    configure("info", "json", stream=log_to)
    ids, worker_id = fail_ten(api, transport, server, redis_url, namespace)
    items = [json.loads(line) for line in log_to.getvalue().splitlines()]
    per_job = [item for item in items if "job" in item]
    assert sorted(item["job"] for item in per_job) == sorted(ids)
    for item in per_job:
        assert (item["queue"], item["attempt"], item["outcome"], item["level"]) == (
            "q",
            1,
            "failed",
            "warning",
        )
        assert item["error"] == f"ValueError: boom on {ids.index(item['job'])}"
        assert isinstance(item["duration_ms"], float) and item["duration_ms"] >= 0
        assert item["actor"] == worker_id
        assert item["message"].startswith(f"job {item['job']} (q, attempt 1): failed after ")


def test_a_completed_job_line_has_its_fields_in_json(
    api: Client, server: str, redis_url: str, namespace: str, log_to: io.StringIO
) -> None:
    async def fine(job: JobContext) -> str:
        return "ok"

    configure("info", "json", stream=log_to)
    api.put_queue("q")
    job_id = api.submit("q", "x")
    worker = make_worker("redis", fine, ["q"], server, redis_url, namespace)
    with working(worker):
        assert api.wait(job_id, timeout=15).status == "completed"
    (item,) = [json.loads(line) for line in log_to.getvalue().splitlines() if '"job"' in line]
    assert {k: item[k] for k in ("job", "queue", "attempt", "outcome", "level", "actor")} == {
        "job": job_id, "queue": "q", "attempt": 1, "outcome": "completed", "level": "info",
        "actor": worker.worker_id,
    }  # fmt: skip
    assert "error" not in item


def test_the_worker_command_writes_each_job_as_an_object_with_log_format_json(
    api: Client, server: str
) -> None:
    api.put_queue("q", retries=0)
    ids = [api.submit("q", str(n)) for n in range(3)]
    args = ["--exec", "--queue", "q", "--url", server, "--log-format", "json", "--concurrency", "3"]
    with cli_worker(*args, handler="false") as proc:
        for job_id in ids:
            assert api.wait(job_id, timeout=20).status == "failed"
        proc.send_signal(signal.SIGTERM)
        log = read_until(proc, "stopped:")
        assert proc.wait(timeout=20) == 0
    items = [json.loads(line) for line in log.splitlines()]
    failed = sorted((item["job"], item["outcome"], item["error"][:27]) for item in items if "job" in item)
    assert failed == [(job_id, "failed", "exit:1: false exited with 1") for job_id in ids]

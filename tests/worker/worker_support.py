"""What the worker tests share: a worker run in a thread of the test, the ``jobledger worker``
command run as a process, and the commands a Redis server ran."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from jobledger.client import Client
from jobledger.worker.worker import Worker

TRANSPORTS = ["http", "redis"]
REPO = Path(__file__).resolve().parents[2]


def make_worker(transport: str, handler: Any, queues: Any, server: str, redis_url: str, namespace: str,
                **options: Any) -> Worker:  # fmt: skip
    where: dict[str, Any] = {"url": server}
    if transport == "redis":
        where = {"redis_url": redis_url, "namespace": namespace}
    return Worker(handler, queues, transport=transport, **where, **options)


@contextmanager
def working(worker: Worker, stop: bool = True) -> Iterator[Worker]:
    """Run the worker in a thread while the block runs; stop it (unless the block does: a second
    stop would hand its jobs back at once) and wait for it after."""
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


@contextmanager
def cli_worker(
    *args: str, handler: str = "tests.support.worker_handlers:wait_for_release"
) -> Iterator[subprocess.Popen[str]]:
    """``jobledger worker HANDLER ARGS`` as a process (``python -m jobledger.cli.main``), killed after the
    block if it is still running."""
    command = [sys.executable, "-m", "jobledger.cli.main", "worker", handler, *args]
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


def command_counts(client: redis.Redis) -> dict[str, int]:
    """How many times the server ran each command since it started (``INFO commandstats``): use
    only on a server of the test's own."""
    stats: dict[str, Any] = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def ran_between(before: dict[str, int], after: dict[str, int], *left_out: str) -> dict[str, int]:
    """The commands run between two :func:`command_counts`, without those named."""
    ran = {name: n - before.get(name, 0) for name, n in after.items() if name not in left_out}
    return {name: n for name, n in ran.items() if n}

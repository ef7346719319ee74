"""A real ``jobledger serve`` process for the Ocypod ports: started on a free port with its own
namespace (and any extra arguments, e.g. ``--config``), waited for until ``/health`` answers, and
stopped by its PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned, runners_of
from jobledger.ledger.runner import Ledger
from tests.support.ledger import TEST_PARTITIONS

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0


@dataclass(frozen=True)
class Served:
    url: str
    namespace: str
    port: int


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def new_namespace(prefix: str = "ocypod") -> str:
    return f"test-{prefix}-{uuid.uuid4().hex[:10]}"


#: The keys a wipe leaves: how the ledger is split, which the running server has read once for all.
_KEPT = {"partitions", "partition"}


def wipe(client: redis.Redis, namespace: str) -> None:
    """Every key of the namespace, as if the Redis were new (Ocypod's tests start one per test), but
    how the ledger is split."""
    keys = Keys(namespace)
    kept = {keys.build(name).encode() for name in _KEPT}
    for key in client.scan_iter(match=keys.pattern(), count=1000):
        if key not in kept:
            client.delete(key)


def wipe_ledger(ledger: Ledger | Partitioned) -> None:
    """:func:`wipe` of every partition of ``ledger``, each through its own client (its node)."""
    for runner in runners_of(ledger):
        wipe(runner.client, runner.keys.namespace)


def environment(extra: Mapping[str, str]) -> dict[str, str]:
    """This environment without jobledger's own settings (so only the arguments decide), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBLEDGER_")}
    return {**env, "JOBLEDGER_SEAL": "false", **extra}  # a sealer would keep its key in the working directory


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jobledger serve exited with {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            if httpx2.get(f"{url}/health", timeout=1).json() == {"status": "healthy"}:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"jobledger serve did not answer within {START_TIMEOUT}s: {log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's PID; SIGKILL if it is still there after 15 s."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def command(port: int, redis_url: str | None, namespace: str, *args: str) -> list[str]:
    """``python -m jobledger.cli.main serve --port P --redis-url URL --namespace NS ARGS...``; without a
    port or URL (0, None) the configuration gives them."""
    address = (["--port", str(port)] if port else []) + (["--redis-url", redis_url] if redis_url else [])
    return [sys.executable, "-m", "jobledger.cli.main", "serve", *address, "--namespace", namespace, *args]


@contextmanager
def serve(
    redis_url: str | None,
    log: Path,
    *args: str,
    port: int | None = None,
    flags: bool = True,
    env: Mapping[str, str] | None = None,
) -> Iterator[Served]:
    """The server, on ``port`` (a free one by default) and a namespace of its own, while the block
    runs; ``flags=False`` leaves its port and Redis URL to the configuration (which must use ``port``)."""
    port, ns = port or free_port(), new_namespace()
    if TEST_PARTITIONS is not None:
        env = {"JOBLEDGER_PARTITIONS": str(TEST_PARTITIONS), **(env or {})}
    command_line = command(port if flags else 0, redis_url if flags else None, ns, *args)
    with log.open("wb") as out:
        proc = subprocess.Popen(command_line, cwd=ROOT, env=environment(env or {}), stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(proc, url, log)
        yield Served(url, ns, port)
    finally:
        stop(proc)

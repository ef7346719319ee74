"""Ours over HTTP: a job's lifecycle through the app, beside bare Starlette requests, in one run.

Both apps run under the same uvicorn command (a subprocess; ``--workers`` 1 and 2 are tried), on
the same fresh server, driven by the same load generator (:mod:`tests.benchmarks.ours.http_load`) with
the same three requests per job.  The figure is the cost ratio: time per job through ours over
time per three bare requests (each one Redis call).  The ``--workers`` count that gives ours its
best rate is the one reported.

The same lifecycle is measured a third time through ours with ``[server] auth`` on
(``http_apps.ours_auth``), the load generator sending an admin token on every request: the row
"HTTP lifecycle with auth" and its cost beside the row without (time per job with auth over
time per job without), at the same ``--workers`` count.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2

from jobledger.ledger.tokens import create_token, digest, new_secret
from jobledger.worker import event_loop

from . import figures as F
from . import http_load
from .figures import Figure, Results, Settings
from .ours_process import QUEUE, class_worker, completed_probe, enqueue_pipelined, ledger_on
from .runs import PyWorkers, process
from .server import Servers

WORKER_COUNTS = (1, 2)
APPS = {name: f"tests.benchmarks.ours.http_apps:{name}" for name in ("ours", "ours_auth", "bare")}
#: The app with its scheduler, sealing off and on (the sealing part's served comparison).
SCHEDULED_APPS = {
    name: f"tests.benchmarks.ours.http_apps:{name}" for name in ("ours_scheduled", "ours_sealed")
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: The event loop the apps are served on: asyncio's own, the one ``jobledger serve`` runs (uvicorn's
#: "auto" would take uvloop, which is installed with jobledger for its workers).
LOOP = "asyncio"


def uvicorn_flavour() -> str:
    """The event loop and the HTTP parser the apps are served with ("auto" takes httptools if present)."""
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return f"uvicorn {LOOP}/{http}"


@dataclass(frozen=True)
class Served:
    """An app being served: its port, and uvicorn's process (the app's own with one worker)."""

    port: int
    pid: int


@contextmanager
def serving(
    app: str, redis_url: str, namespace: str, workers: int, data_dir: str | None = None
) -> Iterator[Served]:
    """Run ``app`` under uvicorn with ``workers`` processes; yield where once it answers."""
    port = _free_port()
    env = {**os.environ, "BENCH_REDIS_URL": redis_url, "BENCH_NAMESPACE": namespace}
    if data_dir is not None:
        env["BENCH_DATA_DIR"] = data_dir
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", {**APPS, **SCHEDULED_APPS}[app], "--factory", "--host", "127.0.0.1",
         "--port", str(port), "--workers", str(workers), "--loop", LOOP, "--log-level", "warning",
         "--no-access-log"],
        env=env,
    )  # fmt: skip
    try:
        _wait_answering(port, proc)
        yield Served(port, proc.pid)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server process by its PID: SIGTERM, then SIGKILL after 30 s."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_answering(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port} (exit {proc.poll()})")
        time.sleep(0.05)


def one(servers: Servers, app: str, workers: int, settings: Settings, data_dir: str | None = None) -> float:
    """Jobs per second of the lifecycle through ``app``, on a fresh server."""
    with (
        servers.fresh() as url,
        ledger_on(servers, url) as ledger,
        serving(app, url, ledger.keys.namespace, workers, data_dir) as served,
    ):
        token = None
        if app == "ours_auth":
            token = new_secret()
            ledger.run(create_token("bench", ["admin"], digest(token)))
        result = http_load.run(
            "127.0.0.1", served.port, QUEUE, settings.http_jobs, settings.http_connections,
            warmup=min(200, settings.http_jobs), token=token,
        )  # fmt: skip
    return result.rate


def worker_run(servers: Servers, jobs: int, procs: int, conc: int) -> float:
    """``jobs`` no-op jobs, created beforehand, processed by ``procs`` processes of the Worker class
    over HTTP (concurrency ``conc``) through one served app; jobs/s from the first completion to the
    last."""
    with (
        servers.fresh() as url,
        ledger_on(servers, url) as ledger,
        serving("ours", url, ledger.keys.namespace, 1) as served,
    ):
        enqueue_pipelined(ledger, jobs)
        http_url = f"http://127.0.0.1:{served.port}"
        workers = PyWorkers(class_worker, (url, ledger.keys.namespace, conc, http_url), procs)
        return process(ledger.client, workers, completed_probe(ledger.keys), jobs).rate


def worker_figure(servers: Servers, settings: Settings, log: Any = print) -> Figure:
    """The Worker class over HTTP at the best of the grid the Worker over Redis is tried at, through
    one app process (as ``jobledger serve`` runs)."""
    tried: dict[tuple[int, int], float] = {}
    for procs, conc in settings.grid:
        tried[(procs, conc)] = worker_run(servers, settings.grid_jobs, procs, conc)
        log(f"  http Worker {F.config_note(procs, conc)}: {tried[(procs, conc)]:,.0f} jobs/s")
    best = max(tried, key=lambda c: tried[c])
    note = (f"Worker over HTTP on {event_loop.loop_name()}, {F.config_note(*best)} "
            f"({settings.grid_jobs:,} jobs), one {uvicorn_flavour()} process")  # fmt: skip
    return Figure(
        tried[best], "jobs/s", note, {"grid": {F.config_note(*c): round(r) for c, r in tried.items()}}
    )


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    counts = WORKER_COUNTS[:1] if settings.quick else WORKER_COUNTS
    table: dict[int, dict[str, float]] = {}
    for workers in counts:
        table[workers] = {}
        for app in APPS:
            runs = sorted(one(servers, app, workers, settings) for _ in range(settings.repeats))
            table[workers][app] = runs[len(runs) // 2]
        log(f"  http --workers {workers}: ours {table[workers]['ours']:,.0f} jobs/s, "
            f"with auth {table[workers]['ours_auth']:,.0f} jobs/s, "
            f"bare {table[workers]['bare']:,.0f} jobs/s (x3 requests)")  # fmt: skip
    best = max(table, key=lambda w: table[w]["ours"])
    ours, bare, authed = table[best]["ours"], table[best]["bare"], table[best]["ours_auth"]
    note = f"{uvicorn_flavour()} --workers {best}, {settings.http_connections} connections"
    detail = {"by_workers": {w: {k: round(v) for k, v in r.items()} for w, r in table.items()}}
    return {
        F.PROCESS_HTTP: worker_figure(servers, settings, log),
        F.HTTP_OURS: Figure(ours, "jobs/s", note, detail),
        F.HTTP_BARE: Figure(bare, "jobs/s", "bare Starlette, 3 requests x 1 Redis call each"),
        F.HTTP_RATIO: Figure(bare / ours, "x cost", note),
        F.HTTP_AUTH: Figure(authed, "jobs/s", note + ", [server] auth on, admin token on every request"),
        F.HTTP_AUTH_RATIO: Figure(ours / authed, "x cost", "time per job with auth / without, " + note),
    }

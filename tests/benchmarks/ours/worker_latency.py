"""The :class:`jobledger.worker.worker.Worker`'s latency, one job at a time, at its default settings.

``python -m tests.benchmarks.ours.worker_latency [--samples N] [--gap S] [--transport redis|http|both]``
``python -m tests.benchmarks.ours.worker_latency --idle S``: instead, what an idle worker costs the server
(the commands ``INFO commandstats`` counts over S seconds, the HTTP server's scheduler off).

The producer side is :mod:`tests.benchmarks.ours.ours_client`'s latency measurement (create a job, block
on ``XREAD`` until its ``job_completed``); the worker is the real ``Worker`` class (an async no-op
handler, concurrency 1, every other setting at its default) in a process of its own, over Redis or
over HTTP (a ``jobledger`` app served by uvicorn in another process).  Each transport runs on a
fresh bundled Valkey.  ``--gap S`` waits S seconds between one completion and the next job (0,
the default, is the benchmark's back-to-back measurement; a gap shows what an idle worker costs).
Prints p50 / p99 / max in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator
from typing import Any

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger
from jobledger.worker import event_loop

from . import figures as F
from .ours_client import WARMUP, _last_id, _wait_completed
from .ours_process import QUEUE, _warm, job_id, ledger_on
from .runs import PyWorkers
from .server import Servers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_process(ready: Any, go: Any, stop: Any, index: int, url: str, namespace: str, port: int) -> None:
    """The HTTP server on ``port``, without its scheduler, until ``stop``."""
    import threading

    import uvicorn

    from jobledger.runtime.config import config_from
    from jobledger.server.app import create_app

    config = config_from({"redis": {"key_namespace": namespace}})
    app = create_app(config, url, run_scheduler=False)
    # on asyncio's own loop, as ``jobledger serve`` runs (uvicorn's "auto" would take uvloop)
    served = uvicorn.Config(
        app, host="127.0.0.1", port=port, loop="asyncio", log_level="warning", access_log=False
    )
    server = uvicorn.Server(served)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    ready.put(index)
    stop.wait()
    server.should_exit = True
    thread.join(timeout=10)


def worker_process(
    ready: Any, go: Any, stop: Any, index: int, url: str, namespace: str, http_url: str | None
) -> None:
    """The Worker class at its defaults, over HTTP when ``http_url`` is given, else over Redis."""
    import redis

    from jobledger.worker.worker import Worker

    async def noop(job: Any) -> None:
        return None

    _warm(redis.Redis.from_url(url))
    if http_url:
        worker = Worker(noop, QUEUE, url=http_url)
    else:
        worker = Worker(noop, QUEUE, transport="redis", redis_url=url, namespace=namespace)

    async def main() -> None:
        await asyncio.to_thread(go.wait)
        task = asyncio.create_task(worker.run_async())
        await asyncio.to_thread(stop.wait)
        worker.stop()
        await task

    ready.put(index)
    event_loop.run(main())  # the loop Worker.run and ``jobledger worker`` run it on


def _latencies(ledger: Ledger, samples: int, gap: float) -> list[float]:
    create = commands.create_job(QUEUE, JobOptions())
    stream = ledger.keys.events
    cursor = _last_id(ledger.client, stream)
    out: list[float] = []
    for i in range(samples + WARMUP):
        if gap:
            time.sleep(gap)
        start = time.perf_counter()
        created = ledger.run(create)
        cursor = _wait_completed(ledger.client, stream, cursor, str(job_id(created)).encode())
        if i >= WARMUP:
            out.append((time.perf_counter() - start) * 1000)
    return out


@contextlib.contextmanager
def idle_worker(transport: str, servers: Servers | None = None) -> Iterator[Ledger]:
    """A fresh server (of ``servers``, else a bundled one) with the Worker class running in a
    process of its own (over Redis, or over HTTP through a served app in another), started and left
    a second to reach its idle state; the ledger the worker serves."""
    servers = servers or Servers()
    with servers.fresh() as url, ledger_on(servers, url) as ledger:
        ns = ledger.keys.namespace
        server = None
        http_url = None
        if transport == "http":
            port = _free_port()
            server = PyWorkers(server_process, (url, ns, port), 1)
            server.wait_ready()
            http_url = f"http://127.0.0.1:{port}"
        workers = PyWorkers(worker_process, (url, ns, http_url), 1)
        try:
            workers.wait_ready()
            workers.go()
            time.sleep(1.0)
            yield ledger
        finally:
            workers.stop()
            if server is not None:
                server.stop()


def measure(transport: str, samples: int, gap: float, servers: Servers | None = None) -> list[float]:
    """Milliseconds from create to completion seen, one job at a time, with the Worker class."""
    with idle_worker(transport, servers) as ledger:
        return _latencies(ledger, samples, gap)


def idle_cost(transport: str, seconds: float, servers: Servers | None = None) -> dict[str, int]:
    """The commands a fresh server ran during ``seconds`` of an idle worker (after a second to start)."""
    with idle_worker(transport, servers) as ledger:
        before = _calls(ledger.client)
        time.sleep(seconds)
        after = _calls(ledger.client)
    ran = {name: n - before.get(name, 0) for name, n in after.items() if name != "info"}
    return {name: n for name, n in ran.items() if n}


def figures(servers: Servers, settings: F.Settings, log: Any = print) -> F.Results:
    """The benchmark's latency figures, with the Worker class over Redis at its default settings,
    and what an idle Worker costs the server (commands per second, the higher of its two
    transports)."""
    lat = measure("redis", settings.latency_samples, 0.0, servers)
    note = f"Worker over Redis on {event_loop.loop_name()}, {len(lat)} jobs one at a time, default settings"
    log(f"  ours Worker latency p50 {F.percentile(lat, 50):.2f} ms")
    results = {
        F.LATENCY_P50: F.Figure(F.percentile(lat, 50), "ms", note),
        F.LATENCY_P99: F.Figure(F.percentile(lat, 99), "ms", note, {"max": max(lat)}),
    }
    if not servers.isolated:  # the server's command counts are everyone's
        results[F.IDLE_COMMANDS] = F.Figure(None, "cmds/s", "measured only on a server of its own")
        return results
    idle = {t: sum(idle_cost(t, settings.idle_seconds, servers).values()) / settings.idle_seconds
            for t in ("redis", "http")}  # fmt: skip
    log(f"  ours idle Worker, commands/s: {idle}")
    worst = max(idle, key=lambda t: idle[t])
    results[F.IDLE_COMMANDS] = F.Figure(
        idle[worst], "cmds/s", f"idle Worker over {worst} (the costlier), {settings.idle_seconds:g}s",
        {"by_transport": idle},
    )  # fmt: skip
    return results


def _calls(client: Any) -> dict[str, int]:
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--gap", type=float, default=0.0)
    parser.add_argument("--idle", type=float, default=0.0)
    parser.add_argument("--transport", choices=("redis", "http", "both"), default="both")
    args = parser.parse_args()
    for transport in ("redis", "http") if args.transport == "both" else (args.transport,):
        if args.idle:
            ran = idle_cost(transport, args.idle)
            print(f"idle Worker over {transport}, {args.idle:g}s: {sum(ran.values())} commands {ran}")
            continue
        lat = measure(transport, args.samples, args.gap)
        print(
            f"Worker over {transport}: latency one job at a time, {len(lat)} jobs, gap {args.gap:g}s: "
            f"p50 {F.percentile(lat, 50):.2f} ms, p99 {F.percentile(lat, 99):.2f} ms, "
            f"max {max(lat):.2f} ms"
        )


if __name__ == "__main__":
    main()

"""BullMQ (Node), through ``tests/benchmarks/node/bench.mjs``.

Set-up: ``npm install`` in ``tests/benchmarks/node`` the first time (the versions of its lock file),
from the npm registry, into its ``node_modules`` (not committed).  Then, on fresh servers:

- Processing: ``addBulk`` beforehand, then P Node processes of ``new Worker(concurrency=C)``
  (started on "go"); done when the ``completed`` set holds every job (BullMQ keeps them).
- Bulk enqueue: ``addBulk`` (best of two batch sizes).  One by one: ``await queue.add()``.
- Latency: ``add`` then ``job.waitUntilFinished(queueEvents)`` (30 s at most per job); the worker
  blocks on BZPOPMIN.  Should the measurement fail (a job not seen finished in time on a loaded
  machine), it is made once more on a fresh server, and the figure's note says so.
- Retained memory: completed jobs kept, the event stream at its default cap of 10,000 entries.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from tests.benchmarks.ours import figures as F
from tests.benchmarks.ours.figures import Figure, Results, Settings
from tests.benchmarks.ours.runs import Probe, RunFailed, process
from tests.benchmarks.ours.sampling import Meter, sample
from tests.benchmarks.ours.server import Servers

from .common import (
    PeerRun,
    best_of_grid,
    enqueue_one_figures,
    latency_figures,
    one_by_one_figure,
    process_figures,
)

NODE_DIR = Path(__file__).resolve().parent.parent / "node"
GRID = ((1, 50), (1, 200), (2, 50), (2, 200))
BULK_BATCHES = (100, 1000)
COMPLETED = "bull:bench:completed"


class NodeWorkers:
    """``procs`` Node processes of ``command``; each prints ``ready``, waits for ``go`` on stdin,
    and works until its stdin closes."""

    def __init__(self, command: Sequence[str], procs: int, cwd: str) -> None:
        self.procs = [
            subprocess.Popen(list(command), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for _ in range(procs)
        ]

    def wait_ready(self) -> None:
        for proc in self.procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RunFailed(f"node worker did not start (said {line!r}, exit {proc.poll()})")

    def go(self) -> None:
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.stdin is not None and not proc.stdin.closed:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _installed() -> bool:
    return (NODE_DIR / "node_modules" / "bullmq" / "package.json").exists()


def install() -> None:
    """Install BullMQ from the npm registry into ``tests/benchmarks/node/node_modules``."""
    if _installed():
        return
    # ``npm install`` keeps to package-lock.json's versions (``npm ci`` refuses this lock file: npm
    # leaves msgpackr-extract's optional per-platform packages out of it)
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True,
        stdout=subprocess.DEVNULL,
    )  # fmt: skip


def unavailable() -> str | None:
    if not shutil.which("node") or not shutil.which("npm"):
        return "Node.js and npm are not on PATH"
    try:
        install()
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"npm could not install BullMQ: {exc}"
    return None


def _node(*args: object) -> dict[str, Any]:
    out = subprocess.run(
        ["node", "bench.mjs", *map(str, args)], cwd=NODE_DIR, check=True, capture_output=True, text=True
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _workers(url: str, procs: int, conc: int) -> NodeWorkers:
    return NodeWorkers(["node", "bench.mjs", "worker", url, str(conc)], procs, str(NODE_DIR))


def _completed(jobs: int) -> Probe:
    return Probe(("ZCARD", COMPLETED), lambda n: int(n))


def run_once(servers: Servers, jobs: int, procs: int, conc: int) -> PeerRun:
    with servers.fresh() as url:
        client = redis.Redis.from_url(url)
        with Meter(client) as enqueued:
            _node("enqueue", url, jobs - 1, 1000)
        timed = process(client, _workers(url, procs, conc), _completed(jobs), jobs)
    return PeerRun(jobs, timed.rate, enqueued.usage, timed.usage)


def _enqueue(servers: Servers, jobs: int, batch: int) -> tuple[float, float]:
    with servers.fresh() as url, Meter(redis.Redis.from_url(url)) as meter:
        seconds = float(_node("enqueue", url, jobs, batch)["seconds"])
    return jobs / seconds, meter.usage.cpu_us_per(jobs)


def _memory(servers: Servers, jobs: int) -> Figure:
    with servers.fresh() as url:
        client = redis.Redis.from_url(url)
        before = sample(client).memory
        _node("enqueue", url, jobs - 1, 1000)
        process(client, _workers(url, 1, 50), _completed(jobs), jobs)
        retained = (sample(client).memory - before) / jobs
        stream = int(client.xlen("bull:bench:events"))
    return Figure(retained, "B/job", f"completed jobs kept; event stream capped ({stream:,} entries)")


def _latency_once(servers: Servers, samples: int) -> list[float]:
    with servers.fresh() as url:
        workers = _workers(url, 1, 1)
        try:
            workers.wait_ready()
            workers.go()
            return [float(ms) for ms in _node("latency", url, samples)["ms"]]
        finally:
            workers.stop()


def _latency(servers: Servers, samples: int, log: Any) -> tuple[list[float], str]:
    """The latencies, measured again once should the first try fail; a note saying whether it was."""
    try:
        return _latency_once(servers, samples), ""
    except (subprocess.CalledProcessError, RunFailed) as exc:
        why = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()[-1:] or [str(exc)]
        log(f"  bullmq latency failed ({why[0]}); measuring it once more on a fresh server")
        return _latency_once(servers, samples), f"; measured twice, the first try failed: {why[0]}"


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    grid = GRID[:1] if settings.quick else GRID
    best, runs, tried = best_of_grid(
        lambda jobs, procs, conc: run_once(servers, jobs, procs, conc), grid, settings, "bullmq", log
    )
    results = process_figures(best, runs, tried)
    results[F.PROCESS_1X1] = Figure(
        run_once(servers, settings.grid_jobs, 1, 1).rate,
        "jobs/s",
        F.config_note(1, 1) + f" ({settings.grid_jobs:,} jobs)",
    )
    batches = BULK_BATCHES[:1] if settings.quick else BULK_BATCHES
    by_batch = {b: _enqueue(servers, settings.grid_jobs, b)[0] for b in batches}
    batch = max(by_batch, key=lambda b: by_batch[b])
    bulk = [_enqueue(servers, settings.jobs, batch) for _ in range(settings.repeats)]
    results[F.ENQUEUE_BULK] = one_by_one_figure(bulk, f"addBulk, batch {batch}")
    one = [_enqueue(servers, settings.enqueue_one_jobs, 0) for _ in range(settings.repeats)]
    results.update(enqueue_one_figures(one, "await queue.add()"))
    lat, retried = _latency(servers, settings.latency_samples, log)
    results.update(latency_figures(lat, "add + waitUntilFinished(QueueEvents); worker on BZPOPMIN" + retried))
    results[F.MEMORY] = _memory(servers, settings.jobs)
    return results

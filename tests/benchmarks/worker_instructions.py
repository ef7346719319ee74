"""``python -m tests.benchmarks.worker_instructions [N]``: a Worker process's own instructions per job.

The other half of :mod:`tests.benchmarks.instructions`, which counts the server's: the bundled
valkey-server runs as usual, and a worker process as a user runs it (``Worker(handler, queue,
transport="redis")`` at concurrency 1, or ``--concurrency C``, and every other default, an async
no-op handler, :meth:`Worker.run`) runs under valgrind's callgrind, instrumented only while N jobs
(1,000 by default) are worked, after 200 that warm it up.  It prints the process's instructions per job:
the interpreter, the event loop, the Redis client and the worker, exact whatever the machine's
load (a timing of the same moves by a fifth from one run to the next here).  Needs valgrind
(``apt-get install valgrind``); ``--keep DIR`` keeps the profile.  The count is of jobs the server
saw completed while counting, so a job or two at either edge is in doubt (0.2% at 1,000; at
concurrency C, up to C of them: count more jobs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from tests.benchmarks.ours.server import bundled_server

from .instructions import _total

QUEUE = "q"
NAMESPACE = "measured"
WARM_UP = 200
BATCH = 500
#: Seconds the worker under valgrind may take to start and work its warm-up.
START_LIMIT = 300.0


def _work(url: str, concurrency: int) -> None:
    """The worker process: what a user runs, until SIGTERM."""
    from jobledger.worker.worker import Worker

    async def noop(job: Any) -> None:
        return None

    Worker(noop, QUEUE, concurrency=concurrency, transport="redis", redis_url=url, namespace=NAMESPACE).run()


def _control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def _until(client: redis.Redis, key: str, count: int, worker: subprocess.Popen[bytes], limit: float) -> int:
    """Wait until the completed set holds ``count`` jobs; how many it holds then."""
    deadline = time.monotonic() + limit
    while (done := int(client.zcard(key))) < count:
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker stopped or stalled at {done} of {count} jobs")
        time.sleep(0.01)
    return done


def count(n: int, keep: Path | None = None, concurrency: int = 1) -> tuple[int, int]:
    """(the worker process's instructions while counting, jobs completed meanwhile)."""
    workdir = Path(tempfile.mkdtemp(prefix="jobledger-worker-instructions-"))
    out = workdir / "callgrind.out"
    with bundled_server() as url:
        client = redis.Redis.from_url(url)
        ledger = Ledger(client, NAMESPACE)
        ledger.run(commands.put_queue(QUEUE, QueueSettings()))
        jobs = n + WARM_UP
        for start in range(0, jobs, BATCH):
            ledger.run(commands.create_jobs(QUEUE, [JobOptions()] * min(BATCH, jobs - start)))
        completed = Keys(NAMESPACE).queue_status(QUEUE, "completed")
        worker = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
             sys.executable, "-m", "tests.benchmarks.worker_instructions", "--work", url,
             "--concurrency", str(concurrency)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
        try:
            _until(client, completed, WARM_UP, worker, START_LIMIT)
            _control(worker.pid, "-i", "on")
            _control(worker.pid, "-z")
            first = int(client.zcard(completed))
            last = _until(client, completed, jobs, worker, START_LIMIT)
            _control(worker.pid, "-d")
            _control(worker.pid, "-i", "off")
            dumps = [p for p in workdir.glob("callgrind.out.*") if p.stat().st_size]
            profile = max(dumps, key=lambda p: p.stat().st_mtime)
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(profile, keep / "callgrind.worker.out")
            return _total(profile), last - first
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
            shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("n", type=int, nargs="?", default=1000, help="jobs counted (default 1000)")
    parser.add_argument("--keep", type=Path, help="a folder to keep the profile in")
    parser.add_argument("--concurrency", type=int, default=1, help="the worker's concurrency (default 1)")
    parser.add_argument("--work", metavar="URL", help=argparse.SUPPRESS)  # the worker process itself
    args = parser.parse_args(argv)
    if args.work:
        _work(args.work, args.concurrency)
        return
    if not shutil.which("valgrind"):
        parser.exit(2, "valgrind is not installed (apt-get install valgrind)\n")
    total, jobs = count(args.n, args.keep, args.concurrency)
    print(
        f"worker at concurrency {args.concurrency}: {total:,} instructions in the Worker's process,"
        f" {total / jobs:,.0f} per job ({jobs:,})"
    )


if __name__ == "__main__":
    main()

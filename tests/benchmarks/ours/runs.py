"""Processing runs, the same for every system: workers start, say they are ready, are let go at
once, and the rate is timed from the first completion the server shows to the last, so that
neither a worker's start nor its first fetch counts.

Start-up (imports, connections, script loading) is outside the timed part: each worker process
reports ready and waits for "go".  The parent then polls one cheap read (the count of finished
jobs) every :data:`POLL` seconds until it reaches the number enqueued; those probes are counted
and taken off the server's command counts.  Python workers are ``multiprocessing`` children
(spawned, so nothing is inherited); any other :class:`Workers` will do (a peer's own processes).
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from .sampling import Usage, between, sample

POLL = 0.002
READY_TIMEOUT = 60.0
#: Stop waiting for a run after this long, or after this long without progress (a broken worker
#: must not hang the benchmark).
RUN_TIMEOUT = 600.0
STALL = 30.0


class RunFailed(RuntimeError):
    """A run did not finish: a worker died, or the jobs were not all done in time."""


class Workers(Protocol):
    """A set of worker processes that can be started, released together, and stopped."""

    def wait_ready(self) -> None: ...

    def go(self) -> None: ...

    def alive(self) -> bool: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Probe:
    """How the parent reads the number of finished jobs: one command, counted as it is sent."""

    command: tuple[Any, ...]
    parse: Callable[[Any], int]

    @property
    def name(self) -> str:
        return str(self.command[0]).lower()


@dataclass(frozen=True)
class Timed:
    """A timed processing run: how long from "go" to the last job done, what the server spent
    meanwhile, and the rate from the first completion seen to the last (``counted`` jobs finished
    in ``span`` seconds after the probe first saw any done)."""

    seconds: float
    usage: Usage
    counted: int = 0
    span: float = 0.0

    @property
    def rate(self) -> float:
        """Jobs per second from the first completion to the last (from "go", should every job
        have finished by the first probe that saw one)."""
        if self.counted > 0 and self.span > 0:
            return self.counted / self.span
        return (self.counted or 1) / self.seconds


def process(client: redis.Redis, workers: Workers, probe: Probe, jobs: int) -> Timed:
    """Release ``workers`` and time them until ``probe`` reads ``jobs`` done."""
    workers.wait_ready()
    before = sample(client)
    start = time.perf_counter()
    workers.go()
    probes, done, moved = 0, -1, start
    first: tuple[float, int] | None = None  # when the probe first saw jobs done, and how many
    try:
        while True:
            probes += 1
            now_done = probe.parse(client.execute_command(*probe.command))
            now = time.perf_counter()
            if now_done >= jobs:
                break
            if first is None and now_done > 0:
                first = (now, now_done)
            if now_done != done:
                done, moved = now_done, now
            if not workers.alive():
                raise RunFailed("a worker process ended before every job was done")
            if now - moved > STALL or now - start > RUN_TIMEOUT:
                raise RunFailed(f"stuck at {done} of {jobs} jobs done after {now - start:.0f}s")
            time.sleep(POLL)
        seconds = now - start
        usage = between(before, sample(client)).without(probe.name, probes)
    finally:
        workers.stop()
    if first is None:
        return Timed(seconds, usage, jobs)
    return Timed(seconds, usage, jobs - first[1], now - first[0])


class PyWorkers:
    """``procs`` spawned Python processes, each running ``target(ready, go, stop, *args)``.

    ``target`` must put one item on ``ready`` once set up, wait for ``go``, then work until ``stop``
    is set (or until it has nothing left).
    """

    def __init__(self, target: Callable[..., None], args: Sequence[Any], procs: int) -> None:
        ctx = mp.get_context("spawn")
        self.ready: Any = ctx.Queue()
        self._go = ctx.Event()
        self._stop = ctx.Event()
        self.procs = [
            ctx.Process(target=target, args=(self.ready, self._go, self._stop, i, *args), daemon=True)
            for i in range(procs)
        ]
        for proc in self.procs:
            proc.start()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        waiting = len(self.procs)
        while waiting:
            try:
                self.ready.get(timeout=0.2)
                waiting -= 1
            except queue.Empty:
                if not self.alive() or time.monotonic() > deadline:
                    self.stop()
                    raise RunFailed("a worker process did not start") from None

    def go(self) -> None:
        self._go.set()

    def alive(self) -> bool:
        return all(p.is_alive() or p.exitcode == 0 for p in self.procs)

    def stop(self) -> None:
        self._stop.set()
        self._go.set()
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()

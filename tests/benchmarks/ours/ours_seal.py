"""What sealing costs and how well it keeps up (the ``seal`` part, run when ``--only`` names it).

- **Rates with sealing on and off, side by side**: on a fresh server each time, jobs are created
  (``create_jobs``, pipelined) then processed by the Worker class over Redis, once with a sealer
  running (a process of its own, as the scheduler's, at the default interval of 1 s) and once
  without; the runs alternate, ``repeats`` each, and the median is reported.
- **Served, as ``jobledger serve`` runs it**: the HTTP lifecycle (create, fetch, complete: the
  ``http`` part's load) through the app with its scheduler in the same process, sealing off and on,
  in turns, ``repeats`` each: the sealer there shares the process with the requests.
- **Seal lag at that load**: while the sealed runs create and process, the parent reads the seal lag
  (:class:`jobledger.scheduler.sealer.SealState`) every 50 ms: p50 and p99 of those samples; and the
  ledger's peak append rate (events per second of the faster phase).
- **The sealer's rate on one core**: a sealer, in this process, seals the whole ledger of the last
  run from nothing; events per second of its CPU time (hashing, tiles, files, and the reads).
- **A proof's cost in reads**: the files an inclusion proof (index search and tiles) and a job's
  receipt read, at the ledger's size.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis
import redis.asyncio

from jobledger.blobs.log_files import LogFiles
from jobledger.ledger.clock import now_ms
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.ledger.seal.checkpoints import origin
from jobledger.ledger.seal.keys import generate
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.replay.sealed_log import SealedLog
from jobledger.runtime.config import BlobsConfig
from jobledger.scheduler.sealer import Sealer, SealSettings, seal_state

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_http import one as http_lifecycle
from .ours_process import class_worker, completed_probe, enqueue_pipelined, ledger_on
from .runs import PyWorkers, process
from .server import Servers

#: The Worker class's configuration for these runs: one process, concurrency 64.
PROCS, CONC = 1, 64
LAG_EVERY = 0.05


def _settings(directory: Path, namespace: str) -> SealSettings:
    return SealSettings(1000, generate(origin(namespace)), BlobsConfig(url=str(directory)), directory)


def sealer_process(url: str, namespace: str, directory: str, stop: Any) -> None:
    """The scheduler's sealing loop for one ledger, until ``stop``."""

    async def main() -> None:
        client = redis.asyncio.Redis.from_url(url)
        task = asyncio.create_task(
            Sealer(
                AsyncLedger(client, namespace), _settings(Path(directory), namespace), namespace, None
            ).run()
        )
        await asyncio.to_thread(stop.wait)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()

    asyncio.run(main())


class LagSampler:
    """The seal lag read every :data:`LAG_EVERY` seconds in a thread, while the block runs."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(LAG_EVERY):
            self.samples.append(self.ledger.read(seal_state()).lag_ms(now_ms()) / 1000)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def one_run(servers: Servers, jobs: int, sealed: bool) -> dict[str, Any]:
    """Create then process ``jobs`` on a fresh server, with a sealer running or not."""
    with servers.fresh() as url, ledger_on(servers, url) as ledger, tempfile.TemporaryDirectory() as files:
        ns = ledger.keys.namespace
        stop = mp.get_context("spawn").Event()
        sealer = mp.get_context("spawn").Process(target=sealer_process, args=(url, ns, files, stop))
        if sealed:
            sealer.start()
        sampler = LagSampler(ledger)
        with sampler if sealed else _nothing():
            started = time.perf_counter()
            enqueue_pipelined(ledger, jobs)
            created = time.perf_counter() - started
            events_before = int(ledger.client.xlen(ledger.keys.events))
            workers = PyWorkers(class_worker, (url, ns, CONC), PROCS)
            timed = process(ledger.client, workers, completed_probe(ledger.keys), jobs)
            appended = int(ledger.client.xlen(ledger.keys.events)) - events_before
            caught_up = _wait_sealed(ledger) if sealed else 0.0
        if sealed:
            stop.set()
            sealer.join(timeout=30)
        peak = max(jobs / created, appended / timed.seconds)
        out = {"create": jobs / created, "process": timed.rate, "lag": sampler.samples,
               "append_peak": peak, "caught_up_s": caught_up}  # fmt: skip
        if sealed:
            out.update(_sealer_rate(url, ns) | _proof_reads(ledger, ns))
        return out


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _wait_sealed(ledger: Ledger, timeout: float = 120) -> float:
    """Seconds until the sealer has sealed every event."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if ledger.read(seal_state()).waiting is None:
            return time.perf_counter() - started
        time.sleep(0.05)
    raise RuntimeError("the sealer did not catch up")


def _sealer_rate(url: str, namespace: str) -> dict[str, Any]:
    """A sealer sealing the whole ledger from nothing, in this process: events per CPU second."""

    async def seal_all(directory: Path) -> int:
        client = redis.asyncio.Redis.from_url(url)
        sealer = Sealer(AsyncLedger(client, namespace), _settings(directory, namespace), namespace, None)
        sealer.interval = 3600  # one publication at the end, as a sealer far behind would batch
        total = 0
        while sealed := await sealer.round():
            total += sealed
        await client.aclose()
        return total

    with tempfile.TemporaryDirectory() as files:
        cpu, wall = time.process_time(), time.perf_counter()
        events = asyncio.run(seal_all(Path(files)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"sealer_events": events, "sealer_cpu_rate": events / cpu, "sealer_wall_rate": events / wall}


class CountingFiles(LogFiles):
    """A log's files, counting the reads."""

    def __init__(self, inner: LogFiles) -> None:
        self.inner, self.reads, self.description = inner, 0, inner.description

    def read(self, path: str) -> bytes | None:
        self.reads += 1
        return self.inner.read(path)

    def create(self, path: str, data: bytes) -> bool:
        return self.inner.create(path, data)

    def replace(self, path: str, data: bytes) -> None:
        self.inner.replace(path, data)

    def remove_tree(self, path: str) -> None:
        self.inner.remove_tree(path)

    def names(self, path: str) -> list[str]:
        return self.inner.names(path)


def _proof_reads(ledger: Ledger, namespace: str) -> dict[str, Any]:
    """The files read for one inclusion proof (a middle event) and one job's receipt, at full size."""
    with tempfile.TemporaryDirectory() as files:
        settings = _settings(Path(files), namespace)
        asyncio.run(_seal_once(ledger.client.connection_pool.connection_kwargs, namespace, settings))
        counting = CountingFiles(settings.files(namespace, None))
        log = SealedLog(counting, origin(namespace), [settings.signer.verifier])
        latest = log.latest()
        assert latest is not None
        size = latest.checkpoint.size
        entries = ledger.client.xrange(ledger.keys.events)
        middle_id = entries[size // 2][0].decode()
        counting.reads = 0
        index = log.index_of(middle_id, size)
        assert index is not None
        log.inclusion(index, size)
        inclusion = counting.reads
        job = next(f[b"job"] for _, f in entries[size // 2 :] if b"job" in f)
        leaves = [(i.decode(), leaf_bytes(i, f)) for i, f in entries if f.get(b"job") == job]
        counting.reads = 0
        note = log.latest_note()
        assert note is not None
        log.receipt(int(job), note, settings.signer.verifier, leaves)
        return {"size": size, "inclusion_reads": inclusion, "receipt_reads": counting.reads,
                "receipt_events": len(leaves)}  # fmt: skip


async def _seal_once(kwargs: dict[str, Any], namespace: str, settings: SealSettings) -> None:
    client = redis.asyncio.Redis(host=kwargs["host"], port=kwargs["port"])
    sealer = Sealer(AsyncLedger(client, namespace), settings, namespace, None)
    sealer.interval = 3600
    while await sealer.round():
        pass
    await client.aclose()


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def measure(servers: Servers, settings: Settings, log: Any = print) -> Results:
    jobs = settings.jobs
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for repeat in range(settings.repeats):
        for sealed in (False, True):
            log(f"seal: {jobs} jobs, sealing {'on' if sealed else 'off'} ({repeat + 1}/{settings.repeats})")
            runs[sealed].append(one_run(servers, jobs, sealed))
    served: dict[str, list[float]] = {"ours_scheduled": [], "ours_sealed": []}
    for repeat in range(settings.repeats):
        for app in served:
            log(f"seal: served over HTTP, {app} ({repeat + 1}/{settings.repeats})")
            with tempfile.TemporaryDirectory() as data:
                served[app].append(http_lifecycle(servers, app, 1, settings, data))
    note = f"{jobs} jobs; Worker class over Redis, {PROCS} x {CONC}; median of {settings.repeats}"
    http_note = f"HTTP lifecycle, {settings.http_jobs} jobs, the app with its scheduler"
    http_note += f"; median of {settings.repeats}"

    def median(sealed: bool, key: str) -> float:
        return statistics.median(r[key] for r in runs[sealed])

    lags = [s for r in runs[True] for s in r["lag"]]
    last = runs[True][-1]
    return {
        F.SEAL_CREATE_OFF: Figure(median(False, "create"), "jobs/s", note + "; sealing off"),
        F.SEAL_CREATE_ON: Figure(median(True, "create"), "jobs/s", note + "; a sealer running"),
        F.SEAL_PROCESS_OFF: Figure(median(False, "process"), "jobs/s", note + "; sealing off"),
        F.SEAL_PROCESS_ON: Figure(median(True, "process"), "jobs/s", note + "; a sealer running"),
        "seal_http_off": Figure(
            statistics.median(served["ours_scheduled"]), "jobs/s", http_note + "; sealing off"
        ),
        "seal_http_on": Figure(
            statistics.median(served["ours_sealed"]), "jobs/s", http_note + "; sealing in the process"
        ),
        F.SEAL_APPEND_PEAK: Figure(median(True, "append_peak"), "events/s", "the faster phase, sealed runs"),
        F.SEAL_SEALER_RATE: Figure(
            last["sealer_cpu_rate"],
            "events/s",
            f"{last['sealer_events']} events, per CPU second of one process",
            detail={"wall_rate": last["sealer_wall_rate"]},
        ),
        F.SEAL_LAG_P50: Figure(_pct(lags, 0.5), "s", f"{len(lags)} samples every {LAG_EVERY}s, sealed runs"),
        F.SEAL_LAG_P99: Figure(
            _pct(lags, 0.99),
            "s",
            f"{len(lags)} samples every {LAG_EVERY}s, sealed runs",
            detail={"max": max(lags, default=0.0), "caught_up_s": [r["caught_up_s"] for r in runs[True]]},
        ),
        F.SEAL_INCLUSION_READS: Figure(last["inclusion_reads"], "files", f"tree of {last['size']} leaves"),
        F.SEAL_RECEIPT_READS: Figure(
            last["receipt_reads"],
            "files",
            f"a job of {last['receipt_events']} events, tree of {last['size']}",
        ),
    }

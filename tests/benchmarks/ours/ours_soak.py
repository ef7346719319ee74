"""Ours under a steady load for several archive rounds: Redis memory with retention on.

A producer creates, fetches and completes jobs at a steady rate (through the ledger's commands, in
this process) on a queue whose ended jobs expire after :data:`EXPIRES`, while the scheduler runs
as ``serve`` runs it: its checks, and archive rounds every :data:`CHECK` of the events older than
:data:`ARCHIVE_AFTER` into a blob store on local disk.  Redis ``used_memory`` is sampled once a
round, with the stream's own size and the number of keys, so that what grows shows; after the first
round (the events of :data:`ARCHIVE_AFTER` held, then archived) it should stay flat.  At the end
every job's history is read back (``GET /job/{id}/history``'s reader, the archive through the blob
store) and must be whole.  Named only (``--only soak``): it takes minutes.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path

import redis
import redis.asyncio

from jobledger.blobs import LocalBlobStore
from jobledger.blobs.archive import BlobArchive
from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.projections.archive import parse_record
from jobledger.projections.history import job_history
from jobledger.replay.archive.writer import ArchiveSettings
from jobledger.scheduler.loop import CHECKS
from jobledger.scheduler.loop import run as run_scheduler

from . import figures as F
from .figures import Figure, Results, Settings
from .server import Servers

NAMESPACE = "bench-soak"
ARCHIVE_AFTER = 5_000
CHECK = 1_000
EXPIRES = "2s"
RATE = 200  # jobs a second
ROUNDS = 40
QUICK_ROUNDS = 12
WHOLE = ["job_created", "job_started", "job_completed", "job_expired"]


def _produce(url: str, stop: threading.Event, made: list[int]) -> None:
    """Jobs created, fetched and completed at :data:`RATE` a second until ``stop``."""
    client = redis.Redis.from_url(url)
    ledger = Ledger(client, NAMESPACE)
    started = time.monotonic()
    try:
        while not stop.is_set():
            job = ledger.run(commands.create_job("soak", JobOptions(input={"n": len(made)})))
            made.append(job.id)
            for got in ledger.run(commands.fetch_jobs("soak", 1, "w")):
                ledger.run(commands.update_job(got.id, JobUpdate(status="completed", attempt=got.attempt)))
            time.sleep(max(0.0, started + len(made) / RATE - time.monotonic()))
    finally:
        client.close()


async def _histories(url: str, archive: BlobArchive, jobs: list[int]) -> tuple[int, int]:
    """How many of ``jobs`` have their whole history (expired ones) or a whole one so far."""
    client = redis.asyncio.Redis.from_url(url)
    whole = 0
    try:
        ledger = AsyncLedger(client, NAMESPACE)
        for job in jobs:
            types = [e["type"] for e in await job_history(ledger, job, archive)]
            whole += types in (WHOLE, WHOLE[:3])
    finally:
        await client.aclose()
    return whole, len(jobs)


async def _soak(url: str, archive: BlobArchive, rounds: int, made: list[int]) -> list[dict[str, int]]:
    """The load and the scheduler for ``rounds`` archive rounds; a sample of Redis a round."""
    client = redis.asyncio.Redis.from_url(url)
    settings = ArchiveSettings(ARCHIVE_AFTER, CHECK, archive)
    every = dict.fromkeys(CHECKS, CHECK)
    scheduler = asyncio.create_task(run_scheduler(AsyncLedger(client, NAMESPACE), every, settings))
    stop = threading.Event()
    producer = asyncio.create_task(asyncio.to_thread(_produce, url, stop, made))
    curve: list[dict[str, int]] = []
    start = time.monotonic()
    try:
        for n in range(1, rounds + 1):
            await asyncio.sleep(max(0.0, start + n * CHECK / 1000 - time.monotonic()))
            memory = await client.info("memory")
            record = parse_record(await client.hgetall(Keys(NAMESPACE).build("archive")))
            events = Keys(NAMESPACE).events
            curve.append({
                "s": n, "used_memory": int(memory["used_memory"]), "jobs": len(made),
                "stream": int(await client.xlen(events)),
                "stream_bytes": int(await client.memory_usage(events, samples=0) or 0),
                "keys": int(await client.dbsize()),
                "archived": record.count if record else 0,
            })  # fmt: skip
    finally:
        stop.set()
        await producer
        scheduler.cancel()
        await asyncio.gather(scheduler, return_exceptions=True)
        await client.aclose()
    return curve


def measure(servers: Servers, settings: Settings, log: object) -> Results:
    rounds = QUICK_ROUNDS if settings.quick else ROUNDS
    made: list[int] = []
    with servers.fresh() as url, tempfile.TemporaryDirectory(prefix="jobledger-soak-") as root:
        archive = BlobArchive.over(LocalBlobStore(Path(root) / "blobs"), Path(root), NAMESPACE)
        with redis.Redis.from_url(url) as client:
            queue = QueueSettings.model_validate({"expires_after": EXPIRES})
            Ledger(client, NAMESPACE).run(commands.put_queue("soak", queue))
        curve = asyncio.run(_soak(url, archive, rounds, made))
        whole, total = asyncio.run(_histories(url, archive, made))
    settled = [p["used_memory"] for p in curve if p["s"] * CHECK > 2 * ARCHIVE_AFTER]
    growth = (settled[-1] - settled[0]) / max(1, len(settled) - 1) if len(settled) > 1 else 0.0
    note = f"{RATE} jobs/s, archive_after {ARCHIVE_AFTER / 1000:g}s, a round every {CHECK / 1000:g}s"
    return {
        F.SOAK_MEMORY: Figure(settled[-1] / 2**20 if settled else None, "MiB", note, {"curve": curve}),
        F.SOAK_GROWTH: Figure(growth / 1024, "KiB/s", "used_memory after two archive_after, per second"),
        F.SOAK_WHOLE: Figure(whole / total if total else None, "ratio", f"{whole} of {total} whole"),
    }

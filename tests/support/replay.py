"""Helpers of the replay, archive and export tests: a varied workload, what a ledger holds, and an
archive round run from synchronous code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import redis
import redis.asyncio

from jobledger.blobs import LocalBlobStore
from jobledger.blobs.archive import BlobArchive
from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay.archive.writer import SEGMENT_EVENTS, Archiver, ArchiveSink
from jobledger.replay.source import xrange
from jobledger.scheduler.loop import tick
from tests.support.ledger import create, fetch, put_queue, update

QUEUES = ("mail", "video")


def workload(ledger: Ledger, jobs: int = 24) -> list[int]:
    """Queues and jobs in every state: completed, failed and retried, cancelled, deleted, running,
    queued; tags, priorities, non-ASCII input.  The ids created."""
    for name in QUEUES:
        put_queue(ledger, name, retries=1, retry_delays=["0s"], expires_after="1h")
    ids = [
        create(ledger, QUEUES[i % 2], input={"n": i, "text": "héllo ✓"}, tags=[f"t{i % 3}"], priority=i % 3)
        for i in range(jobs)
    ]
    for name in QUEUES:
        for n, started in enumerate(fetch(ledger, name, count=jobs // 3, worker="w1")):
            status = ("completed", "failed", "cancelled")[n % 3]
            update(ledger, started.id, status=status, output={"n": n}, attempt=started.attempt)
    tick(ledger)  # the failed jobs are retried at once (delay 0s)
    ledger.run(commands.delete_job(ids[-1]))
    return ids


def stream_entries(client: redis.Redis, namespace: str) -> list[tuple[bytes, list[tuple[bytes, bytes]]]]:
    """Every entry of the namespace's stream: its id and its fields, in the stream's order."""
    return [(entry_id, list(fields.items())) for entry_id, fields in xrange(client, Keys(namespace).events)]


def stream_ids(client: redis.Redis, namespace: str) -> list[str]:
    return [entry_id.decode() for entry_id, _ in stream_entries(client, namespace)]


def local_archive(root: Path, namespace: str) -> BlobArchive:
    """The archive of ledger ``namespace`` in a blob store on local disk at ``root``."""
    return BlobArchive.over(LocalBlobStore(root), root, namespace)


def archive(redis_url: str, namespace: str, into: ArchiveSink, cutoff: int,
            segment_events: int = SEGMENT_EVENTS) -> int:  # fmt: skip
    """One archive round: every event with ``at`` before ``cutoff`` into ``into``; how many."""

    async def round_() -> int:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await Archiver(client, Keys(namespace), into, segment_events).archive_once(cutoff)
        finally:
            await client.aclose()

    return asyncio.run(round_())

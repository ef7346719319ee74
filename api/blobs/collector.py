"""The blob collector: mark and sweep the blobs no job refers to.

Marked: the SHA-256s in the ``blobs`` projection, which counts the files and results of the jobs
still in the projections (expiry and delete drop a job's counts).  A blob the store holds that is not
marked is a candidate, and is deleted once it has been unmarked for at least the grace: an upload in
flight (stored, its job not created yet) must never be swept, and the grace is its time to become
marked.

When a candidate was first seen unmarked is remembered in a bookkeeping key of the ledger,
``{NS}:blobs:unmarked`` (SHA-256 -> ms), not in the store's modified times, which an object store
(S3) cannot refresh; it is the ledger's own key (like the archive's record), so replay and its
comparisons never see it.  A round lists the store in batches, reads each batch's marks and entries
in one round trip, enters the new candidates with the time of this round, clears the entries of
blobs marked again, and deletes the candidates whose entry is older than the grace: each delete is
claimed first by a script (``claim_blob``) that re-reads the mark and the entry right before it,
and marks the entry as being deleted until the store's delete returned.

The server and the workers call :func:`touched` (through :class:`jobledger.blobs.guarded.GuardedStore`)
when they store a blob (a put of bytes already held too) and before a job names a stored blob: the
entry goes, so the grace starts again; while the collector is deleting that very blob,
:func:`touched` waits until the delete is done, and the caller then finds the blob gone (and stores
it again) rather than naming a blob about to vanish.

Staging left behind by uploads that stopped (a crash) is removed once older than the grace too.

One store, one ledger: the marks are this ledger's, so a store another namespace shared would lose
that namespace's blobs; :func:`jobledger.blobs.open_store` gives each namespace its own part of the
place ``[blobs] url`` names.

Cost: a round lists the whole store and reads the marks of every blob, one round trip per
:data:`BATCH` blobs, and holds the SHA-256s listed in memory (about 100 bytes each) to drop entries of
blobs that are gone: in proportion to the store's size, which is fine for a round every ten minutes
(``[blobs] sweep_interval``).  Rounds of several schedulers exclude each other with a lock
(``{NS}:blobs:sweep:lock``).  Counters (``{NS}:blobs:sweep``: blobs and bytes swept, staging files
removed) are read by ``/metrics``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis

from jobledger.blobs.holders import uploads_key
from jobledger.blobs.store import Blob, BlobError, BlobStore
from jobledger.ledger.durations import format_ms
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.partitioned import OpeningLedger
from jobledger.ledger.reads import Read
from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.scripts import source

if TYPE_CHECKING:
    from jobledger.runtime.config import BlobsConfig

log = logging.getLogger("jobledger.blobs")

#: Blobs whose marks one round trip reads.
BATCH = 500
#: How long a round may hold the lock (ms): a collector that stopped lets the next one in after it.
LOCK_MS = 10 * 60_000
#: A claim older than this (ms) was left by a collector that stopped between claim and delete.
CLAIM_MS = 60_000
#: How often (s) :func:`touched` looks again while the blob is being deleted.
TOUCH_POLL = 0.05
DELETING = "deleting:"


@dataclass(frozen=True)
class SweepSettings:
    """``[blobs]``: a round every ``interval_ms``; a blob is deleted once unmarked for ``grace_ms``."""

    interval_ms: int
    grace_ms: int


def sweep_settings(config: BlobsConfig) -> SweepSettings | None:
    """The configured collector, None when ``sweep_interval`` is 0 (blobs are kept forever)."""
    if config.sweep_interval <= 0:
        return None
    return SweepSettings(config.sweep_interval, config.sweep_grace)


@dataclass
class SweepRound:
    """What one round found and did."""

    listed: int = 0
    marked: int = 0
    candidates: int = 0  # unmarked, whatever their age
    swept: list[str] = field(default_factory=list)  # SHA-256s deleted
    swept_bytes: int = 0
    staging: int = 0  # staging files removed


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _marks(shas: list[str]) -> Read[tuple[list[bool], list[str | None]]]:
    """For each SHA-256: whether the live ``blobs`` projection names it, and its collector entry."""

    def parse(replies: list[Any]) -> tuple[list[bool], list[str | None]]:
        refs, entries = replies
        return [r is not None for r in refs], [None if e is None else _s(e) for e in entries]

    return Read(lambda k: [("HMGET", k.blob_refs, *shas), ("HMGET", k.build("blob_unmarked"), *shas)], parse)


class Collector:
    """Sweeps one ledger's blobs from ``store`` (see the module).  On a ledger split into partitions,
    ``ledger`` is the home partition, which keeps the collector's bookkeeping, and ``others`` the
    other partitions: a blob is named while any partition's ``blobs`` projection names it.  Reading
    the other partitions before the home partition's claim is safe: a job about to name a blob first
    looks it up, which restarts its grace in the home partition, so the claim (which reads the grace
    again, in one step) fails."""

    def __init__(
        self, ledger: AsyncLedger, store: BlobStore, grace_ms: int, others: Sequence[AsyncLedger] = ()
    ) -> None:
        self.ledger, self.store, self.grace_ms, self.others = ledger, store, grace_ms, list(others)
        self.keys = ledger.keys
        self.claim = ledger.client.register_script(source("claim_blob"))

    async def sweep(self) -> SweepRound | None:
        """One round; None without doing anything while another collector holds the lock."""
        lock, token = self.keys.build("blob_sweep_lock"), uuid.uuid4().hex
        client = self.ledger.client
        if not await client.set(lock, token, nx=True, px=LOCK_MS):
            return None
        try:
            return await self._round()
        finally:
            if _s(await client.get(lock) or b"") == token:
                await client.delete(lock)

    async def _round(self) -> SweepRound:
        now = self.ledger.clock()
        done = SweepRound()
        listed: set[str] = set()
        batch: list[Blob] = []
        async for blob in self.store.list():
            batch.append(blob)
            if len(batch) >= BATCH:
                await self._batch(batch, now, done)
                listed.update(b.sha256 for b in batch)
                batch = []
        if batch:
            await self._batch(batch, now, done)
            listed.update(b.sha256 for b in batch)
        await self._forget_gone(listed)
        done.staging = await self.store.sweep_staging((now - self.grace_ms) / 1000)
        if done.swept or done.staging:
            await self._count(done, now)
        return done

    async def _batch(self, blobs: list[Blob], now: int, done: SweepRound) -> None:
        shas = [b.sha256 for b in blobs]
        marked, entries = await self.ledger.read(_marks(shas))
        for other in self.others:
            named, _ = await other.read(_marks(shas))
            marked = [a or b for a, b in zip(marked, named, strict=True)]
        unmarked_key = self.keys.build("blob_unmarked")
        pipe = self.ledger.client.pipeline(transaction=False)
        due: list[Blob] = []
        for blob, is_marked, entry in zip(blobs, marked, entries, strict=True):
            done.listed += 1
            if is_marked:
                done.marked += 1
                if entry is not None:
                    pipe.hdel(unmarked_key, blob.sha256)
                continue
            done.candidates += 1
            if entry is None:
                pipe.hsetnx(unmarked_key, blob.sha256, now)
            elif entry.startswith(DELETING) or int(entry) <= now - self.grace_ms:
                due.append(blob)
        await pipe.execute()
        for blob in due:
            if await self._delete(blob, now):
                done.swept.append(blob.sha256)
                done.swept_bytes += blob.size

    async def _delete(self, blob: Blob, now: int) -> bool:
        """Claim the blob (the mark and the entry read again, in one step), delete it and the record
        of its uploads (:mod:`jobledger.blobs.holders`), drop its entry."""
        args = [blob.sha256, now - self.grace_ms, now]
        if not await self.claim(keys=[self.keys.ledger_prefix], args=args):
            return False
        try:
            await self.store.delete(blob.sha256)
            await self.ledger.client.delete(uploads_key(self.ledger, blob.sha256))
        finally:
            await self.ledger.client.hdel(self.keys.build("blob_unmarked"), blob.sha256)
        log.info("swept blob %s (%d bytes), unreferenced since before the grace", blob.sha256, blob.size)
        return True

    async def _forget_gone(self, listed: set[str]) -> None:
        """Drop the entries of blobs the store no longer holds (deleted by hand, or swept)."""
        key = self.keys.build("blob_unmarked")
        gone = [
            _s(sha)
            async for sha, entry in self.ledger.client.hscan_iter(key)
            if _s(sha) not in listed and not _s(entry).startswith(DELETING)
        ]
        for start in range(0, len(gone), BATCH):
            await self.ledger.client.hdel(key, *gone[start : start + BATCH])

    async def _count(self, done: SweepRound, now: int) -> None:
        """Add a round that removed something to the counters (a round that removed nothing writes
        nothing)."""
        key = self.keys.build("blob_sweep")
        pipe = self.ledger.client.pipeline(transaction=False)
        pipe.hincrby(key, "swept", len(done.swept))
        pipe.hincrby(key, "swept_bytes", done.swept_bytes)
        pipe.hincrby(key, "staging", done.staging)
        pipe.hset(key, "last_at", now)
        await pipe.execute()


async def touched(ledger: AsyncLedger, sha256: str, *, claim_ms: int = CLAIM_MS) -> None:
    """A blob was just stored (new or already held), or a job is about to name it: the collector
    forgets that it saw it unmarked, so it is not a candidate again before a full grace.  While a
    collector is deleting it, waits until the delete is done (then the store no longer holds it)."""
    script = ledger.client.register_script(source("touch_blob"))
    while not await script(keys=[ledger.keys.ledger_prefix], args=[sha256, ledger.clock(), claim_ms]):
        await asyncio.sleep(TOUCH_POLL)


@dataclass(frozen=True)
class SweepCounters:
    """The collector's counters since the ledger began (``{NS}:blobs:sweep``): blobs and bytes
    swept, staging files removed, when a round last removed something."""

    swept: int = 0
    swept_bytes: int = 0
    staging: int = 0
    last_at: int | None = None


def sweep_counters() -> Read[SweepCounters]:
    """The counters, for ``/metrics``."""

    def parse(replies: list[Any]) -> SweepCounters:
        reply = replies[0] or {}
        pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
        found = {_s(k): int(v) for k, v in pairs}
        return SweepCounters(found.get("swept", 0), found.get("swept_bytes", 0), found.get("staging", 0),
                             found.get("last_at"))  # fmt: skip

    return Read(lambda k: [("HGETALL", k.build("blob_sweep"))], parse)


async def collect_loop(
    ledger: AsyncLedger | OpeningLedger, store: BlobStore, settings: SweepSettings
) -> None:
    """The scheduler's collector task: a round every ``interval_ms``, until cancelled; on a ledger
    split into partitions, its bookkeeping in the home partition and every partition's marks read
    (see :class:`Collector`).  A round while the ledger cannot be opened is skipped like any other."""
    collector: Collector | None = None
    log.info("sweeping blobs unreferenced for %s from %s, every %s", format_ms(settings.grace_ms),
             store.description, format_ms(settings.interval_ms))  # fmt: skip
    while True:
        try:
            if collector is None:
                runners = [ledger] if isinstance(ledger, AsyncLedger) else (await ledger.opened()).runners
                collector = Collector(runners[0], store, settings.grace_ms, runners[1:])
            done = await collector.sweep()
            if done is not None and (done.swept or done.staging):
                log.info("blob sweep: %d blobs (%d bytes) and %d staging files removed",
                         len(done.swept), done.swept_bytes, done.staging)  # fmt: skip
        except (Unavailable, redis.RedisError, OSError, BlobError) as exc:
            log.warning("blob sweep skipped: %s", exc)
        await asyncio.sleep(max(settings.interval_ms, 10) / 1000)

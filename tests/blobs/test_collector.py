"""The blob collector: a blob is kept while a job still in the projections names it, swept once no job
has named it for the grace, and staging left by stopped uploads is removed; its bookkeeping is the
ledger's own and leaves replay equality and placement as they were."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.blobs import LocalBlobStore
from jobledger.blobs.collector import (
    Collector,
    SweepCounters,
    SweepRound,
    SweepSettings,
    sweep_counters,
    touched,
)
from jobledger.blobs.guarded import GuardedStore
from jobledger.ledger import commands
from jobledger.ledger.clock import now_ms
from jobledger.ledger.files import FileRef
from jobledger.ledger.keys import Keys
from jobledger.ledger.redis_clients import async_client
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.ledger.tasks import cancel_and_wait
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from jobledger.scheduler import loop as scheduler
from tests.support.blobs import chunks, stored
from tests.support.ledger import assert_well_placed, fetch_one, put_queue, run_tick, update

T = TypeVar("T")
GRACE_MS = 3_600_000


def on_async(redis_url: str, namespace: str, work: Callable[[AsyncLedger], Awaitable[T]]) -> T:
    async def run() -> T:
        ledger = AsyncLedger(async_client(redis_url), namespace)
        try:
            return await work(ledger)
        finally:
            await ledger.client.aclose()

    return asyncio.run(run())


def sweep(redis_url: str, namespace: str, store: LocalBlobStore) -> SweepRound:
    async def once(ledger: AsyncLedger) -> SweepRound:
        done = await Collector(ledger, store, GRACE_MS).sweep()
        assert done is not None
        return done

    return on_async(redis_url, namespace, once)


def held(store: LocalBlobStore, *refs: FileRef) -> list[bool]:
    return [store.path(r.sha256).exists() for r in refs]


def create_with(ledger: Ledger, *files: FileRef, **options: object) -> int:
    opts = JobOptions(**options).with_files(list(files))  # type: ignore[arg-type]
    return ledger.run(commands.create_job("q", opts)).id


def unmarked(client: redis.Redis, namespace: str) -> dict[str, str]:
    raw: dict[bytes, bytes] = client.hgetall(Keys(namespace).build("blob_unmarked"))  # type: ignore[assignment]
    return {k.decode(): v.decode() for k, v in raw.items()}


@pytest.fixture
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


def test_a_blob_named_by_a_job_in_any_status_but_gone_is_never_swept(
    client: redis.Redis,
    ledger: Ledger,
    namespace: str,
    redis_url: str,
    store: LocalBlobStore,
    frozen: FrozenDateTimeFactory,
) -> None:
    put_queue(ledger, retries=0, expires_after="1d")
    queued, running, completed, failed, cancelled = (
        stored(store, f"{status}.txt", status.encode())
        for status in ("queued", "running", "completed", "failed", "cancelled")
    )
    result = stored(store, "out.txt", b"a result")
    loose = stored(store, "loose.bin", b"no job names this")
    ids = {f.name: create_with(ledger, f) for f in (completed, failed, running)}
    for name in ("completed.txt", "failed.txt", "running.txt"):
        fetched = fetch_one(ledger)
        assert fetched.id == ids[name]
        if name == "completed.txt":
            ledger.run(commands.add_result(fetched.id, result, attempt=fetched.attempt))
            update(ledger, fetched.id, status="completed", attempt=fetched.attempt)
        elif name == "failed.txt":
            update(ledger, fetched.id, status="failed", attempt=fetched.attempt)
    update(ledger, create_with(ledger, cancelled), status="cancelled")
    create_with(ledger, queued)
    everything = (queued, running, completed, failed, cancelled, result)

    first = sweep(redis_url, namespace, store)
    assert (first.listed, first.marked, first.candidates, first.swept) == (7, 6, 1, [])
    assert list(unmarked(client, namespace)) == [loose.sha256], "only the loose blob is a candidate"
    rebuild(client, namespace, namespace + "-early")
    assert compare(client, namespace + "-early", namespace) == [], "the bookkeeping is no projection"
    assert_well_placed(ledger)
    frozen.tick(GRACE_MS / 1000 + 1)
    second = sweep(redis_url, namespace, store)
    assert second.swept == [loose.sha256]
    assert held(store, *everything) == [True] * 6 and held(store, loose) == [False]
    assert unmarked(client, namespace) == {}, "a swept blob's entry goes with it"

    rebuild(client, namespace, namespace + "-rebuilt")
    assert compare(client, namespace + "-rebuilt", namespace) == [], "the marks are what replay gives"
    assert_well_placed(ledger)

    ledger.run(commands.delete_job(ids["failed.txt"]))
    frozen.tick(86_400)
    run_tick(ledger)  # the completed and cancelled jobs expire
    sweep(redis_url, namespace, store)
    frozen.tick(GRACE_MS / 1000 + 1)
    last = sweep(redis_url, namespace, store)
    gone = {failed.sha256, completed.sha256, result.sha256, cancelled.sha256}
    assert set(last.swept) == gone, "deleted and expired jobs name their blobs no more"
    assert held(store, queued, running) == [True, True]
    counters = on_async(redis_url, namespace, lambda aio: aio.read(sweep_counters()))
    assert (counters.swept, counters.swept_bytes) == (
        5,
        len(b"no job names this") + sum(f.size for f in (failed, completed, result, cancelled)),
    )


def test_an_unreferenced_blob_waits_out_the_grace_from_when_it_was_first_seen(
    client: redis.Redis, namespace: str, redis_url: str, store: LocalBlobStore, frozen: FrozenDateTimeFactory
) -> None:
    upload = stored(store, "in-flight.bin", b"its job is not created yet")
    sweep(redis_url, namespace, store)
    assert unmarked(client, namespace) == {upload.sha256: str(now_ms())}
    frozen.tick(GRACE_MS / 1000 - 1)
    assert sweep(redis_url, namespace, store).swept == [], "within the grace"
    assert held(store, upload) == [True]
    frozen.tick(2)
    assert sweep(redis_url, namespace, store).swept == [upload.sha256]
    assert held(store, upload) == [False]


def test_a_put_again_starts_the_grace_again(
    client: redis.Redis, namespace: str, redis_url: str, store: LocalBlobStore, frozen: FrozenDateTimeFactory
) -> None:
    upload = stored(store, "again.bin", b"stored twice")
    sweep(redis_url, namespace, store)
    frozen.tick(GRACE_MS / 1000 - 10)
    stored(store, "again.bin", b"stored twice")
    on_async(redis_url, namespace, lambda aio: touched(aio, upload.sha256))
    assert unmarked(client, namespace) == {}
    frozen.tick(20)
    assert sweep(redis_url, namespace, store).swept == [], "seen unmarked afresh: a new grace"
    frozen.tick(GRACE_MS / 1000)
    assert sweep(redis_url, namespace, store).swept == [upload.sha256]


def test_a_blob_named_again_just_before_its_delete_is_kept(
    ledger: Ledger, namespace: str, redis_url: str, store: LocalBlobStore, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    late = stored(store, "late.bin", b"named at the last moment")
    sweep(redis_url, namespace, store)
    frozen.tick(GRACE_MS / 1000 + 1)

    async def named_between_listing_and_delete(aio: AsyncLedger) -> SweepRound:
        collector = Collector(aio, store, GRACE_MS)
        real_delete = collector._delete

        async def delete_after_a_job_names_it(blob, now):  # type: ignore[no-untyped-def]
            create_with(ledger, late)
            return await real_delete(blob, now)

        collector._delete = delete_after_a_job_names_it  # type: ignore[method-assign]
        done = await collector.sweep()
        assert done is not None
        return done

    assert on_async(redis_url, namespace, named_between_listing_and_delete).swept == []
    assert held(store, late) == [True], "the claim read the mark again"


def test_touched_waits_while_the_blob_is_being_deleted(
    client: redis.Redis, namespace: str, redis_url: str
) -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    key = Keys(namespace).build("blob_unmarked")
    client.hset(key, sha, f"deleting:{now_ms()}")

    async def touch_during_delete(aio: AsyncLedger) -> tuple[bool, dict[bytes, bytes]]:
        task = asyncio.create_task(touched(aio, sha))
        await asyncio.sleep(0.3)
        waiting = not task.done()
        await aio.client.hdel(key, sha)  # the collector's delete is done
        await asyncio.wait_for(task, 2)
        return waiting, await aio.client.hgetall(key)

    waiting, left = on_async(redis_url, namespace, touch_during_delete)
    assert waiting and left == {}
    client.hset(key, sha, f"deleting:{now_ms() - 120_000}")
    on_async(redis_url, namespace, lambda aio: touched(aio, sha))
    assert unmarked(client, namespace) == {}, "a claim left by a stopped collector does not hold it up"


def test_staging_left_by_a_stopped_upload_is_removed_after_the_grace(
    client: redis.Redis, namespace: str, redis_url: str, store: LocalBlobStore, frozen: FrozenDateTimeFactory
) -> None:
    staging = store.root / "staging"
    staging.mkdir(parents=True)
    now = now_ms() / 1000
    old, fresh = staging / "stopped", staging / "in-flight"
    for path, mtime in ((old, now - GRACE_MS / 1000 - 1), (fresh, now - 5)):
        path.write_bytes(b"half an upload")
        os.utime(path, (mtime, mtime))
    done = sweep(redis_url, namespace, store)
    assert done.staging == 1
    assert (old.exists(), fresh.exists()) == (False, True)
    counters = on_async(redis_url, namespace, lambda aio: aio.read(sweep_counters()))
    assert counters == SweepCounters(staging=1, last_at=now_ms())


def test_one_collector_at_a_time(
    client: redis.Redis, namespace: str, redis_url: str, store: LocalBlobStore
) -> None:
    stored(store, "x", b"x")
    client.set(Keys(namespace).build("blob_sweep_lock"), "another scheduler")
    done = on_async(redis_url, namespace, lambda aio: Collector(aio, store, 0).sweep())
    assert done is None and unmarked(client, namespace) == {}


def test_the_scheduler_runs_the_collector_every_sweep_interval(
    namespace: str, redis_url: str, store: LocalBlobStore
) -> None:
    loose = stored(store, "loose", b"swept by the scheduler")

    async def until_swept(aio: AsyncLedger) -> float:
        blobs = (store, SweepSettings(interval_ms=50, grace_ms=0))
        task = asyncio.create_task(scheduler.run(aio, {"expiry": 1000}, blobs=blobs))
        started = time.monotonic()
        try:
            while store.path(loose.sha256).exists() and time.monotonic() - started < 5:
                await asyncio.sleep(0.02)
            return time.monotonic() - started
        finally:
            await cancel_and_wait([task])

    took = on_async(redis_url, namespace, until_swept)
    assert held(store, loose) == [False] and took < 5


def test_the_servers_store_tells_the_collector_of_every_put_and_lookup(
    client: redis.Redis, namespace: str, redis_url: str, store: LocalBlobStore, frozen: FrozenDateTimeFactory
) -> None:
    """Through the store the server and the workers use, bytes stored again, or looked up for a job
    body that names them, start a new grace: they are not swept under the job about to name them."""
    old = stored(store, "old.bin", b"stored long ago")
    looked_up = stored(store, "named.bin", b"named by a body")
    sweep(redis_url, namespace, store)
    assert set(unmarked(client, namespace)) == {old.sha256, looked_up.sha256}
    frozen.tick(GRACE_MS / 1000 + 1)

    async def put_and_look_up(aio: AsyncLedger) -> None:
        guarded = GuardedStore(store, aio)
        assert (await guarded.put(chunks(b"stored long ago"))).sha256 == old.sha256
        assert await guarded.stat(looked_up.sha256) is not None

    on_async(redis_url, namespace, put_and_look_up)
    assert unmarked(client, namespace) == {}
    assert sweep(redis_url, namespace, store).swept == [], "both start a new grace"
    assert held(store, old, looked_up) == [True, True]

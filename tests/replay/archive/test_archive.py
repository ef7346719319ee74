"""Retention: old events move to segments in the blob store and leave the stream; every reader
still sees them all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import redis
import redis.asyncio
from freezegun import freeze_time
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.blobs.archive import BlobArchive
from jobledger.ledger.errors import NotFound
from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.projections.archive import ArchiveError, ArchiveRecord, events_by_id, load_record
from jobledger.projections.history import job_history
from jobledger.replay.archive.writer import (
    SEGMENT_EVENTS,
    Archiver,
    ArchiveSettings,
    archive_settings,
    segment_of,
    write_segment,
)
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from jobledger.replay.source import read_ledger, xrange
from jobledger.replay.transfer import export_ledger, import_ledger
from jobledger.runtime.config import Config
from jobledger.scheduler.loop import CHECKS, tick
from jobledger.scheduler.loop import run as run_scheduler
from tests.support.http import app_client
from tests.support.ledger import START_MS
from tests.support.replay import archive as archive_round
from tests.support.replay import local_archive, stream_entries, stream_ids, workload

OLD, NEW = START_MS, START_MS + 86_400_000  # a day apart
CUTOFF = START_MS + 3_600_000  # archive what is older than an hour after OLD


@pytest.fixture
def clock() -> list[int]:
    return [OLD]


@pytest.fixture
def timed(client: redis.Redis, namespace: str, clock: list[int]) -> Ledger:
    """A ledger on a clock the test moves: half its events OLD, half NEW."""
    return Ledger(client, namespace, clock=lambda: clock[0])


def two_ages(timed: Ledger, clock: list[int]) -> list[str]:
    """A workload at OLD, another at NEW; the ids of the events, oldest first."""
    workload(timed)
    clock[0] = NEW
    workload(timed)
    return stream_ids(timed.client, timed.keys.namespace)


@pytest.fixture
def store(tmp_path: Path, namespace: str) -> BlobArchive:
    """The archive of a blob store on local disk."""
    return local_archive(tmp_path / "blobs", namespace)


def archive(redis_url: str, namespace: str, into: BlobArchive, cutoff: int = CUTOFF,
            segment_events: int = SEGMENT_EVENTS) -> int:  # fmt: skip
    return archive_round(redis_url, namespace, into, cutoff, segment_events)


def read_all(
    client: redis.Redis, namespace: str, store: BlobArchive, after: str | None = None, batch: int = 7
) -> list[str]:
    return [
        e[0].decode()
        for entries in read_ledger(client, Keys(namespace), after, None, batch, store)
        for e in entries
    ]


def first_stream_id(segment_name: str) -> tuple[int, int]:
    """The stream id a segment starts at, as numbers: names sort as text, ids do not."""
    first = segment_name.rsplit("/", 1)[-1].removeprefix("events-").split("_", 1)[0]
    ms, seq = first.split("-")
    return int(ms), int(seq)


def segment_names(store: BlobArchive) -> list[str]:
    """The segments the store holds for its ledger of one partition, by name."""
    return store.objects.names("segments/")


def test_old_events_move_to_segments_and_every_reader_still_sees_them(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path,
    store: BlobArchive,
) -> None:  # fmt: skip
    ids = two_ages(timed, clock)
    old = [i for i, (_, f) in zip(ids, stream_entries(client, namespace), strict=True)
           if dict(f)[b"at"] == str(OLD).encode()]  # fmt: skip
    entries_before = stream_entries(client, namespace)
    archived = archive(redis_url, namespace, store, segment_events=10)
    assert archived == len(old) > 10
    assert stream_ids(client, namespace) == ids[len(old) :]
    rec = load_record(client, Keys(namespace))
    assert rec == ArchiveRecord(f"local disk at {tmp_path / 'blobs' / 'archive'}", old[-1], len(old))
    segments = store.manifest(rec.location)
    assert [s.count for s in segments] == [10] * (len(old) // 10) + ([len(old) % 10] if len(old) % 10 else [])
    assert [f"segments/{s.file}" for s in segments] == sorted(segment_names(store), key=first_stream_id)
    assert segments[0].file == f"events-{ids[0]}_{ids[9]}.jsonl"
    assert [s.after for s in segments] == ["", *(s.last for s in segments[:-1])]
    # replay, export and the archive's lookup by id read the archive, then the stream
    assert read_all(client, namespace, store) == ids
    assert read_all(client, namespace, store, after=ids[3]) == ids[4:]
    assert rebuild(client, namespace, namespace + "-rebuilt", batch=6, archive=store) == len(ids)
    assert compare(client, namespace, namespace + "-rebuilt") == []
    export_ledger(client, namespace, tmp_path / "all.jsonl", archive=store)
    import_ledger(client, namespace + "-copy", tmp_path / "all.jsonl")
    assert stream_entries(client, namespace + "-copy") == entries_before
    found = events_by_id(store, rec, [old[0], old[-1], ids[-1]])
    assert sorted(found) == sorted([old[0], old[-1]]) and found[old[0]].type == "queue_created"


def test_a_second_round_archives_only_what_aged_since(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    ids = two_ages(timed, clock)
    first = archive(redis_url, namespace, store)
    assert archive(redis_url, namespace, store) == 0
    assert archive(redis_url, namespace, store, cutoff=NEW + 1) == len(ids) - first
    assert client.xlen(Keys(namespace).events) == 0
    assert read_all(client, namespace, store) == ids
    rebuild(client, namespace, namespace + "-rebuilt", archive=store)
    assert compare(client, namespace, namespace + "-rebuilt") == []
    clock[0] = NEW + 1000
    workload(timed)  # the stream takes new events after being emptied
    rebuild(client, namespace, namespace + "-again", archive=store)
    assert compare(client, namespace, namespace + "-again") == []


def test_a_round_cut_short_after_writing_is_finished_by_the_next(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    ids = two_ages(timed, clock)
    entries = xrange(client, Keys(namespace).events, count=5)
    location = store.location_for(namespace)
    write_segment(store, location, entries, None)  # ... and the archiver stopped before trimming
    assert read_all(client, namespace, store) == ids  # no record yet: the stream is read alone
    archived = archive(redis_url, namespace, store)
    rec = load_record(client, Keys(namespace))
    assert rec is not None and archived == rec.count - 5
    assert read_all(client, namespace, store) == ids
    assert store.manifest(location)[0].last == ids[4]


def test_a_reader_misses_nothing_while_an_archiver_trims_under_it(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    ids = two_ages(timed, clock)
    reader = read_ledger(client, Keys(namespace), None, None, batch=3, archive=store)
    seen = [e[0].decode() for e in next(reader)]
    archive(redis_url, namespace, store)  # trims the events the reader was about to read
    seen += [e[0].decode() for entries in reader for e in entries]
    assert seen == ids


def test_archivers_exclude_each_other_and_keep_to_one_store(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    two_ages(timed, clock)
    client.set(Keys(namespace).build("archive_lock"), "someone else")
    assert archive(redis_url, namespace, store) == 0
    client.delete(Keys(namespace).build("archive_lock"))
    assert archive(redis_url, namespace, store) > 0
    clock[0] = NEW
    elsewhere = local_archive(store.objects.root.parent.parent / "other", namespace)  # type: ignore[attr-defined]
    with pytest.raises(ArchiveError, match="archives to"):
        archive(redis_url, namespace, elsewhere, cutoff=NEW + 1)


def test_a_missing_archive_stops_replay_instead_of_replaying_half_a_ledger(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    two_ages(timed, clock)
    archive(redis_url, namespace, store)
    with pytest.raises(ArchiveError, match="cannot be read here"):
        rebuild(client, namespace, namespace + "-none")  # a reader given no archive
    elsewhere = local_archive(store.objects.root.parent.parent / "other", namespace)  # type: ignore[attr-defined]
    with pytest.raises(ArchiveError, match="cannot read"):
        rebuild(client, namespace, namespace + "-elsewhere", archive=elsewhere)  # another store
    first = segment_names(store)[0]
    (store.objects.root / first).unlink()  # type: ignore[attr-defined]
    with pytest.raises(ArchiveError, match="missing"):
        rebuild(client, namespace, namespace + "-rebuilt", archive=store)


@pytest.fixture
def api(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=LocalBlobStore(tmp_path / "blobs")) as http:
        yield http


def test_the_feed_pages_through_the_archive_then_the_stream(
    api: TestClient, client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str,
    store: BlobArchive,
) -> None:  # fmt: skip
    ids = two_ages(timed, clock)
    everything = api.get("/events", params={"limit": 1000}).json()["events"]
    archive(redis_url, namespace, store)
    items = pages(api, limit=7)
    assert [i["id"] for i in items] == ids
    assert items == everything
    job = next(i["job"] for i in everything if i["job"] is not None)
    assert pages(api, job=job, limit=2) == [i for i in everything if i["job"] == job]
    completed = pages(api, type="job_completed", limit=3)
    assert completed == [i for i in everything if i["type"] == "job_completed"]


def pages(api: TestClient, **params: str | int) -> list[dict[str, object]]:
    """Every item of GET /events, following ``next`` to the end."""
    items: list[dict[str, object]] = []
    after = None
    for _ in range(1000):
        page = api.get("/events", params={**params, **({"after": after} if after else {})}).json()
        items += page["events"]
        if (after := page["next"]) is None:
            return items
    raise AssertionError("the pages never ended")


def test_the_scheduler_archives_on_its_interval(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    ids = two_ages(timed, clock)
    settings = ArchiveSettings(after_ms=NEW - CUTOFF, interval_ms=20, archive=store)

    async def scheduler() -> ArchiveRecord:
        aclient = redis.asyncio.Redis.from_url(redis_url)
        ledger = AsyncLedger(aclient, namespace, clock=lambda: NEW)
        every = dict.fromkeys(CHECKS, 3_600_000)
        task = asyncio.create_task(run_scheduler(ledger, every, settings))
        try:
            for _ in range(500):
                if (rec := load_record(client, Keys(namespace))) is not None:
                    return rec
                await asyncio.sleep(0.01)
            raise AssertionError("nothing was archived")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await aclient.aclose()

    rec = asyncio.run(scheduler())
    assert rec.location == store.location_for(namespace)
    assert read_all(client, namespace, store) == ids
    assert store.manifest(rec.location)[0].first == ids[0]


def test_a_job_history_includes_its_archived_events(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    two_ages(timed, clock)
    job_id = 1
    before = [e for e in pages_of(client, namespace) if e.job == job_id]
    archive(redis_url, namespace, store)
    rec = load_record(client, Keys(namespace))
    assert rec is not None and before and all(rec.holds(e.id) for e in before)  # all archived

    async def history() -> list[dict[str, object]]:
        aclient = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await job_history(AsyncLedger(aclient, namespace), job_id, store)
        finally:
            await aclient.aclose()

    assert asyncio.run(history()) == [e.item() for e in before]


def histories(
    redis_url: str, namespace: str, jobs: list[int], store: BlobArchive | None
) -> dict[int, object]:
    """``GET /job/{id}/history`` of each job (its NotFound's message for one it cannot find)."""

    async def read() -> dict[int, object]:
        aclient = redis.asyncio.Redis.from_url(redis_url)
        out: dict[int, object] = {}
        try:
            for job in jobs:
                try:
                    out[job] = await job_history(AsyncLedger(aclient, namespace), job, store)
                except NotFound as exc:
                    out[job] = str(exc)
            return out
        finally:
            await aclient.aclose()

    return asyncio.run(read())


def test_an_expired_job_wholly_archived_leaves_nothing_in_redis_and_its_history_stays_whole(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    keys = Keys(namespace)
    jobs = workload(timed)  # ended jobs expire an hour after they end; the last one is deleted
    clock[0] = OLD + 2 * 3_600_000
    tick(timed)
    forgotten = [j for j in jobs if not client.exists(keys.job(j))]
    alive = [j for j in jobs if j not in forgotten]
    assert len(forgotten) > 1 and alive and all(client.exists(keys.history(j)) for j in forgotten)
    clock[0] = NEW
    workload(timed)
    before = histories(redis_url, namespace, jobs, None)
    assert archive(redis_url, namespace, store, cutoff=OLD + 3 * 3_600_000, segment_events=20) > 0
    # the round removed every key of a forgotten job; a live job keeps its hash and history
    left = [k.decode() for k in client.scan_iter(match=keys.pattern(), count=1000)]
    assert [k for k in left for j in forgotten if k.endswith((f":job:{j}", f":history:{j}"))] == []
    assert all(client.exists(keys.job(j)) for j in alive)
    # their histories read the archive's job index, and are what they were
    assert histories(redis_url, namespace, jobs, store) == before
    assert "never did" in str(histories(redis_url, namespace, [10_000], store)[10_000])
    indexes = store.objects.names("jobs/")
    assert len(indexes) == len({index.rsplit("/", 1)[0] for index in indexes})  # one index per bucket
    # a rebuild from the archive and the stream keeps exactly the history lists the live ledger keeps
    rebuild(client, namespace, namespace + "-rebuilt", batch=7, archive=store)
    assert compare(client, namespace, namespace + "-rebuilt") == []
    rebuilt = Keys(namespace + "-rebuilt")
    assert [j for j in jobs if client.exists(rebuilt.history(j))] == [
        j for j in jobs if client.exists(keys.history(j))
    ]


def test_a_round_cut_short_before_its_trim_indexes_and_forgets_at_the_next(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive
) -> None:
    keys = Keys(namespace)
    jobs = workload(timed)
    clock[0] = OLD + 2 * 3_600_000
    tick(timed)
    forgotten = [j for j in jobs if not client.exists(keys.job(j))]
    before = histories(redis_url, namespace, forgotten, None)
    entries = xrange(client, keys.events)
    write_segment(store, store.location_for(namespace), entries, None)  # the round stopped here
    assert all(client.exists(keys.history(j)) for j in forgotten)
    assert archive(redis_url, namespace, store, cutoff=OLD) == 0  # nothing new: it finishes the trim
    assert client.xlen(keys.events) == 0
    assert not any(client.exists(keys.history(j)) for j in forgotten)
    assert histories(redis_url, namespace, forgotten, store) == before


def pages_of(client: redis.Redis, namespace: str) -> list[Event]:
    return [decode_entry(*entry) for entry in xrange(client, Keys(namespace).events)]


def test_by_default_a_round_archives_what_is_over_seven_days_old(
    client: redis.Redis, redis_url: str, namespace: str, store: BlobArchive
) -> None:
    settings = archive_settings(Config(), store)
    assert settings is not None and settings.after_ms == 7 * 86_400_000
    with freeze_time("2026-03-01T12:00:00Z") as frozen:
        ledger = Ledger(client, namespace)  # the injectable clock: time.time, frozen
        workload(ledger, jobs=6)
        first_week = stream_ids(client, namespace)

        async def round_() -> int:
            aclient = redis.asyncio.Redis.from_url(redis_url)
            try:
                runner = AsyncLedger(aclient, namespace)
                cutoff = runner.clock() - settings.after_ms
                return await Archiver(aclient, runner.keys, store).archive_once(cutoff)
            finally:
                await aclient.aclose()

        frozen.tick(timedelta(days=6))
        workload(ledger, jobs=6)
        assert asyncio.run(round_()) == 0
        frozen.tick(timedelta(days=1, seconds=1))
        assert asyncio.run(round_()) == len(first_week)
        assert stream_ids(client, namespace)[0] not in first_week
        assert read_all(client, namespace, store)[: len(first_week)] == first_week


def test_a_directory_archive_moves_into_the_store_at_the_next_round(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, store: BlobArchive,
    tmp_path: Path,
) -> None:  # fmt: skip
    ids = two_ages(timed, clock)
    directory = legacy_archive(client, namespace, tmp_path / "old-archive" / namespace, count=7)
    rec = load_record(client, Keys(namespace))
    assert rec is not None and rec.legacy
    with pytest.raises(ArchiveError, match="not yet moved"):
        read_all(client, namespace, store)
    assert archive(redis_url, namespace, store) > 0
    rec = load_record(client, Keys(namespace))
    assert rec is not None and not rec.legacy and rec.location == store.location_for(namespace)
    assert store.manifest(rec.location)[0].file == sorted(p.name for p in directory.glob("events-*"))[0]
    assert read_all(client, namespace, store) == ids
    rebuild(client, namespace, namespace + "-rebuilt", archive=store)
    assert compare(client, namespace, namespace + "-rebuilt") == []


def legacy_archive(client: redis.Redis, namespace: str, directory: Path, count: int) -> Path:
    """The first ``count`` events archived as retention did before the blob store: segment files
    and ``manifest.jsonl`` in ``directory``, the record naming it, the events trimmed."""
    directory.mkdir(parents=True)
    entries = xrange(client, Keys(namespace).events, count=count)
    lines = []
    for part in (entries[:4], entries[4:]):
        segment, data = segment_of(part, None)
        (directory / segment.file).write_bytes(data)
        lines.append(json.dumps({k: v for k, v in segment.__dict__.items() if k != "after"}))
    (directory / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    last = entries[-1][0].decode()
    client.hset(
        Keys(namespace).build("archive"), mapping={"dir": str(directory), "last_id": last, "count": count}
    )
    client.xtrim(Keys(namespace).events, minid=f"{last.split('-')[0]}-{int(last.split('-')[1]) + 1}")
    return directory

"""Retention: old events move to segment files and leave the stream; every reader still sees them all."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio
from starlette.testclient import TestClient

from jobledger.ledger.events import Event, decode_entry
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.projections.archive import (
    ArchiveError,
    ArchiveRecord,
    events_by_id,
    load_record,
    read_manifest,
)
from jobledger.projections.history import job_history
from jobledger.replay.archive.writer import SEGMENT_EVENTS, ArchiveSettings, write_segment
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from jobledger.replay.source import read_ledger, xrange
from jobledger.replay.transfer import export_ledger, import_ledger
from jobledger.scheduler.loop import CHECKS
from jobledger.scheduler.loop import run as run_scheduler
from tests.support.http import app_client
from tests.support.ledger import START_MS
from tests.support.replay import archive as archive_round
from tests.support.replay import stream_entries, stream_ids, workload

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


def archive(redis_url: str, namespace: str, directory: Path, cutoff: int = CUTOFF,
            segment_events: int = SEGMENT_EVENTS) -> int:  # fmt: skip
    return archive_round(redis_url, namespace, directory, cutoff, segment_events)


def read_all(client: redis.Redis, namespace: str, after: str | None = None, batch: int = 7) -> list[str]:
    return [
        e[0].decode() for entries in read_ledger(client, Keys(namespace), after, None, batch) for e in entries
    ]


def first_stream_id(segment_name: str) -> tuple[int, int]:
    """The stream id a segment file starts at, as numbers: names sort as text, ids do not."""
    first = segment_name.removeprefix("events-").split("_", 1)[0]
    ms, seq = first.split("-")
    return int(ms), int(seq)


def test_old_events_move_to_segments_and_every_reader_still_sees_them(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    ids = two_ages(timed, clock)
    old = [i for i, (_, f) in zip(ids, stream_entries(client, namespace), strict=True)
           if dict(f)[b"at"] == str(OLD).encode()]  # fmt: skip
    entries_before = stream_entries(client, namespace)
    archived = archive(redis_url, namespace, tmp_path, segment_events=10)
    assert archived == len(old) > 10
    assert stream_ids(client, namespace) == ids[len(old) :]
    rec = load_record(client, Keys(namespace))
    assert rec == ArchiveRecord(tmp_path.resolve(), old[-1], len(old))
    segments = read_manifest(tmp_path)
    assert [s.count for s in segments] == [10] * (len(old) // 10) + ([len(old) % 10] if len(old) % 10 else [])
    assert [s.file for s in segments] == sorted(
        (p.name for p in tmp_path.glob("events-*.jsonl")), key=first_stream_id
    )
    assert segments[0].file == f"events-{ids[0]}_{ids[9]}.jsonl"
    # replay, export and the archive's lookup by id read the archive, then the stream
    assert read_all(client, namespace) == ids
    assert read_all(client, namespace, after=ids[3]) == ids[4:]
    assert rebuild(client, namespace, namespace + "-rebuilt", batch=6) == len(ids)
    assert compare(client, namespace, namespace + "-rebuilt") == []
    export_ledger(client, namespace, tmp_path / "all.jsonl")
    import_ledger(client, namespace + "-copy", tmp_path / "all.jsonl")
    assert stream_entries(client, namespace + "-copy") == entries_before
    found = events_by_id(rec, [old[0], old[-1], ids[-1]])
    assert sorted(found) == sorted([old[0], old[-1]]) and found[old[0]].type == "queue_created"


def test_a_second_round_archives_only_what_aged_since(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    ids = two_ages(timed, clock)
    first = archive(redis_url, namespace, tmp_path)
    assert archive(redis_url, namespace, tmp_path) == 0
    assert archive(redis_url, namespace, tmp_path, cutoff=NEW + 1) == len(ids) - first
    assert client.xlen(Keys(namespace).events) == 0
    assert read_all(client, namespace) == ids
    rebuild(client, namespace, namespace + "-rebuilt")
    assert compare(client, namespace, namespace + "-rebuilt") == []
    clock[0] = NEW + 1000
    workload(timed)  # the stream takes new events after being emptied
    rebuild(client, namespace, namespace + "-again")
    assert compare(client, namespace, namespace + "-again") == []


def test_a_round_cut_short_after_writing_is_finished_by_the_next(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    ids = two_ages(timed, clock)
    entries = xrange(client, Keys(namespace).events, count=5)
    write_segment(tmp_path, entries)  # ... and the archiver stopped before trimming
    assert read_all(client, namespace) == ids  # no record yet: the stream is read alone
    archived = archive(redis_url, namespace, tmp_path)
    rec = load_record(client, Keys(namespace))
    assert rec is not None and archived == rec.count - 5
    assert read_all(client, namespace) == ids
    assert len({s.file for s in read_manifest(tmp_path)}) == len(read_manifest(tmp_path))


def test_a_reader_misses_nothing_while_an_archiver_trims_under_it(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    ids = two_ages(timed, clock)
    reader = read_ledger(client, Keys(namespace), None, None, batch=3)
    seen = [e[0].decode() for e in next(reader)]
    archive(redis_url, namespace, tmp_path)  # trims the events the reader was about to read
    seen += [e[0].decode() for entries in reader for e in entries]
    assert seen == ids


def test_archivers_exclude_each_other_and_keep_to_one_directory(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    two_ages(timed, clock)
    client.set(Keys(namespace).build("archive_lock"), "someone else")
    assert archive(redis_url, namespace, tmp_path) == 0
    client.delete(Keys(namespace).build("archive_lock"))
    assert archive(redis_url, namespace, tmp_path / "a") > 0
    clock[0] = NEW
    with pytest.raises(ArchiveError, match="archives to"):
        archive(redis_url, namespace, tmp_path / "b", cutoff=NEW + 1)


def test_a_missing_archive_stops_replay_instead_of_replaying_half_a_ledger(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    two_ages(timed, clock)
    archive(redis_url, namespace, tmp_path)
    first = read_manifest(tmp_path)[0]
    (tmp_path / first.file).unlink()
    with pytest.raises(ArchiveError, match="missing"):
        rebuild(client, namespace, namespace + "-rebuilt")


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    with app_client(redis_url, namespace) as http:
        yield http


def test_the_feed_pages_through_the_archive_then_the_stream(
    api: TestClient, client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    ids = two_ages(timed, clock)
    everything = api.get("/events", params={"limit": 1000}).json()["events"]
    archive(redis_url, namespace, tmp_path)
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
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    ids = two_ages(timed, clock)
    settings = ArchiveSettings(after_ms=NEW - CUTOFF, directory=tmp_path, interval_ms=20)

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
    assert rec.directory == (tmp_path / namespace).resolve()
    assert read_all(client, namespace) == ids
    assert json.loads((rec.directory / "manifest.jsonl").read_text().splitlines()[0])["first"] == ids[0]


def test_a_job_history_includes_its_archived_events(
    client: redis.Redis, redis_url: str, timed: Ledger, clock: list[int], namespace: str, tmp_path: Path
) -> None:
    two_ages(timed, clock)
    job_id = 1
    before = [e for e in pages_of(client, namespace) if e.job == job_id]
    archive(redis_url, namespace, tmp_path)
    rec = load_record(client, Keys(namespace))
    assert rec is not None and before and all(rec.holds(e.id) for e in before)  # all archived

    async def history() -> list[dict[str, object]]:
        aclient = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await job_history(AsyncLedger(aclient, namespace), job_id)
        finally:
            await aclient.aclose()

    assert asyncio.run(history()) == [e.item() for e in before]


def pages_of(client: redis.Redis, namespace: str) -> list[Event]:
    return [decode_entry(*entry) for entry in xrange(client, Keys(namespace).events)]

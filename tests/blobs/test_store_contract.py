"""The blob store's contract, held by every store: local disk, and S3 (a real radosgw); its named
objects too, the archive over them, and a sealed log's files beside them.

Each test gets an empty store of its own (a tmp dir; a fresh prefix in the bucket) and a
:class:`Kind` that can look underneath it: its staging, and the raw object behind a blob.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import obstore
import pytest

from jobledger.blobs import BlobMissing, BlobStore, DigestMismatch, LocalBlobStore, TooLarge, open_store
from jobledger.blobs.archive import BlobArchive
from jobledger.blobs.log_files import Conflict as LogConflict
from jobledger.blobs.log_files import LocalLogFiles, NamedLogFiles, open_log_files
from jobledger.blobs.objects import ObjectBlobStore
from jobledger.projections.archive import ArchiveError, Segment
from jobledger.runtime.config import BlobsConfig
from tests.benchmarks.ours.ours_files import PeakMemory
from tests.blobs.radosgw import RadosGW

MiB = 1024 * 1024


@dataclass
class Kind:
    """A store under test, and a look underneath it."""

    store: BlobStore
    radosgw: RadosGW | None = None
    prefix: str = ""
    config: BlobsConfig | None = None  # what opened the store, when it is a bucket

    def staging(self) -> list[str]:
        """What the store's staging holds, including (S3) multipart uploads not finished."""
        if isinstance(self.store, LocalBlobStore):
            staging = self.store.root / "staging"
            return sorted(os.listdir(staging)) if staging.is_dir() else []
        assert isinstance(self.store, ObjectBlobStore) and self.radosgw is not None
        staged = [m["path"] for m in run(self._raw_list("staging/"))]
        return staged + self.radosgw.pending_uploads(self.prefix)

    async def _raw_list(self, prefix: str) -> list[dict]:
        assert isinstance(self.store, ObjectBlobStore)
        return [dict(m) async for batch in obstore.list(self.store._store, prefix) for m in batch]

    def raw_written(self, sha256: str) -> object:
        """Something that changes when the blob's own bytes are written again."""
        if isinstance(self.store, LocalBlobStore):
            return self.store.path(sha256).stat().st_ino  # a new file is a new inode
        assert isinstance(self.store, ObjectBlobStore)
        store = self.store._store

        async def head() -> tuple[object, object]:
            meta = await obstore.head_async(store, ObjectBlobStore.key(sha256))
            return meta["last_modified"], meta["e_tag"]

        return run(head())

    def leave_staging(self) -> None:
        """Staging as a process that died mid-upload leaves it."""
        if isinstance(self.store, LocalBlobStore):
            (self.store.root / "staging").mkdir(parents=True, exist_ok=True)
            (self.store.root / "staging" / uuid.uuid4().hex).write_bytes(b"half")
            return
        assert isinstance(self.store, ObjectBlobStore)
        store = self.store._store

        async def put() -> None:
            await obstore.put_async(store, f"staging/{uuid.uuid4().hex}", b"half")

        run(put())


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


@pytest.fixture(params=["local", "s3"])
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kind]:
    if request.param == "local":
        yield Kind(open_store(BlobsConfig(), tmp_path, "ns"))
        return
    gateway: RadosGW = request.getfixturevalue("radosgw")
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    config = BlobsConfig(url=f"s3://{gateway.bucket}/{prefix}", options=gateway.options())
    store = open_store(config, tmp_path, "ns")
    assert isinstance(store, ObjectBlobStore)
    yield Kind(store, gateway, prefix + "/ns", config)


async def chunks_of(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def read_all(store: BlobStore, sha256: str) -> bytes:
    return b"".join([chunk async for chunk in store.read(sha256)])


async def listed(store: BlobStore) -> dict[str, int]:
    return {blob.sha256: blob.size async for blob in store.list()}


def test_put_read_stat_list_delete(kind: Kind) -> None:
    store = kind.store
    data = b"hello, " * 1000 + b"world"
    sha = hashlib.sha256(data).hexdigest()
    before = time.time()
    blob = run(store.put(chunks_of(data[:10], data[10:]), expected_sha256=sha))
    assert (blob.sha256, blob.size) == (sha, len(data))
    assert run(read_all(store, sha)) == data
    stat = run(store.stat(sha))
    assert stat is not None and stat.size == len(data)
    assert stat.modified >= before - 2  # the store's clock may be a little off ours
    assert run(listed(store)) == {sha: len(data)}
    assert kind.staging() == []

    assert run(store.delete(sha)) is True
    assert run(store.delete(sha)) is False
    assert run(store.stat(sha)) is None
    assert run(listed(store)) == {}
    with pytest.raises(BlobMissing):
        run(read_all(store, sha))


def test_an_empty_blob(kind: Kind) -> None:
    blob = run(kind.store.put(chunks_of()))
    assert (blob.sha256, blob.size) == (hashlib.sha256(b"").hexdigest(), 0)
    assert run(read_all(kind.store, blob.sha256)) == b""


def test_a_blob_never_held_is_missing(kind: Kind) -> None:
    sha = hashlib.sha256(b"never").hexdigest()
    with pytest.raises(BlobMissing):
        run(read_all(kind.store, sha))
    assert run(kind.store.stat(sha)) is None
    with pytest.raises(ValueError):
        run(kind.store.stat("../etc/passwd"))


def test_a_second_put_of_the_same_bytes_keeps_the_first_and_counts_as_new(kind: Kind) -> None:
    store = kind.store
    first = run(store.put(chunks_of(b"same bytes")))
    written = kind.raw_written(first.sha256)
    time.sleep(1.1)  # past a clock of whole seconds
    second = run(store.put(chunks_of(b"same ", b"bytes")))
    assert second.sha256 == first.sha256
    assert kind.raw_written(first.sha256) == written  # not written again
    stat = run(store.stat(first.sha256))
    assert stat is not None and stat.modified >= first.modified + 1
    [blob] = run(_blobs(store))
    assert abs(blob.modified - stat.modified) < 1  # a HEAD tells whole seconds, a listing milliseconds
    assert kind.staging() == []
    assert run(read_all(store, first.sha256)) == b"same bytes"


async def _blobs(store: BlobStore) -> list:
    return [blob async for blob in store.list()]


def test_over_the_limit_is_refused_and_leaves_nothing(kind: Kind) -> None:
    pulled: list[int] = []

    async def big() -> AsyncIterator[bytes]:
        for i in range(20):
            pulled.append(i)
            yield b"x" * MiB

    with pytest.raises(TooLarge) as refused:
        run(kind.store.put(big(), limit=3 * MiB, what="result"))
    assert refused.value.limit == 3 * MiB and "result" in str(refused.value)
    assert len(pulled) == 4  # read no further than the byte over
    assert run(listed(kind.store)) == {}
    assert kind.staging() == []


def test_bytes_not_the_expected_hash_are_refused_and_leave_nothing(kind: Kind) -> None:
    expected = hashlib.sha256(b"what was promised").hexdigest()
    with pytest.raises(DigestMismatch) as refused:
        run(kind.store.put(chunks_of(b"what came"), expected_sha256=expected))
    assert refused.value.actual == hashlib.sha256(b"what came").hexdigest()
    assert run(listed(kind.store)) == {}
    assert kind.staging() == []


def test_an_upload_cut_off_half_way_leaves_nothing(kind: Kind) -> None:
    async def cut() -> AsyncIterator[bytes]:
        for _ in range(20):  # past a part of a multipart upload
            yield os.urandom(MiB)
        raise ConnectionResetError("the client went away")

    with pytest.raises(ConnectionResetError):
        run(kind.store.put(cut()))
    assert run(listed(kind.store)) == {}
    assert kind.staging() == []


def test_an_upload_cancelled_half_way_leaves_nothing(kind: Kind) -> None:
    """A request handler cancelled while its upload streams (the client went away; shutdown)."""
    sent: list[int] = []
    stalled = asyncio.Event()

    async def stalls() -> AsyncIterator[bytes]:
        for i in range(12):  # past a part of a multipart upload
            sent.append(i)
            yield os.urandom(MiB)
        stalled.set()
        await asyncio.Event().wait()  # a client that stops sending and stays connected
        yield b"never"

    async def scenario() -> None:
        put = asyncio.create_task(kind.store.put(stalls()))
        await asyncio.wait_for(stalled.wait(), 30)
        await asyncio.sleep(0.2)
        put.cancel()
        with pytest.raises(asyncio.CancelledError):
            await put

    run(scenario())
    assert len(sent) == 12
    assert run(listed(kind.store)) == {}
    assert kind.staging() == []


def test_sweep_staging_removes_only_staging_older_than_the_cut_off(kind: Kind) -> None:
    kept = run(kind.store.put(chunks_of(b"a blob")))
    kind.leave_staging()
    assert len(kind.staging()) == 1
    assert run(kind.store.sweep_staging(time.time() - 3600)) == 0
    assert len(kind.staging()) == 1
    assert run(kind.store.sweep_staging(time.time() + 60)) == 1
    assert kind.staging() == []
    assert run(listed(kind.store)) == {kept.sha256: 6}


def test_a_64_mib_blob_streams_both_ways_in_little_memory(kind: Kind) -> None:
    size = 64 * MiB
    piece = os.urandom(MiB)
    expected = hashlib.sha256()
    for _ in range(size // MiB):
        expected.update(piece)

    async def upload() -> AsyncIterator[bytes]:
        for _ in range(size // MiB):
            yield bytes(piece)  # a new object each time, as a socket would give

    async def download(sha256: str) -> tuple[int, str]:
        got, digest = 0, hashlib.sha256()
        async for chunk in kind.store.read(sha256):
            got += len(chunk)
            digest.update(chunk)
        return got, digest.hexdigest()

    run(kind.store.put(chunks_of(b"warm up the client and its pools")))
    with PeakMemory(os.getpid()) as up:
        blob = run(kind.store.put(upload(), expected_sha256=expected.hexdigest()))
    with PeakMemory(os.getpid()) as down:
        got = run(download(blob.sha256))
    assert got == (size, expected.hexdigest())
    assert up.growth < 20, f"memory grew {up.growth:.1f} MiB putting a 64 MiB blob"
    assert down.growth < 20, f"memory grew {down.growth:.1f} MiB reading a 64 MiB blob"


def test_named_objects_are_written_whole_listed_in_order_and_out_of_the_blobs_sight(kind: Kind) -> None:
    named = kind.store.named("archive")
    assert named.read("manifest/a.json") is None and named.names("manifest/") == []
    for name in (
        "manifest/b.json",
        "manifest/a.json",
        "manifest/c.json",
        "segments/a.jsonl",
        "jobs/0/a.json",
    ):
        named.write(name, name.encode())
    named.write("manifest/b.json", b"b again")  # a name written again holds the last bytes, whole
    assert named.read("manifest/b.json") == b"b again"
    assert named.names("manifest/") == ["manifest/a.json", "manifest/b.json", "manifest/c.json"]
    assert named.names("manifest/", after="manifest/a.json") == ["manifest/b.json", "manifest/c.json"]
    assert named.names("jobs/0/") == ["jobs/0/a.json"] and named.names("jobs/1/") == []
    assert kind.store.named("ledger").names("manifest/") == []  # another part sees none of them
    run(kind.store.put(chunks_of(b"a blob")))
    assert len(run(listed(kind.store))) == 1  # the collector's listing holds the blob alone
    assert named.description.endswith("/archive")


def test_the_archive_reads_its_segments_and_job_indexes_back_from_the_store(
    kind: Kind, tmp_path: Path
) -> None:
    archive = BlobArchive.over(kind.store, tmp_path / "data", "ns")
    location = archive.location_for("ns")
    assert archive.location_for("ns-1.3") == location + "/p1"
    data = b'{"id":"1-0"}\n{"id":"2-0"}\n'
    segment = Segment("events-1-0_2-0.jsonl", "1-0", "2-0", 2, 1, 2, hashlib.sha256(data).hexdigest())
    archive.write_segment(location, segment, data)
    archive.write_jobs(location, segment, {7: ["1-0", "2-0"], 5000: ["2-0"]})
    assert archive.manifest(location) == [segment]
    assert archive.segment_file(location, segment).read_bytes() == data
    assert [i.jobs for i in archive.job_indexes(location, 7)] == [{7: ["1-0", "2-0"]}]
    assert [i.jobs for i in archive.job_indexes(location, 5000)] == [{5000: ["2-0"]}]
    assert archive.job_indexes(location, 9000) == []
    other = BlobArchive.over(kind.store, tmp_path / "other", "ns")  # another server, another cache
    archive.objects.write(f"segments/{segment.file}", b"not the events")
    if isinstance(kind.store, LocalBlobStore):
        assert other.segment_file(location, segment).read_bytes() == b"not the events"  # read in place
    else:
        with pytest.raises(ArchiveError, match="not what its manifest says"):
            other.segment_file(location, segment)
        assert archive.segment_file(location, segment).read_bytes() == data  # fetched once, kept


def test_a_sealed_logs_files_are_written_once_replaced_whole_listed_and_removed(
    kind: Kind, tmp_path: Path
) -> None:
    config = kind.config or BlobsConfig(url=str(tmp_path / "blobs"))
    files = open_log_files(config, tmp_path, "ns", 2)
    assert isinstance(files, NamedLogFiles if kind.config else LocalLogFiles)
    assert files.read("tile/0/000") is None and files.names("tile/0") == []
    assert files.create("tile/0/000", b"hashes") is True
    assert files.create("tile/0/000", b"hashes") is False  # the same bytes again: nothing to do
    with pytest.raises(LogConflict):
        files.create("tile/0/000", b"other hashes")
    assert files.read("tile/0/000") == b"hashes"
    files.create("tile/0/001.p/5", b"partial")
    files.create("tile/0/002", b"next")
    assert files.names("tile/0") == ["000", "002"]  # the files directly under it
    files.remove_tree("tile/0/001.p")
    assert files.read("tile/0/001.p/5") is None and files.read("tile/0/002") == b"next"
    files.replace("checkpoint", b"one")
    files.replace("checkpoint", b"two")
    assert files.read("checkpoint") == b"two"
    assert open_log_files(config, tmp_path, "ns", 3).read("checkpoint") is None  # another partition's
    with pytest.raises(ValueError, match="not a log file's path"):
        files.read("../escape")
    run(kind.store.put(chunks_of(b"a blob")))
    assert len(run(listed(kind.store))) == 1  # the collector sees none of the log's files

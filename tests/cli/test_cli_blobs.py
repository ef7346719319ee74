"""The blobs of a ledger from the command line: ``replay verify --blobs`` finds a missing and a corrupt
blob and names the jobs; ``events export --blobs DIR`` and ``events import --blobs DIR`` carry them
to a new namespace and a new store, where verify passes; an import lacking a blob is refused."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.blobs import LocalBlobStore
from jobledger.ledger import commands
from jobledger.ledger.files import FileRef
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger
from jobledger.replay.compare import compare
from tests.cli.test_cli_replay import PIPED, jobledger
from tests.support.blobs import chunks, stored
from tests.support.ledger import fetch_one, put_queue, run_tick, update


def in_store(root: Path) -> dict[str, str | None]:
    """The environment naming the place of the store at ``root`` (which is its namespace's part)."""
    return {**PIPED, "JOBLEDGER_BLOBS_URL": str(root.parent)}


@dataclass
class Jobs:
    store: LocalBlobStore
    run: FileRef  # a file of job 2 (running) and of job 3 (completed)
    data: FileRef  # a file of job 2
    out: FileRef  # the result of job 3
    gone: FileRef  # the file of job 1, which expired; its blob swept


@pytest.fixture
def jobs(ledger: Ledger, tmp_path: Path, frozen: FrozenDateTimeFactory) -> Jobs:
    store = LocalBlobStore(tmp_path / "blobs" / ledger.keys.namespace)
    put_queue(ledger, expires_after="1m")
    gone = stored(store, "old.txt", b"named by an expired job")
    run, data = stored(store, "run.sh", b"echo hi > out.txt\n"), stored(store, "data.csv", b"a,b\n1,2\n")
    out = stored(store, "out.txt", b"hi\n")

    def create(*files: FileRef) -> int:
        return ledger.run(commands.create_job("q", JobOptions().with_files(list(files)))).id

    first = create(gone)
    update(ledger, first, status="cancelled")
    frozen.tick(61)
    run_tick(ledger)
    asyncio.run(store.delete(gone.sha256))
    running, done = create(run, data), create(run)
    fetch_one(ledger)
    fetched = fetch_one(ledger)
    assert (fetched.id, running) == (done, 2)
    ledger.run(commands.add_result(done, out, attempt=fetched.attempt))
    update(ledger, done, status="completed", attempt=fetched.attempt)
    return Jobs(store, run, data, out, gone)


def test_verify_blobs_names_a_missing_and_a_corrupt_blob_with_their_jobs(
    redis_url: str, namespace: str, jobs: Jobs
) -> None:
    env = in_store(jobs.store.root)
    out = jobledger(redis_url, namespace, "replay", "verify", "--blobs", env=env).stdout
    assert "verified 3 blobs referred to by the jobs" in out, out
    assert jobs.gone.sha256 not in out, "a blob named only by an expired job is not required"

    jobs.store.path(jobs.data.sha256).unlink()
    jobs.store.path(jobs.run.sha256).write_bytes(b"echo tampered\n")
    out = jobledger(redis_url, namespace, "replay", "verify", "--blobs", code=1, env=env).stdout
    tampered = hashlib.sha256(b"echo tampered\n").hexdigest()
    assert (
        f"blob {jobs.run.sha256}: corrupt: its bytes hash to {tampered}; "
        f"referred to by job 2 file run.sh, job 3 file run.sh"
    ) in out, out
    assert f"blob {jobs.data.sha256}: missing from the store; referred to by job 2 file data.csv" in out
    assert "2 of 3 blobs referred to by the jobs" in out
    assert "no difference" in out, "the projections themselves agree with the ledger"


def test_export_and_import_carry_the_blobs_to_a_new_store(
    client: redis.Redis, redis_url: str, namespace: str, jobs: Jobs, tmp_path: Path
) -> None:
    events, carried = tmp_path / "ledger.jsonl", tmp_path / "carried"
    env = in_store(jobs.store.root)
    out = jobledger(redis_url, namespace, "events", "export", "--to", str(events), "--blobs", str(carried),
                    env=env).stdout  # fmt: skip
    assert "exported 3 blobs" in out and "1 named only by jobs gone and no longer stored" in out, out
    assert LocalBlobStore(carried).path(jobs.out.sha256).read_bytes() == b"hi\n"

    copy = namespace + "-copy"
    target = LocalBlobStore(tmp_path / "new-store" / copy)
    out = jobledger(redis_url, copy, "events", "import", str(events), "--blobs", str(carried),
                    env=in_store(target.root)).stdout  # fmt: skip
    assert "imported 3 blobs" in out, out
    assert compare(client, namespace, copy) == []
    for ref in (jobs.run, jobs.data, jobs.out):
        assert target.path(ref.sha256).read_bytes() == jobs.store.path(ref.sha256).read_bytes()
    out = jobledger(redis_url, copy, "replay", "verify", "--blobs", env=in_store(target.root)).stdout
    assert "verified 3 blobs" in out, out


def test_import_without_a_blob_a_live_job_needs_is_refused_before_any_event(
    client: redis.Redis, redis_url: str, namespace: str, jobs: Jobs, tmp_path: Path
) -> None:
    events, carried = tmp_path / "ledger.jsonl", tmp_path / "carried"
    jobledger(redis_url, namespace, "events", "export", "--to", str(events), "--blobs", str(carried),
              env=in_store(jobs.store.root))  # fmt: skip
    LocalBlobStore(carried).path(jobs.data.sha256).unlink()
    copy = namespace + "-copy"
    target = tmp_path / "new-store" / copy
    err = jobledger(redis_url, copy, "events", "import", str(events), "--blobs", str(carried), code=3,
                    env=in_store(target)).stderr  # fmt: skip
    assert f"blob {jobs.data.sha256}, referred to by job 2 file data.csv, is not in {carried}" in err, err
    assert client.exists(Keys(copy).events) == 0, "nothing appended"

    LocalBlobStore(carried).path(jobs.run.sha256).write_bytes(b"not the bytes\n")
    asyncio.run(LocalBlobStore(target).put(chunks(b"a,b\n1,2\n")))  # the target store has this one
    err = jobledger(redis_url, copy, "events", "import", str(events), "--blobs", str(carried), code=3,
                    env=in_store(target)).stderr  # fmt: skip
    assert f"not the {jobs.run.sha256} expected" in err, err
    assert client.exists(Keys(copy).events) == 0

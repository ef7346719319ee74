"""The sealer: the ledger's events, sealed into tiles and signed checkpoints outside Redis."""

from __future__ import annotations

import asyncio
import itertools
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio

from jobledger.blobs.log_files import Conflict
from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import OpeningLedger, open_ledger
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.ledger.seal.hashes import EMPTY_ROOT, leaf_hash, node_hash
from jobledger.ledger.seal.keys import write_key_file
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.verify import verify_consistency, verify_inclusion
from jobledger.scheduler.loop import CHECKS
from jobledger.scheduler.loop import run as run_scheduler
from jobledger.scheduler.sealer import Sealer, next_round_in
from tests.cli.process_support import clean_env
from tests.seal_support import seal, sealed_log, settings, signer
from tests.support.replay import stream_entries, workload


def naive_root(leaves: list[bytes]) -> bytes:
    """RFC 9162's Merkle Tree Hash, recursively, from the leaf hashes."""
    if not leaves:
        return EMPTY_ROOT
    if len(leaves) == 1:
        return leaves[0]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node_hash(naive_root(leaves[:split]), naive_root(leaves[split:]))


def leaf_hashes(client: redis.Redis, namespace: str) -> list[bytes]:
    return [leaf_hash(leaf_bytes(i, dict(f))) for i, f in stream_entries(client, namespace)]


def test_a_sealed_ledger_publishes_the_root_of_its_events(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    config = settings(tmp_path, signer(namespace))
    workload(ledger)
    assert seal(redis_url, namespace, config) > 0
    log = sealed_log(config, namespace)
    first = log.latest()
    assert first is not None
    leaves = leaf_hashes(client, namespace)
    assert first.checkpoint.size == len(leaves)
    assert first.checkpoint.root == naive_root(leaves)

    workload(ledger, jobs=300)
    seal(redis_url, namespace, config)
    second = log.latest()
    assert second is not None
    leaves = leaf_hashes(client, namespace)
    assert second.checkpoint.size == len(leaves) > 256
    assert second.checkpoint.root == naive_root(leaves)
    old, new = first.checkpoint, second.checkpoint
    verify_consistency(old.size, new.size, old.root, new.root, log.consistency(old.size, new.size))
    ids = [i.decode() for i, _ in stream_entries(client, namespace)]
    for index in (0, 255, 256, len(ids) - 1):
        assert log.index_of(ids[index], new.size) == index
        verify_inclusion(leaves[index], index, new.size, log.inclusion(index, new.size), new.root)
    assert seal(redis_url, namespace, config) == 0  # nothing new: nothing published


CRASH_BEFORE_CHECKPOINT = """
import os, sys
from pathlib import Path
from jobledger.blobs.log_files import LocalLogFiles
from jobledger.ledger.seal.keys import read_key_file
from tests.seal_support import seal, settings

created = LocalLogFiles.create


def create(self, path, data):
    if path.startswith("checkpoints/"):  # every tile is written; no checkpoint yet
        os.kill(os.getpid(), 9)
    return created(self, path, data)


LocalLogFiles.create = create
url, namespace, directory, key = sys.argv[1:]
seal(url, namespace, settings(Path(directory), read_key_file(Path(key))))
"""


def test_a_sealer_killed_between_tiles_and_checkpoint_resumes_with_the_same_root(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    key = signer(namespace)
    write_key_file(tmp_path / "ledger.key", key)
    config = settings(tmp_path / "blobs", key)
    workload(ledger)
    seal(redis_url, namespace, config)
    log = sealed_log(config, namespace)
    first = log.latest()
    assert first is not None
    workload(ledger, jobs=300)
    args = [redis_url, namespace, str(tmp_path / "blobs"), str(tmp_path / "ledger.key")]
    killed = subprocess.run([sys.executable, "-c", CRASH_BEFORE_CHECKPOINT, *args], env=clean_env(),
                            capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert log.latest() == first  # nothing published past the tiles
    assert log.files.names("tile/0")  # but the tiles of the new size are there

    client.delete(Keys(namespace).build("seal_lock"))  # the dead sealer's lease runs out
    seal(redis_url, namespace, config)  # a new sealer writes the same tiles, then the checkpoint
    latest = log.latest()
    assert latest is not None
    leaves = leaf_hashes(client, namespace)
    assert latest.checkpoint.size == len(leaves)
    assert latest.checkpoint.root == naive_root(leaves)
    assert [size for size, _ in log.history()] == [first.checkpoint.size, len(leaves)]


def test_a_changed_stream_under_a_published_tile_stops_the_sealer(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    """A new sealer started over a stream rewritten below the published size cannot sign another
    root for a size that has one: the tile it would write differs from the one kept."""
    config = settings(tmp_path, signer(namespace))
    workload(ledger, jobs=150)
    seal(redis_url, namespace, config)
    log = sealed_log(config, namespace)
    latest = log.latest()
    assert latest is not None
    (tmp_path / namespace / "ledger" / "checkpoint").unlink()  # the latest gone: start over
    events = Keys(namespace).events
    entries = stream_entries(client, namespace)
    client.delete(events)
    for n, (entry_id, fields) in enumerate(entries):  # rewritten with its ids, leaf 0 changed
        changed = {**dict(fields), b"actor": b"mallory"} if n == 0 else dict(fields)
        client.xadd(events, changed, id=entry_id)  # type: ignore[arg-type]
    with pytest.raises(Conflict):
        seal(redis_url, namespace, config)
    assert log.latest() is None or log.latest() == latest


def test_a_split_ledger_is_sealed_as_one_log_per_partition_by_the_scheduler(
    redis_url: str, namespace: str, tmp_path: Path
) -> None:
    router = open_ledger(redis_url, namespace, 4)
    for n in range(12):
        router.run(commands.put_queue(f"q{n}", QueueSettings(timeout=60_000)))
        for _ in range(30):
            router.run(commands.create_job(f"q{n}", JobOptions()))
    config = settings(tmp_path, signer(namespace), interval_ms=50)
    lengths = [int(runner.client.xlen(runner.keys.events)) for runner in router.runners]

    async def scheduled() -> None:
        ledger = OpeningLedger(redis_url, namespace, 4)
        task = asyncio.create_task(run_scheduler(ledger, dict.fromkeys(CHECKS, 3_600_000), seal=config))
        try:
            for _ in range(200):
                logs = [sealed_log(config, namespace, p).latest() for p in range(4)]
                # a checkpoint is published, then recorded in Redis: wait for both
                recorded = [int(r.client.hget(r.keys.build("seal"), "size") or 0) for r in router.runners]
                if [c.checkpoint.size if c else 0 for c in logs] == lengths == recorded:
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(f"not sealed: {logs} for {lengths}")
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await ledger.aclose()

    try:
        asyncio.run(scheduled())
        for p, runner in enumerate(router.runners):
            latest = sealed_log(config, namespace, p).latest()
            assert latest is not None and latest.checkpoint.origin == f"jobledger/{namespace}/p{p}"
            leaves = leaf_hashes(runner.client, runner.keys.namespace)
            assert latest.checkpoint.root == naive_root(leaves)
            assert runner.client.hget(runner.keys.build("seal"), "size") == str(len(leaves)).encode()
    finally:
        for runner in router.runners:
            runner.client.close()


class TimedRounds(Sealer):
    """A sealer whose rounds take ``took`` seconds of real time each, their starts recorded."""

    def __init__(self, *args: Any, took: list[float]) -> None:
        super().__init__(*args)
        self.took, self.starts = took, list[float]()

    async def round(self) -> int:
        self.starts.append(time.monotonic())
        await asyncio.sleep(self.took[min(len(self.starts), len(self.took)) - 1])
        return 1


@pytest.mark.parametrize(("took", "gaps"), [([0.4], (0.45, 0.75)), ([0.7], (0.65, 0.95))])
def test_rounds_start_every_interval_and_a_long_one_is_followed_at_once(
    redis_url: str, namespace: str, tmp_path: Path, took: list[float], gaps: tuple[float, float]
) -> None:
    """Interval 0.5 s: rounds of 0.4 s start 0.5 s apart (not 0.9), rounds of 0.7 s follow one
    another at once (not 0.5 s after the last ended): an event waits about an interval for its round."""

    async def run() -> list[float]:
        client = redis.asyncio.Redis.from_url(redis_url)
        sealer = TimedRounds(AsyncLedger(client, namespace), settings(tmp_path, signer(namespace), 500),
                             namespace, None, took=took)  # fmt: skip
        task = asyncio.create_task(sealer.run())
        await asyncio.sleep(2.2)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()
        return [b - a for a, b in itertools.pairwise(sealer.starts)]

    between = asyncio.run(run())
    assert len(between) >= 2 and all(gaps[0] <= gap <= gaps[1] for gap in between), between


def test_the_next_round_is_due_an_interval_after_the_last_began() -> None:
    assert next_round_in(1.0, 0.25) == 0.75
    assert next_round_in(1.0, 1.0) == 0.0
    assert next_round_in(1.0, 3.5) == 0.0

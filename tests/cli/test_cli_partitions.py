"""The command line on a ledger split into partitions (three, on the one test server), as real
``jobledger`` processes: verify covers every partition and names the one that differs; export and
import carry every partition into a ledger of the same count and refuse another before writing
anything; rebuild and the online rebuild work partition by partition; tokens go to the home
partition; ``serve`` and ``scheduler`` refuse a count other than the stored one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned, open_ledger
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.projections import readers, tokens
from jobledger.replay.compare import compare
from tests.cli.process_support import REPO, jobledger
from tests.support.ledger import events
from tests.support.private_redis import free_port

QUEUES = [f"q{n}" for n in range(9)]
COUNT = 3


def close(router: Partitioned) -> None:
    for runner in router.runners:
        runner.client.close()


@pytest.fixture
def split(redis_url: str, namespace: str) -> Iterator[Partitioned]:
    """A ledger of three partitions with jobs in every one: queued, completed and failed."""
    router = open_ledger(redis_url, namespace, COUNT)
    try:
        for name in QUEUES:
            router.run(commands.put_queue(name, QueueSettings(timeout=60_000)))
            for n in range(3):
                router.run(commands.create_job(name, JobOptions(input={"n": n}, tags=["all"])))
            first, second = router.run(commands.fetch_jobs(name, 2))
            router.run(commands.update_job(first.id, JobUpdate(status="completed", attempt=first.attempt)))
            router.run(commands.update_job(second.id, JobUpdate(status="failed", attempt=second.attempt)))
        assert {router.partitioning.of_queue(name) for name in QUEUES} == set(range(COUNT))
        yield router
    finally:
        close(router)


def run(tmp_path: Path, redis_url: str, namespace: str, *args: str, **env: str) -> tuple[int, str]:
    """Run ``jobledger ARGS`` on the ledger; its exit code and its output."""
    log = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}.log"
    with jobledger([*args, "--redis-url", redis_url, "--namespace", namespace], log, REPO, **env) as command:
        code = command.wait(60)
        assert code is not None, command.output()
        return code, command.output()


def keys_of(client: redis.Redis, namespace: str) -> list[bytes]:
    """Every key of a ledger's namespace and of its partitions'."""
    return [*client.scan_iter(match=Keys(namespace).pattern()), *client.scan_iter(match=f"{{{namespace}-*")]


def same_projections(client: redis.Redis, one: str, other: str) -> None:
    pairs = zip(Partitioning(one, COUNT).namespaces, Partitioning(other, COUNT).namespaces, strict=True)
    for mine, theirs in pairs:
        assert compare(client, mine, theirs) == []


def test_verify_covers_every_partition_and_names_the_one_tampered_with(
    split: Partitioned, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    code, out = run(tmp_path, redis_url, namespace, "replay", "verify")
    assert code == 0, out
    for p, ns in enumerate(split.partitioning.namespaces):
        assert f"verified partition {p} ('{ns}') of ledger '{namespace}'" in out, out
    assert f"verified ledger '{namespace}', 3 partitions:" in out and "no difference" in out

    job_id = next(i for i in range(2, 200, COUNT) if client.exists(split.runners[2].keys.job(i)))
    client.hset(split.runners[2].keys.job(job_id), "status", "cancelled")
    code, out = run(tmp_path, redis_url, namespace, "replay", "verify")
    assert code == 1, out
    assert f"job:{job_id} (as of event" in out and "field status: expected" in out, out
    assert f"verified partition 0 ('{split.partitioning.namespaces[0]}')" in out
    assert "1 of " in out and f"keys differ in partition 2 ('{split.partitioning.namespaces[2]}')" in out
    assert "(in partition 2)" in out


def test_export_then_import_into_a_ledger_of_the_same_count_gives_the_same_projections(
    split: Partitioned, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.jsonl"
    code, out = run(tmp_path, redis_url, namespace, "events", "export", "--to", str(path))
    assert code == 0, out
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == {"partitions": COUNT}
    events = lines[1:]
    assert [e["partition"] for e in events] == sorted(e["partition"] for e in events)
    assert {e["partition"] for e in events} == set(range(COUNT))
    for event in events:
        if event["job"] is not None:
            assert event["job"] % COUNT == event["partition"]
    assert f"exported {len(events)} events" in out and "(3 partitions)" in out

    copy = namespace + "-copy"
    code, out = run(tmp_path, redis_url, copy, "events", "import", str(path))
    assert code == 0, out
    assert f"imported {len(events)} events" in out
    same_projections(client, namespace, copy)
    code, out = run(tmp_path, redis_url, copy, "replay", "verify")
    assert code == 0 and "no difference" in out, out
    imported = open_ledger(redis_url, copy)  # split as the file says, its next ids where they belong
    try:
        assert imported.partitioning.count == COUNT
        assert imported.read(readers.tagged("all")) == split.read(readers.tagged("all"))
        for name in QUEUES:
            made = imported.run(commands.create_job(name, JobOptions()))
            assert made.id == split.run(commands.create_job(name, JobOptions())).id
    finally:
        close(imported)


def test_import_into_a_ledger_of_another_count_is_refused_and_writes_nothing(
    split: Partitioned, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.jsonl"
    assert run(tmp_path, redis_url, namespace, "events", "export", "--to", str(path))[0] == 0
    copy = namespace + "-copy"
    code, out = run(tmp_path, redis_url, copy, "events", "import", str(path), JOBLEDGER_PARTITIONS="2")
    assert code == 3, out
    assert "holds a ledger of 3 partition(s)" in out and "to be split into 2" in out, out
    assert keys_of(client, copy) == []

    close(open_ledger(redis_url, copy, 4))  # a ledger opened with 4 (by a server), still empty
    before = sorted(keys_of(client, copy))
    code, out = run(tmp_path, redis_url, copy, "events", "import", str(path))
    assert code == 3 and "is split into 4" in out, out
    assert sorted(keys_of(client, copy)) == before


def test_rebuild_and_the_online_rebuild_work_partition_by_partition(
    split: Partitioned, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    view = namespace + "-view"
    code, out = run(tmp_path, redis_url, namespace, "replay", "rebuild", "--into", view)
    assert code == 0, out
    assert "split as the ledger is, into 3 partitions" in out
    same_projections(client, namespace, view)
    rebuilt = open_ledger(redis_url, view)  # a split view a read-only server opens as such
    try:
        assert rebuilt.read(readers.tagged("all")) == split.read(readers.tagged("all"))
    finally:
        close(rebuilt)

    code, out = run(tmp_path, redis_url, namespace, "replay", "rebuild", "--swap")
    assert code == 0, out
    for p in range(COUNT):
        assert f"generation 1 of partition {p} (" in out, out
    generations = [client.get(Keys(ns).build("generation")) for ns in split.partitioning.namespaces]
    assert generations == [b"1"] * COUNT
    code, out = run(tmp_path, redis_url, namespace, "replay", "verify")
    assert code == 0, out


def test_tokens_go_to_the_home_partition(
    split: Partitioned, client: redis.Redis, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    code, out = run(tmp_path, redis_url, namespace, "token", "create", "ci", "--scope", "read", "--json")
    assert code == 0, out
    assert [t.name for t in split.read(tokens.tokens())] == ["ci"]
    by_partition = [
        [e["type"] for e in events(client, ns) if e["type"].startswith("token")]
        for ns in split.partitioning.namespaces
    ]
    assert by_partition == [["token_created"], [], []]
    assert run(tmp_path, redis_url, namespace, "token", "revoke", "ci")[0] == 0
    assert split.read(tokens.tokens()) == []
    assert events(client, split.partitioning.namespaces[0])[-1]["type"] == "token_revoked"
    code, out = run(tmp_path, redis_url, namespace, "token", "list", JOBLEDGER_PARTITIONS="5")
    assert code == 2 and "split into 3 partition(s)" in out, out


@pytest.mark.parametrize("command", ["serve", "scheduler"])
def test_serve_and_scheduler_refuse_another_count_than_the_stored_one(
    split: Partitioned, redis_url: str, namespace: str, tmp_path: Path, command: str
) -> None:
    more = ["--port", str(free_port())] if command == "serve" else []
    code, out = run(tmp_path, redis_url, namespace, command, "--partitions", "2", *more)
    assert code == 2, out
    assert f"the ledger '{namespace}' is split into 3 partition(s); it cannot be opened with 2" in out, out
    code, out = run(tmp_path, redis_url, namespace, command, *more, JOBLEDGER_PARTITIONS="4")
    assert code == 2 and "cannot be opened with 4" in out, out

"""Core figures of the ledger through the Python library, on one connection.

    python -m tests.benchmarks.ours.core [--redis-url URL] [--jobs N] [--json]

Measures, on a fresh namespace: create, fetch and complete one command at a time (one round trip
each) and pipelined in batches, and a create with an Idempotency-Key (its request hash computed as
the server does, a new key each time); then the Redis memory retained per ended job, its events included,
with a breakdown by kind of key.  Without ``--redis-url`` it starts the bundled valkey-server.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import redis

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger

from .server import bundled_server

BATCH = 100


def _rate(n: int, fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return n / (time.perf_counter() - start)


def _keyed_create(ledger: Ledger, queue: str, options: JobOptions, window: int = 86_400_000) -> int:
    """One create with a new Idempotency-Key, its request hashed as the server hashes it."""
    canonical = json.dumps(["POST /queue/{queue}/job", queue, {"input": {"n": 1}}], sort_keys=True)
    key = commands.Idempotency(uuid.uuid4().hex, hashlib.sha256(canonical.encode()).hexdigest(), window)
    return ledger.run(commands.create_job(queue, options, idempotency=key)).id


def _one_by_one(ledger: Ledger, n: int, queue: str) -> dict[str, float]:
    ids: list[int] = []
    create = JobOptions(input={"n": 1})
    done = JobUpdate(status="completed")
    rates = {
        "create": _rate(
            n, lambda: ids.extend(ledger.run(commands.create_job(queue, create)).id for _ in range(n))
        ),
        "fetch": _rate(n, lambda: [ledger.run(commands.fetch_jobs(queue)) for _ in range(n)]),
        "complete": _rate(n, lambda: [ledger.run(commands.update_job(i, done)) for i in ids]),
    }
    return rates


def _batches(n: int) -> Iterator[int]:
    for start in range(0, n, BATCH):
        yield min(BATCH, n - start)


def _pipelined(ledger: Ledger, n: int, queue: str) -> dict[str, float]:
    create = JobOptions(input={"n": 1})
    done = JobUpdate(status="completed")
    ids: list[int] = []

    def creates() -> None:
        for size in _batches(n):
            ids.extend(c.id for c in ledger.run_many([commands.create_job(queue, create)] * size))

    def fetches() -> None:
        for size in _batches(n):
            ledger.run(commands.fetch_jobs(queue, size))

    def completes() -> None:
        for start in range(0, n, BATCH):
            ledger.run_many([commands.update_job(i, done) for i in ids[start : start + BATCH]])

    return {
        f"create (pipelined {BATCH})": _rate(n, creates),
        f"fetch (count={BATCH})": _rate(n, fetches),
        f"complete (pipelined {BATCH})": _rate(n, completes),
    }


def _memory_breakdown(client: redis.Redis, keys: Keys) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for raw in client.scan_iter(match=keys.pattern(), count=1000):
        key = raw.decode()[len(keys.prefix) :]
        kind = key.split(":")[0]
        kinds[kind] = kinds.get(kind, 0) + int(client.memory_usage(raw, samples=0) or 0)
    return kinds


def _memory_per_job(client: redis.Redis, n: int) -> dict[str, Any]:
    """Bytes retained per completed job kept forever (expires_after 0s), events included."""
    ns = "bench-mem-" + uuid.uuid4().hex[:8]
    ledger = Ledger(client, ns)
    ledger.run(commands.put_queue("q", QueueSettings(expires_after=0)))
    before = int(client.info("memory")["used_memory"])
    _pipelined(ledger, n, "q")
    after = int(client.info("memory")["used_memory"])
    breakdown = _memory_breakdown(client, ledger.keys)
    _drop(client, ns)
    return {
        "bytes_per_ended_job": (after - before) / n,
        "by_key_kind_per_job": {k: round(v / n, 1) for k, v in sorted(breakdown.items())},
    }


def _drop(client: redis.Redis, namespace: str) -> None:
    for key in client.scan_iter(match=Keys(namespace).pattern(), count=1000):
        client.delete(key)


def measure(url: str, n: int) -> dict[str, Any]:
    client = redis.Redis.from_url(url)
    ns = "bench-" + uuid.uuid4().hex[:8]
    ledger = Ledger(client, ns)
    ledger.run(commands.put_queue("q", QueueSettings()))
    ledger.run(commands.put_queue("keyed", QueueSettings()))
    result: dict[str, Any] = {"jobs": n, "server": client.info("server").get("server_name", "redis")}
    result["server_version"] = client.info("server")["redis_version"]
    result["ops_per_second"] = {**_one_by_one(ledger, n, "q"), **_pipelined(ledger, n, "q")}
    keyed = JobOptions(input={"n": 1})
    result["ops_per_second"]["create (Idempotency-Key)"] = _rate(
        n, lambda: [_keyed_create(ledger, "keyed", keyed) for _ in range(n)]
    )
    _drop(client, ns)
    result["memory"] = _memory_per_job(client, n)
    return result


@contextmanager
def _target(url: str | None) -> Iterator[str]:
    if url:
        yield url
    else:
        with bundled_server() as started:
            yield started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--redis-url", help="measure against this server (default: start the bundled one)")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    with _target(args.redis_url) as url:
        result = measure(url, args.jobs)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['server']} {result['server_version']}, {result['jobs']} jobs, one connection")
    for name, rate in result["ops_per_second"].items():
        print(f"  {name:<28} {rate:>10,.0f} /s")
    mem = result["memory"]
    print(f"  retained per ended job       {mem['bytes_per_ended_job']:>10,.0f} B (events included)")
    for kind, size in mem["by_key_kind_per_job"].items():
        print(f"    {kind:<26} {size:>10,.1f} B")


if __name__ == "__main__":
    main()

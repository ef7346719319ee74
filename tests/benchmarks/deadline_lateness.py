"""How late the scheduler keeps deadlines with the default check intervals: each scenario of
:mod:`tests.support.deadlines` (a deadline two seconds out) run several times, each on a fresh
namespace with a fresh scheduler; prints the median and the largest lateness in ms.

    python -m tests.benchmarks.deadline_lateness [--runs 10] [--redis-url URL] [--scenario NAME ...]

Without ``--redis-url`` (or ``$JOBLEDGER_TEST_REDIS_URL``) it runs on a bundled valkey-server of its
own, in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.runtime.embedded import EmbeddedServer
from tests.support.deadlines import SCENARIOS, lateness_ms, scheduler_running


@contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory() as directory, EmbeddedServer(Path(directory)) as embedded:
        yield embedded.url


def measure(url: str, scenario: str) -> int:
    """One run: a fresh namespace and scheduler, the scenario's deadline, how late it was kept (ms)."""
    namespace = "lateness-" + uuid.uuid4().hex[:12]
    client = redis.Redis.from_url(url)
    try:
        ledger = Ledger(client, namespace)
        with scheduler_running(url, namespace):
            return lateness_ms(ledger, SCENARIOS[scenario](ledger))
    finally:
        for key in client.scan_iter(match=Keys(namespace).pattern(), count=1000):
            client.delete(key)
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", action="append", choices=list(SCENARIOS),
                        help="a scenario to run (repeatable; default: retry delay and timeout)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--redis-url", default=os.environ.get("JOBLEDGER_TEST_REDIS_URL"))
    args = parser.parse_args()
    with server(args.redis_url) as url:
        for scenario in args.scenario or ["retry delay", "timeout"]:
            late = [measure(url, scenario) for _ in range(args.runs)]
            print(
                f"{scenario}: {args.runs} runs, lateness median {statistics.median(late):.0f} ms, "
                f"max {max(late)} ms (all: {', '.join(map(str, late))})",
                flush=True,
            )


if __name__ == "__main__":
    main()

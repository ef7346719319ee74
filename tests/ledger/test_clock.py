"""The ledger's clock: ``at`` never decreases along the stream, whatever the callers' clocks say and
however late their commands arrive; a time given to ``--until`` is then a prefix of the stream."""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, datetime
from pathlib import Path

import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.clock import now_ms
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.replay.source import resolve_until
from jobledger.replay.transfer import export_ledger, import_ledger
from tests.support.ledger import (
    START_MS,
    assert_well_placed,
    create,
    events,
    fetch_one,
    put_queue,
    raw_job,
    update,
)
from tests.support.private_redis import PrivateServer, wait_until


def _ats(client: redis.Redis, namespace: str) -> list[int]:
    return [int(e["at"]) for e in events(client, namespace)]


def _clock(client: redis.Redis, namespace: str) -> int:
    return int(client.get(Keys(namespace).build("clock")) or 0)


def _steps_back(ats: list[int]) -> int:
    return sum(1 for a, b in itertools.pairwise(ats) if b < a)


def test_a_command_stamped_earlier_takes_the_ledgers_time(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q", retries=1, retry_delays=["5s"])
    ahead = Ledger(ledger.client, ledger.keys.namespace, clock=lambda: START_MS + 60_000)
    first = ahead.run(commands.create_job("q", JobOptions())).id
    assert _clock(ledger.client, ledger.keys.namespace) == START_MS + 60_000
    # the test's clock is a minute behind: every time the script computes starts from the ledger's
    second = create(ledger, delay="10s")
    assert raw_job(ledger, second)["run_at"] == str(START_MS + 70_000)
    assert fetch_one(ahead).id == first
    update(ledger, first, status="failed", attempt=1)
    assert ledger.client.zscore(ledger.keys.build("due_retry"), first) == START_MS + 65_000
    ats = _ats(ledger.client, ledger.keys.namespace)
    assert ats[1:] == [START_MS + 60_000] * (len(ats) - 1)
    assert _steps_back(ats) == 0
    assert_well_placed(ledger)


def test_a_caller_ahead_moves_the_clock_for_the_others(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "q")
    frozen.tick(5)
    create(ledger)
    assert _clock(ledger.client, ledger.keys.namespace) == START_MS + 5000
    frozen.move_to("2029-12-31T23:59:00Z")  # the caller's clock steps back a minute
    create(ledger)
    assert _ats(ledger.client, ledger.keys.namespace)[-1] == START_MS + 5000
    frozen.move_to("2030-01-01T00:00:09Z")
    create(ledger)
    assert _ats(ledger.client, ledger.keys.namespace)[-1] == START_MS + 9000


def test_commands_held_up_by_a_stalled_redis_keep_at_in_order(tmp_path: Path) -> None:
    """Commands stamped by callers whose clocks disagree, all held up by a paused Redis, then let
    through in whatever order the server reads them: ``at`` never steps back."""
    private = PrivateServer(tmp_path / "valkey")
    private.start()
    try:
        client = redis.Redis.from_url(private.url)
        namespace = "stalled"
        Ledger(client, namespace).run(commands.put_queue("q", QueueSettings()))
        sent: list[int] = []
        lock = threading.Lock()

        def caller(own_client: redis.Redis, offset_ms: int) -> None:
            def clock() -> int:
                stamp = now_ms() + offset_ms
                with lock:
                    sent.append(stamp)
                return stamp

            own = Ledger(own_client, namespace, clock=clock)
            for _ in range(5):
                own.run(commands.create_job("q", JobOptions()))

        offsets = (-900, -300, 0, 400, 800, -50)
        # each caller connects before the pause: only its commands are held up, never its handshake
        callers = [redis.Redis.from_url(private.url, socket_timeout=30) for _ in offsets]
        for own_client in callers:
            own_client.ping()
        private.pause()
        threads = [
            threading.Thread(target=caller, args=(own_client, offset))
            for own_client, offset in zip(callers, offsets, strict=True)
        ]
        try:
            for thread in threads:
                thread.start()
            wait_until(lambda: len(sent) >= len(threads), "every caller to stamp its first command")
        finally:
            private.resume()
        for thread in threads:
            thread.join(timeout=10)
        ats = _ats(client, namespace)
        assert len(ats) == 1 + 5 * len(threads)
        assert _steps_back(ats) == 0
        assert _clock(client, namespace) == ats[-1]
        # the stamps sent did disagree: without the ledger's clock the stream would have run back
        assert max(sent) - min(sent) >= 1000
        client.close()
        for own_client in callers:
            own_client.close()
    finally:
        private.kill()


def test_a_time_names_a_prefix_of_the_stream(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "q")
    behind = Ledger(ledger.client, ledger.keys.namespace, clock=lambda: START_MS - 30_000)
    for step in range(12):
        frozen.tick(1)
        create(behind if step % 3 == 0 else ledger)
    entries = events(ledger.client, ledger.keys.namespace)
    for probe in [*sorted({int(e["at"]) for e in entries}), START_MS - 1]:
        included = [e["id"] for e in entries if int(e["at"]) <= probe]
        assert included == [e["id"] for e in entries[: len(included)]]  # a prefix
        until = resolve_until(ledger.client, ledger.keys, _rfc3339(probe))
        assert until == (included[-1] if included else None)


def test_import_moves_the_clock_to_the_last_event(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "q")
    frozen.tick(30)
    create(ledger)
    path = tmp_path / "ledger.jsonl"
    export_ledger(client, namespace, path)
    copy = namespace + "-copy"
    import_ledger(client, copy, path)
    assert _clock(client, copy) == START_MS + 30_000
    frozen.tick(-20)  # a caller of the copy whose clock is behind the imported events
    Ledger(client, copy).run(commands.create_job("q", JobOptions()))
    assert _steps_back(_ats(client, copy)) == 0


def _rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

"""The actor: every event records who caused it, in its stream entry's ``actor`` field.

``local`` by default; a named actor through ``as_actor`` (a view of the same runner); ``scheduler``
for the scheduler's checks; ``launcher:ID`` for what a launcher's firing appends.  Entries written
before the field existed read as ``local``.
"""

from __future__ import annotations

import asyncio

import pytest
import redis
import redis.asyncio
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.events import LOCAL, SCHEDULER, decode_entry, launcher_actor
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import AsyncLedger, Ledger
from jobledger.ledger.stream import EventFilter, scan
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from jobledger.scheduler.loop import tick
from tests.scheduler.launcher_support import advance_to, new_launcher
from tests.support.ledger import create, events, fetch_one, put_queue, update


def actors(ledger: Ledger) -> list[tuple[str, str]]:
    """(type, actor) of every entry of the stream, as stored."""
    return [(e["type"], e["actor"]) for e in events(ledger.client, ledger.keys.namespace)]


def test_a_runner_acts_as_local_unless_told(ledger: Ledger) -> None:
    put_queue(ledger)
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="completed")
    assert ledger.actor == LOCAL
    assert actors(ledger) == [
        ("queue_created", "local"), ("job_created", "local"), ("job_started", "local"),
        ("job_completed", "local"),
    ]  # fmt: skip
    assert {e.actor for e in ledger.read(scan(None, 100, EventFilter())).events} == {"local"}


def test_as_actor_is_a_view_of_the_same_runner(ledger: Ledger) -> None:
    bot = ledger.as_actor("ci-bot")
    assert bot.actor == "ci-bot" and ledger.actor == LOCAL  # the runner itself is unchanged
    assert bot.client is ledger.client
    assert ledger.as_actor(LOCAL) is ledger and bot.as_actor("ci-bot") is bot
    put_queue(bot)
    job_id = create(ledger)
    fetch_one(bot.as_actor("worker 7"))
    # a batch (one pipeline) carries the actor too
    assert bot.run_many([commands.update_job(job_id, JobUpdate(status="completed"))]) == [1]
    assert actors(ledger) == [
        ("queue_created", "ci-bot"), ("job_created", "local"), ("job_started", "worker 7"),
        ("job_completed", "ci-bot"),
    ]  # fmt: skip
    page = ledger.read(scan(None, 100, EventFilter(actor="ci-bot")))
    assert [e.type for e in page.events] == ["queue_created", "job_completed"]


def test_commands_keep_their_arguments_whoever_acts(ledger: Ledger) -> None:
    """The prelude takes the actor off ARGV[2]: every command still finds its own arguments."""
    bot = ledger.as_actor("ci-bot")
    put_queue(bot, "q", retries=1)
    created = bot.run(commands.create_jobs("q", [JobOptions(input=1), JobOptions(input=2, priority=3)]))
    fetched = bot.run(commands.fetch_jobs("q", 2, "w1"))
    assert [f.id for f in fetched] == [created[1].id, created[0].id] and fetched[0].input_text == "2"
    bot.run(commands.heartbeat(fetched[0].id))
    assert [t for t, _ in actors(ledger)][-1] == "job_heartbeat"
    assert {actor for _, actor in actors(ledger)} == {"ci-bot"}


@pytest.mark.parametrize("name", ["", "two\nlines", "nul\x00", "x" * 256])
def test_a_name_that_is_no_actor_is_refused(ledger: Ledger, client: redis.Redis, name: str) -> None:
    with pytest.raises(ValueError, match="actor"):
        ledger.as_actor(name)
    with pytest.raises(ValueError, match="actor"):
        Ledger(client, ledger.keys.namespace, actor=name)
    assert ledger.as_actor("x" * 255).actor == "x" * 255  # the longest


def test_the_scheduler_acts_as_scheduler(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger, "q", retries=1, retry_delays=["1s"])
    job_id = create(ledger)
    fetch_one(ledger)
    update(ledger, job_id, status="failed")
    frozen.tick(2)
    assert tick(ledger)["retries"] == [job_id]
    assert actors(ledger)[-2:] == [("job_failed", "local"), ("job_requeued", SCHEDULER)]
    assert ledger.actor == LOCAL


def test_a_launcher_firing_acts_as_the_launcher(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    put_queue(ledger)
    lid = new_launcher(ledger.as_actor("ops"), "@interval", "1m")
    advance_to(ledger, frozen, 60)
    assert actors(ledger) == [
        ("queue_created", "local"), ("launcher_created", "ops"),
        ("job_created", launcher_actor(lid)), ("launcher_fired", f"launcher:{lid}"),
    ]  # fmt: skip


def test_an_event_launcher_trigger_is_the_schedulers_and_its_firing_the_launchers(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, "A")
    put_queue(ledger, "B")
    lid = new_launcher(ledger, "@event", {"type": "job_completed", "queue": "A"}, queue="B", debounce="10s")
    job_id = create(ledger, "A")
    fetch_one(ledger, "A")
    update(ledger.as_actor("worker"), job_id, status="completed")
    advance_to(ledger, frozen, 1)
    advance_to(ledger, frozen, 12)
    assert actors(ledger)[-4:] == [
        ("job_completed", "worker"), ("launcher_triggered", SCHEDULER),
        ("job_created", f"launcher:{lid}"), ("launcher_fired", f"launcher:{lid}"),
    ]  # fmt: skip


def test_an_entry_without_an_actor_reads_as_local(ledger: Ledger, client: redis.Redis) -> None:
    """The upcast: entries written before events recorded their actor have no such field."""
    put_queue(ledger)
    old_id = client.xadd(
        ledger.keys.events,
        {"type": "queue_paused", "v": "1", "at": str(ledger.clock()), "queue": "q", "data": "{}"},
    )
    found: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(ledger.keys.events, old_id, old_id)  # type: ignore[assignment]
    raw = found[0]
    assert b"actor" not in raw[1]
    assert decode_entry(*raw).actor == LOCAL
    assert decode_entry(*raw).item()["actor"] == "local"
    page = ledger.read(scan(None, 10, EventFilter(actor="local")))
    assert [e.type for e in page.events] == ["queue_created", "queue_paused"]


def test_replay_gives_the_same_projections_whoever_acted(
    client: redis.Redis, ledger: Ledger, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger.as_actor("admin"), "q", retries=1, retry_delays=["1s"])
    for n, actor in enumerate(("a", "b", LOCAL)):
        job_id = create(ledger.as_actor(actor), input=n)
        fetch_one(ledger.as_actor("w"))
        update(ledger.as_actor(actor), job_id, status="failed")
    new_launcher(ledger, "@interval", "5s")
    advance_to(ledger, frozen, 5)
    replay = namespace + "-replay"
    try:
        rebuild(client, namespace, replay)
        assert compare(client, namespace, replay) == []
    finally:
        for key in client.scan_iter(match=Keys(replay).pattern()):
            client.delete(key)


def test_the_async_runner_acts_as_told(redis_url: str, ledger: Ledger, namespace: str) -> None:
    async def main() -> None:
        async_client = redis.asyncio.Redis.from_url(redis_url)
        try:
            base = AsyncLedger(async_client, namespace)
            bot = base.as_actor("async-bot")
            assert base.actor == LOCAL and bot.client is base.client
            await bot.run(commands.put_queue("q", QueueSettings()))
            await base.run(commands.create_job("q", JobOptions()))
        finally:
            await async_client.aclose()

    asyncio.run(main())
    assert actors(ledger) == [("queue_created", "async-bot"), ("job_created", "local")]

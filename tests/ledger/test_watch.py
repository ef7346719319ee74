"""The ledger watch: one follower of the stream wakes the subscriptions an event names, and keeps
following through quiet spells longer than its client's socket timeout (real time: the quiet spell
is what is tested)."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio

from jobledger.ledger import commands
from jobledger.ledger.partitioned import open_ledger, open_ledger_async
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import AsyncLedger
from jobledger.ledger.watch import ANY, LedgerWatch, entry_topics, job_topic, queue_topic, token_topic


async def _ledger(redis_url: str, namespace: str, socket_timeout: float | None) -> AsyncLedger:
    client = redis.asyncio.Redis.from_url(redis_url, socket_timeout=socket_timeout)
    ledger = AsyncLedger(client, namespace)
    await ledger.run(commands.put_queue("q", QueueSettings()))
    return ledger


def test_a_quiet_spell_longer_than_the_socket_timeout_does_not_end_the_watch(
    redis_url: str, namespace: str
) -> None:
    async def scenario() -> tuple[bool, float]:
        ledger = await _ledger(redis_url, namespace, socket_timeout=1.5)
        watch = LedgerWatch(ledger)
        try:
            with watch.subscribe([queue_topic("q")]) as sub:
                await asyncio.sleep(0.2)
                await sub.wait(0)  # the wake-up every subscription gets when the follower starts
                # nothing happens for more than twice the socket timeout: a read that failed would
                # wake every subscription (so that it tries again), so none may come
                quiet = await sub.wait(4.0)
                assert not quiet
                started = time.monotonic()
                waiting = asyncio.ensure_future(sub.wait(10.0))
                await asyncio.sleep(0.2)
                await ledger.run(commands.create_job("q", JobOptions()))
                return await waiting, time.monotonic() - started
        finally:
            await watch.close()
            await ledger.client.aclose()

    woken, after = asyncio.run(scenario())
    assert woken
    assert after < 1.5  # woken by the event, not by a timeout


def test_only_the_topics_an_event_names_are_woken(redis_url: str, namespace: str) -> None:
    async def scenario() -> dict[str, bool]:
        ledger = await _ledger(redis_url, namespace, socket_timeout=None)
        await ledger.run(commands.put_queue("other", QueueSettings()))
        watch = LedgerWatch(ledger)
        try:
            subs = {
                "queue q": watch.subscribe([queue_topic("q")]),
                "queue other": watch.subscribe([queue_topic("other")]),
                "job 1": watch.subscribe([job_topic(1)]),
                "job 2": watch.subscribe([job_topic(2)]),
                "any": watch.subscribe([ANY]),
            }
            await asyncio.sleep(0.2)  # the follower has found the live end, and woken everyone once
            for sub in subs.values():
                await sub.wait(0)
            created = await ledger.run(commands.create_job("q", JobOptions()))
            assert created.id == 1
            results = await asyncio.gather(*(s.wait(1.0) for s in subs.values()))
            for sub in subs.values():
                sub.close()
            return dict(zip(subs, results, strict=True))
        finally:
            await watch.close()
            await ledger.client.aclose()

    assert asyncio.run(scenario()) == {
        "queue q": True,
        "queue other": False,
        "job 1": True,
        "job 2": False,
        "any": True,
    }


def test_an_event_between_subscribing_and_waiting_is_not_lost(redis_url: str, namespace: str) -> None:
    async def scenario() -> bool:
        ledger = await _ledger(redis_url, namespace, socket_timeout=None)
        watch = LedgerWatch(ledger)
        try:
            with watch.subscribe([queue_topic("q")]) as sub:
                await asyncio.sleep(0.2)
                await ledger.run(commands.create_job("q", JobOptions()))
                await asyncio.sleep(0.2)  # the event arrives before anyone waits
                return await sub.wait(0.01)
        finally:
            await watch.close()
            await ledger.client.aclose()

    assert asyncio.run(scenario())


def test_the_follower_stops_when_nobody_is_subscribed(redis_url: str, namespace: str) -> None:
    async def scenario() -> bool:
        ledger = await _ledger(redis_url, namespace, socket_timeout=None)
        watch = LedgerWatch(ledger, block=200)
        try:
            await watch.wait([ANY], 0.1)
            assert watch._tasks
            await asyncio.sleep(0.6)  # a quiet read with nobody subscribed ends it
            return all(task.done() for task in watch._tasks.values())
        finally:
            await watch.close()
            await ledger.client.aclose()

    assert asyncio.run(scenario())


def test_the_follower_stops_on_a_busy_stream_with_nobody_subscribed(redis_url: str, namespace: str) -> None:
    """Events keep coming, but nobody waits on them: the follower stops rather than read them all."""

    async def scenario() -> bool:
        ledger = await _ledger(redis_url, namespace, socket_timeout=None)
        await ledger.run(commands.put_queue("q", QueueSettings()))
        watch = LedgerWatch(ledger, block=10_000)
        try:
            await watch.wait([ANY], 0.1)
            for _ in range(20):
                await ledger.run(commands.create_job("q", JobOptions()))
                await asyncio.sleep(0.01)
            assert watch._tasks
            return all(task.done() for task in watch._tasks.values())
        finally:
            await watch.close()
            await ledger.client.aclose()

    assert asyncio.run(scenario())


def test_a_job_started_or_beating_does_not_wake_its_queue() -> None:
    """Only events that may let a fetch find a job wake a queue's fetchers."""
    for kind in (b"job_started", b"job_heartbeat", b"job_output_set", b"job_progressed"):
        assert entry_topics({b"type": kind, b"queue": b"q", b"job": b"7"}) == {ANY, job_topic(7)}
    for kind in (b"job_created", b"job_completed", b"job_returned", b"queue_resumed"):
        assert queue_topic("q") in entry_topics({b"type": kind, b"queue": b"q", b"job": b"7"})


def test_a_token_revocation_wakes_the_topic_of_that_token_only() -> None:
    revoked = {b"type": b"token_revoked", b"queue": b"", b"data": b'{"name":"ci"}'}
    assert entry_topics(revoked) == {ANY, token_topic("ci")}
    created = {b"type": b"token_created", b"queue": b"", b"data": b'{"name":"ci","scopes":["read"]}'}
    assert entry_topics(created) == {ANY}


def test_a_waiter_on_a_queue_placed_by_another_process_follows_its_partition_only(
    redis_url: str, namespace: str
) -> None:
    """Each follower, as it starts, wakes every waiter once more: following every partition of a
    split ledger would wake a long-poll once per partition."""
    maker = open_ledger(redis_url, namespace, 8)
    try:
        maker.run(commands.put_queue("q", QueueSettings()))
        where = maker.locate(["q"])["q"]
    finally:
        for runner in maker.runners:
            runner.client.close()

    async def scenario() -> tuple[list[int], bool]:
        router = await open_ledger_async(redis_url, namespace)
        watch = LedgerWatch(router, block=200)
        try:
            assert "q" not in router.partitioning.placed  # this process has not looked it up
            with watch.subscribe([queue_topic("q")]) as sub:
                assert await sub.wait(5)  # the follower, started, wakes it once
                followed = sorted(watch._tasks)
                woken_again = await sub.wait(0.5)
            return followed, woken_again
        finally:
            await watch.close()
            for runner in router.runners:
                await runner.client.aclose()

    followed, woken_again = asyncio.run(scenario())
    assert followed == [where]
    assert not woken_again

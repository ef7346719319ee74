"""The Redis transport's group commit: jobs that finish while a completion is on its way are
completed together by one ``update_jobs`` call, each checked on its own, leaving the same events as
one ``update_job`` each; no update waits for a timer."""

from __future__ import annotations

import asyncio

import redis

from jobledger.client.errors import Conflict, NotFound
from jobledger.ledger.runner import Ledger
from jobledger.replay.placement import misplaced
from jobledger.worker.transports import Assignment, Failure, RedisTransport
from tests.support.ledger import create, event_types, fetch, job, put_queue, status, stream_length


def _assignments(ledger: Ledger, n: int) -> list[Assignment]:
    for _ in range(n):
        create(ledger)
    return [Assignment("q", f.id, f.attempt, None) for f in fetch(ledger, count=n)]


def test_finishes_made_together_go_in_one_call_each_with_its_own_outcome(
    ledger: Ledger, client: redis.Redis, redis_url: str, namespace: str
) -> None:
    put_queue(ledger, "q", retries=0)
    jobs = _assignments(ledger, 30)
    stale = Assignment("q", jobs[0].id, jobs[0].attempt + 1, None)  # not the running attempt
    gone = Assignment("q", 10_000, 1, None)
    before = stream_length(client, namespace)

    async def finish() -> tuple[list[BaseException | None], int]:
        transport = RedisTransport(redis_url, namespace)
        try:
            outcomes = await asyncio.gather(
                transport.fail(jobs[1], Failure("IOError", "disk")),
                transport.complete(stale),
                transport.complete(gone),
                *(transport.complete(j, {"n": j.id}) for j in [jobs[0], *jobs[2:]]),
                return_exceptions=True,
            )
            return outcomes, transport._finishing.calls
        finally:
            await transport.close()

    outcomes, calls = asyncio.run(finish())
    assert calls == 1, "made before the first call left, all went in it"
    assert isinstance(outcomes[1], Conflict) and isinstance(outcomes[2], NotFound)
    assert [o for o in outcomes if isinstance(o, Exception)] == outcomes[1:3]
    assert stream_length(client, namespace) == before + 30
    assert status(ledger, jobs[1].id) == "failed"
    assert job(ledger, jobs[1].id)["errors"][0]["kind"] == "IOError"
    for j in [jobs[0], *jobs[2:]]:
        assert (status(ledger, j.id), job(ledger, j.id)["output"]) == ("completed", {"n": j.id})
        assert event_types(ledger, j.id) == ["job_created", "job_started", "job_completed"]
    assert misplaced(client, namespace) == []


def test_a_finish_made_while_a_call_is_on_its_way_goes_in_the_next(
    ledger: Ledger, redis_url: str, namespace: str
) -> None:
    put_queue(ledger, "q")
    first, *rest = _assignments(ledger, 6)

    async def finish() -> int:
        transport = RedisTransport(redis_url, namespace)
        try:
            on_its_way = asyncio.ensure_future(transport.complete(first))
            while transport._finishing.calls == 0:  # the first call leaves alone
                await asyncio.sleep(0)
            later = [asyncio.ensure_future(transport.complete(j)) for j in rest]
            await asyncio.gather(on_its_way, *later)
            return transport._finishing.calls
        finally:
            await transport.close()

    assert asyncio.run(finish()) == 2
    assert [status(ledger, j.id) for j in [first, *rest]] == ["completed"] * 6


def test_close_sends_what_is_pending(ledger: Ledger, redis_url: str, namespace: str) -> None:
    put_queue(ledger, "q")
    jobs = _assignments(ledger, 3)

    async def finish() -> None:
        transport = RedisTransport(redis_url, namespace)
        pending = [asyncio.ensure_future(transport.complete(j)) for j in jobs]
        await asyncio.sleep(0)
        await transport.close()
        assert all(p.done() for p in pending)

    asyncio.run(finish())
    assert [status(ledger, j.id) for j in jobs] == ["completed"] * 3

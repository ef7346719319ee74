"""How many calls a Worker makes, counted on a server of the test's own (``INFO commandstats``): it
fetches as many jobs as it has free slots in one call, completes them in group commits, and at
concurrency 1 a job costs the server one script call (the completion and the next fetch go
together: over HTTP in one ``PATCH /jobs``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.worker.worker import JobContext, Worker
from tests.benchmarks.ours.server import bundled_server
from tests.support.live_server import eventually, live_server, without_route
from tests.worker.worker_support import TRANSPORTS, command_counts, make_worker, ran_between, working

NS = "batching"


@pytest.fixture
def private_redis() -> Iterator[str]:
    """A Redis server of this test's own, whose command counts only the test moves."""
    with bundled_server() as url:
        yield url


def _queued(url: str, jobs: int) -> tuple[redis.Redis, Ledger]:
    client = redis.Redis.from_url(url)
    ledger = Ledger(client, NS)
    ledger.run(commands.put_queue("q", QueueSettings()))
    ledger.run(commands.create_jobs("q", [JobOptions()] * jobs))
    ledger.load_functions()  # loaded before counting: no load on "Function not found" is counted
    return client, ledger


def _running(client: redis.Redis, ledger: Ledger) -> int:
    return int(client.zcard(ledger.keys.queue_status("q", "running")))


def _completed(client: redis.Redis, ledger: Ledger) -> int:
    return int(client.zcard(ledger.keys.queue_status("q", "completed")))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_one_fetch_takes_as_many_jobs_as_there_are_free_slots(transport: str, private_redis: str) -> None:
    """Concurrency 8, 20 jobs queued: the first call starts 8; once released, the rest go in group
    commits, each carrying many completions, never one call per job."""
    client, ledger = _queued(private_redis, 20)
    release = asyncio.Event()

    async def gated(job: JobContext) -> None:
        await release.wait()

    with live_server(private_redis, NS) as server:
        worker = make_worker(transport, gated, "q", server, private_redis, NS, concurrency=8)
        fetches = _counted_fetches(worker)
        before = command_counts(client)
        with working(worker):
            eventually(lambda: _running(client, ledger) == 8)
            first = ran_between(before, command_counts(client)).get("fcall", 0)
            assert worker._loop is not None
            worker._loop.call_soon_threadsafe(release.set)
            eventually(lambda: _completed(client, ledger) == 20)
            total = ran_between(before, command_counts(client)).get("fcall", 0)
    client.close()
    assert first == 1, "8 jobs started by one fetch"
    assert fetches[0] <= 8, f"{fetches[0]} fetches for 20 jobs, 8 at a time"
    assert total <= 8, total  # completions and the next fetch go together: a handful of calls


def _counted_fetches(worker: Worker) -> list[int]:
    """A count of the fetches the worker's transport makes (HTTP requests, or script calls)."""
    return _counted(worker, "fetch")


def _counted(worker: Worker, method: str) -> list[int]:
    """A count of the calls of one method of the worker's transport, kept as it runs."""
    count = [0]
    call = getattr(worker.transport, method)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return await call(*args, **kwargs)

    setattr(worker.transport, method, counted)
    return count


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_at_concurrency_one_a_job_costs_one_call(transport: str, private_redis: str) -> None:
    jobs = 40
    client, ledger = _queued(private_redis, jobs)

    async def noop(job: JobContext) -> None:
        return None

    with live_server(private_redis, NS) as server:
        worker = make_worker(transport, noop, "q", server, private_redis, NS)
        asked = _counted(worker, "heartbeat_timeout")
        before = command_counts(client)
        with working(worker):
            eventually(lambda: _completed(client, ledger) == jobs)
            ran = ran_between(before, command_counts(client))
    client.close()
    # a handful more than per_job * jobs: the last look at the empty queue, a wait on the ledger
    assert ran.get("fcall", 0) <= jobs + 3, ran
    # no read of the job beside its fetch: its heartbeat_timeout comes with it (over HTTP, asked for
    # in the fetch's request)
    assert asked == [0], f"heartbeat_timeout asked for {asked[0]} times"
    if transport == "redis":
        assert ran.get("exec", 0) <= 3, ran


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_worker_of_concurrency_one_completes_and_fetches_in_one_call(
    transport: str, private_redis: str
) -> None:
    """The completion of a job and the fetch of the next are one call (over HTTP, one request)."""
    client, ledger = _queued(private_redis, 5)

    async def noop(job: JobContext) -> None:
        return None

    with live_server(private_redis, NS) as server:
        worker = make_worker(transport, noop, "q", server, private_redis, NS)
        with working(worker):
            eventually(lambda: _completed(client, ledger) == 5)
    finishing = worker.transport._finishing  # type: ignore[attr-defined]
    client.close()
    assert finishing.calls <= 6, "each job's completion in one call, with the next fetch"
    assert finishing.fetches_along >= 4


@pytest.mark.timeout(60)
def test_over_http_a_batch_too_big_for_the_server_goes_in_halves(private_redis: str) -> None:
    """Outputs that fit one request each but not together: the server refuses the batch (413,
    nothing applied) and the worker sends it again in halves, every job completed with its output."""
    client, ledger = _queued(private_redis, 24)
    release = asyncio.Event()
    output = "x" * 3000

    async def big(job: JobContext) -> str:
        await release.wait()
        return output

    with live_server(private_redis, NS, max_body_size=8192) as server:
        worker = make_worker("http", big, "q", server, private_redis, NS, concurrency=8)
        with working(worker):
            eventually(lambda: _running(client, ledger) == 8)
            assert worker._loop is not None
            worker._loop.call_soon_threadsafe(release.set)  # eight outputs at once: 24 KB together
            eventually(lambda: _completed(client, ledger) == 24)
    client.close()
    assert worker.counts["completed"] == 24
    outputs = {ledger.client.hget(ledger.keys.job(i), "output") for i in range(1, 25)}
    assert outputs == {f'"{output}"'.encode()}


@pytest.mark.timeout(60)
def test_over_http_a_server_without_the_batch_route_gets_one_patch_per_job(private_redis: str) -> None:
    """A server of an earlier version answers PATCH /jobs with 404: the worker sends each update as
    its own PATCH /job/{id} from then on, and fetches after them; every job completes."""
    client, ledger = _queued(private_redis, 12)

    async def doubled(job: JobContext) -> int:
        return 2 * job.id

    with live_server(private_redis, NS, wrap=without_route("PATCH", "/jobs")) as server:
        worker = make_worker("http", doubled, "q", server, private_redis, NS, concurrency=4)
        with working(worker):
            eventually(lambda: _completed(client, ledger) == 12)
    client.close()
    assert worker.counts["completed"] == 12
    assert worker.transport._finishing.batches.batching is False  # type: ignore[attr-defined]
    assert [ledger.client.hget(ledger.keys.job(i), "output") for i in range(1, 13)] == [
        str(2 * i).encode() for i in range(1, 13)
    ]

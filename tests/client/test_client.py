"""The Python client against a real server: every endpoint through Client (and AsyncClient for
parity), typed errors with the server's messages, ``wait``, and which failures are retried."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import httpx2
import pytest

from jobledger.client import (
    AsyncClient,
    BadRequest,
    Client,
    Conflict,
    FetchedJob,
    JobSpec,
    NotFound,
    Retry,
    Unavailable,
    WaitTimeout,
    calls,
)
from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import tick
from tests.support.live_server import live_server

FAST = Retry(attempts=3, base=0.01, cap=0.02)


@pytest.fixture
def api(server: str) -> Iterator[Client]:
    with Client(server) as client:
        client.put_queue("q")
        yield client


class Sent:
    """An httpx2 request hook that counts the requests sent, by method and path."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.keys: list[str | None] = []  # each request's Idempotency-Key

    def __call__(self, request: httpx2.Request) -> None:
        self.requests.append(f"{request.method} {request.url.path}")
        self.keys.append(request.headers.get("idempotency-key"))

    def hooks(self) -> dict[str, Any]:
        return {"request": [self]}


# Queues


def test_queues_are_created_read_sized_and_deleted(server: str) -> None:
    with Client(server) as api:
        assert api.put_queue("emails", timeout="10m", retries=2, retry_delays=["10s", timedelta(minutes=1)])
        assert api.put_queue("emails", timeout=timedelta(minutes=20)) is False  # replaced: defaults again
        settings = api.queue("emails")
        assert (settings.timeout, settings.retries, settings.retry_delays) == ("20m", 0, [])
        api.put_queue("other")
        assert api.queues() == ["emails", "other"]
        first = api.submit("emails")
        assert api.queue_size("emails") == 1
        assert api.queue_job_ids("emails")["queued"] == [first]
        api.delete_queue("emails")
        assert api.queues() == ["other"]


def test_errors_are_typed_and_carry_the_servers_message(api: Client) -> None:
    with pytest.raises(NotFound, match="queue 'nope' does not exist") as missing:
        api.queue("nope")
    assert missing.value.status == 404
    with pytest.raises(BadRequest, match="invalid queue name") as bad:
        api.put_queue("no spaces")
    assert bad.value.status == 400
    with pytest.raises(BadRequest, match="retries"):
        api.put_queue("q", retries=-1)
    job_id = api.submit("q")
    with pytest.raises(Conflict, match="complete") as refused:
        api.complete(job_id)
    assert refused.value.status == 409
    with pytest.raises(NotFound, match="job 999"):
        api.get(999)


# Jobs


def test_submit_takes_every_job_option(api: Client) -> None:
    options: dict[str, Any] = {"tags": ["welcome", "vip"], "timeout": timedelta(minutes=2),
                               "heartbeat_timeout": "30s", "expires_after": 3600, "retries": 3,
                               "retry_delays": ["1s", 5]}  # fmt: skip
    job_id = api.submit("q", {"to": "ada"}, **options)
    job = api.get(job_id)
    assert (job.queue, job.status, job.input, job.tags) == ("q", "queued", {"to": "ada"}, ["welcome", "vip"])
    assert (job.timeout, job.heartbeat_timeout, job.expires_after) == ("2m", "30s", "1h")
    assert (job.retries, job.retry_delays) == (3, ["1s", "5s"])
    assert api.tagged("vip") == [job_id]
    assert api.get_fields(job_id, "status", "retries") == {"status": "queued", "retries": 3}


def test_submit_many_creates_each_job_in_order(api: Client) -> None:
    ids = api.submit_many("q", [JobSpec(n, tags=[f"n{n}"]) for n in range(3)])
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert [api.get(i).input for i in ids] == [0, 1, 2]


def test_submit_many_takes_dicts_as_well(api: Client, server: str) -> None:
    backoff = {"base": timedelta(seconds=10), "factor": 2, "max": "1h"}
    jobs: list[JobSpec | dict[str, Any]] = [
        {"input": "a", "priority": 5, "retry_backoff": backoff},
        JobSpec("b"),
        {"tags": ["c"], "delay": "1h"},
    ]
    first, second, third = api.submit_many("q", jobs)
    assert (api.get(first).input, api.get(first).model_dump()["priority"]) == ("a", 5)
    assert api.get(first).model_dump()["retry_backoff"] == {"base": "10s", "factor": 2, "max": "1h"}
    assert (api.get(second).input, api.get(third).tags, api.get(third).status) == ("b", ["c"], "scheduled")
    with pytest.raises(TypeError, match="colour"):
        api.submit_many("q", [{"input": 1, "colour": "red"}])

    async def in_async() -> list[int]:
        async with AsyncClient(server) as aio:
            return await aio.submit_many(
                "q", [{"input": "d", "unique_key": "d"}, {"input": "d", "unique_key": "d"}]
            )

    fourth, again = asyncio.run(in_async())
    assert fourth == again and api.get(fourth).input == "d"


def test_a_worker_lifecycle_with_fencing(api: Client) -> None:
    job_id = api.submit("q", [1, 2])
    assert api.fetch("q", count=5, worker="w1") == [FetchedJob(job_id, [1, 2], 1)]
    assert api.fetch("q") == []
    api.heartbeat(job_id, attempt=1)
    api.set_output(job_id, None, attempt=1)  # a JSON null is a value, sent as one
    assert api.output(job_id) is None
    api.set_output(job_id, {"half": True}, attempt=1)
    assert api.output(job_id) == {"half": True}
    with pytest.raises(Conflict, match="attempt 2"):
        api.heartbeat(job_id, attempt=2)
    api.complete(job_id, {"done": True}, attempt=1)
    job = api.get(job_id)
    assert (job.status, job.output, job.worker, job.ended) == ("completed", {"done": True}, "w1", True)
    assert job.last_heartbeat is not None
    events = api.history(job_id)
    assert [e.type for e in events] == [
        "job_created", "job_started", "job_heartbeat", "job_output_set", "job_output_set", "job_completed"
    ]  # fmt: skip
    assert (events[1].job, events[1].queue, events[1].data) == (job_id, "q", {"attempt": 1, "worker": "w1"})


def test_update_many_with_a_fetch_and_each_refusal_in_its_place(api: Client) -> None:
    first, second, third = api.submit_many("q", [{"input": 1}, {"input": 2}, {"input": 3}])
    started = api.fetch("q", count=2, worker="w1")
    answer = api.update_many(
        [
            {"id": first, "status": "completed", "attempt": 1, "output": "one"},
            {"id": second, "status": "completed", "attempt": 2},
            {"id": 999_999, "status": "completed"},
        ],
        fetch="q",
        count=5,
        worker="w2",
        heartbeat_timeout=True,
    )
    assert [f.id for f in started] == [first, second]
    assert answer.refusals[0] is None
    assert isinstance(answer.refusals[1], Conflict) and answer.refusals[1].status == 409
    assert isinstance(answer.refusals[2], NotFound)
    assert answer.jobs == [FetchedJob(third, 3, 1, (), "0s")]
    assert (api.get(first).status, api.output(first), api.get(second).status) == (
        "completed",
        "one",
        "running",
    )
    gone = api.update_many([{"id": second, "status": "completed", "attempt": 1}], fetch="nope")
    assert gone.refusals == (None,) and isinstance(gone.jobs, NotFound)
    assert api.update_many([{"id": third, "progress": 10}]).jobs is None  # no fetch asked
    with pytest.raises(BadRequest, match="give updates"):
        api.update_many([])


def test_fail_cancel_requeue_and_delete(api: Client) -> None:
    job_id = api.submit("q")
    api.fetch("q")
    api.fail(job_id, attempt=1)
    assert (api.get(job_id).status, api.get(job_id).ended) == ("failed", True)
    api.requeue(job_id)
    assert api.get(job_id).status == "queued"
    api.cancel(job_id)
    assert api.get(job_id).status == "cancelled"
    api.delete(job_id)
    with pytest.raises(NotFound):
        api.get(job_id)
    assert api.history(job_id)[-1].type == "job_deleted"


def test_launchers_are_created_listed_read_and_deleted(api: Client) -> None:
    template = {"input": {"digest": True}, "tags": ["nightly"]}
    launcher_id = api.create_launcher("@cron", "0 0 3 * * *", "q", template=template, max_pending=1)
    found = api.launcher(launcher_id)
    assert (found["type"], found["arguments"], found["queue"], found["max_pending"]) == (
        "@cron", "0 0 3 * * *", "q", 1
    )  # fmt: skip
    assert found["next_at"] is not None
    chained = api.create_launcher("@event", {"type": "job_completed", "queue": "q"}, "q")
    assert sorted(item["id"] for item in api.launchers()) == sorted([launcher_id, chained])
    api.delete_launcher(launcher_id)
    with pytest.raises(NotFound):
        api.launcher(launcher_id)
    with pytest.raises(BadRequest, match="cron"):
        api.create_launcher("@cron", "every tuesday", "q")
    with pytest.raises(NotFound, match="queue 'nope'"):
        api.create_launcher("@interval", "1h", "nope")


def test_server_information(api: Client) -> None:
    api.submit("q")
    info = api.info()
    assert info["queues"]["q"]["queued"] == 1
    assert info["statistics"]["total_jobs_created"] == 1
    assert api.health() == {"status": "healthy"}
    assert api.version()


# wait


def test_wait_returns_the_job_once_it_has_ended(api: Client, server: str) -> None:
    job_id = api.submit("q", "x")
    result: list[Any] = []
    waiter = threading.Thread(target=lambda: result.append(api.wait(job_id, timeout=15)))
    waiter.start()
    (fetched,) = api.fetch("q")
    api.complete(job_id, "out", attempt=fetched.attempt)
    waiter.join(timeout=20)
    assert [(j.id, j.status, j.output) for j in result] == [(job_id, "completed", "out")]


def test_wait_follows_the_feed_and_times_out(server: str) -> None:
    sent = Sent()
    with Client(server, event_hooks=sent.hooks()) as api:
        api.put_queue("q")
        job_id = api.submit("q")
        sent.requests.clear()
        started = time.monotonic()
        with pytest.raises(WaitTimeout, match=f"job {job_id} had not ended after 1s") as timed_out:
            api.wait(job_id, timeout=1.0)
        waited = time.monotonic() - started
    assert 1.0 <= waited < 3.0
    assert timed_out.value.last_status == "queued"
    # one look, the feed, one more look once the feed is connected: no polling
    assert sent.requests == [f"GET /job/{job_id}", "GET /events/stream", f"GET /job/{job_id}"]


def test_wait_returns_at_once_for_an_ended_job(server: str) -> None:
    sent = Sent()
    with Client(server, event_hooks=sent.hooks()) as api:
        api.put_queue("q")
        job_id = api.submit("q")
        api.cancel(job_id)
        sent.requests.clear()
        assert api.wait(job_id, timeout=5).status == "cancelled"
    assert sent.requests == [f"GET /job/{job_id}"]


def test_wait_ends_on_a_failure_with_no_retry_left_not_on_one_that_retries(
    server: str, ledger: Ledger
) -> None:
    with Client(server) as api:
        api.put_queue("q", retries=1)
        job_id = api.submit("q")
        result: list[Any] = []
        waiter = threading.Thread(target=lambda: result.append(api.wait(job_id, timeout=15)))
        waiter.start()
        api.fetch("q")
        api.fail(job_id, attempt=1)  # a retry is left: not the end
        assert tick(ledger)["retries"] == [job_id]
        assert waiter.is_alive()
        api.fetch("q")
        api.fail(job_id, attempt=2)  # the last try
        waiter.join(timeout=20)
        assert [(j.status, j.ended, j.retries_attempted) for j in result] == [("failed", True, 1)]


# Retries


@pytest.fixture
def no_redis_server(namespace: str) -> Iterator[str]:
    """A server whose Redis is unreachable: every endpoint but /health answers 503."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    with live_server(f"redis://127.0.0.1:{dead}", namespace) as url:
        yield url


def test_503_is_retried_only_for_requests_safe_to_repeat(no_redis_server: str) -> None:
    sent = Sent()
    with Client(no_redis_server, retry=FAST, event_hooks=sent.hooks()) as api:
        with pytest.raises(Unavailable, match="Redis is unreachable") as unavailable:
            api.get(1)
        assert unavailable.value.status == 503
        assert sent.requests == ["GET /job/1"] * 3
        sent.requests.clear()
        with pytest.raises(Unavailable):
            api.submit("q")  # a create carries an Idempotency-Key: resending it creates nothing twice
        with pytest.raises(Unavailable):
            api.fetch("q")
        assert sent.requests == ["POST /queue/q/job"] * 3 + ["GET /queue/q/job"]


@pytest.fixture
def hang_up_server() -> Iterator[str]:
    """A server that reads each request and closes the connection without answering."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() above
    listener.close()
    thread.join(timeout=5)
    assert not thread.is_alive()


def test_a_lost_answer_is_retried_only_when_repeating_is_harmless(hang_up_server: str) -> None:
    sent = Sent()
    with Client(hang_up_server, retry=FAST, event_hooks=sent.hooks()) as api:
        calls_made: tuple[Callable[[], object], ...] = (
            lambda: api.fail(7),
            lambda: api.fetch("q"),
            lambda: api.update_many([{"id": 7, "status": "completed", "attempt": 1}], fetch="q"),
            lambda: api.update_many([{"id": 7, "status": "completed"}]),
        )
        for call in calls_made:
            with pytest.raises(Unavailable, match="cannot reach jobledger"):
                call()
        assert sent.requests == ["PATCH /job/7", "GET /queue/q/job", "PATCH /jobs", "PATCH /jobs"]
        sent.requests.clear()
        sent.keys.clear()
        for call in (lambda: api.submit("q"), lambda: api.submit_many("q", [{}]),
                     lambda: api.create_launcher("@interval", "1m", "q"), lambda: api.fail(7, attempt=1),
                     lambda: api.heartbeat(7), lambda: api.delete(7),
                     lambda: api.update_many([{"id": 7, "status": "completed", "attempt": 1}])):  # fmt: skip
            with pytest.raises(Unavailable):
                call()
        assert sent.requests == ["POST /queue/q/job"] * 3 + ["POST /queue/q/jobs"] * 3 + \
            ["POST /launcher"] * 3 + ["PATCH /job/7"] * 3 + ["PUT /job/7/heartbeat"] * 3 + \
            ["DELETE /job/7"] * 3 + ["PATCH /jobs"] * 3  # fmt: skip
        # each create's tries carry one key of their own
        creates = sent.keys[:9]
        assert all(creates) and len(set(creates)) == 3
        assert creates[0:3] == [creates[0]] * 3 and creates[3:6] == [creates[3]] * 3
        assert sent.keys[9:] == [None] * 12


def test_a_create_sent_again_with_its_key_creates_once(api: Client) -> None:
    job = calls.create_job("q", JobSpec({"to": "ada"}))
    first = api.send(job)
    assert api.send(job) == first  # what a resend after a lost answer gets
    assert api.send(calls.create_job("q", JobSpec({"to": "ada"}))) == first + 1  # another logical call
    mine = calls.create_jobs("q", [JobSpec(1), JobSpec(2)], idempotency_key="batch-1")
    assert api.send(mine) == api.send(
        calls.create_jobs("q", [JobSpec(1), JobSpec(2)], idempotency_key="batch-1")
    )
    launcher = calls.create_launcher("@interval", "1m", "q", idempotency_key="launcher-1")
    assert api.send(launcher) == api.send(launcher)
    assert len(api.launchers()) == 1
    with pytest.raises(Conflict, match="Idempotency-Key") as refused:
        api.send(calls.create_job("q", JobSpec({"to": "bob"}), idempotency_key="batch-1"))
    assert refused.value.status == 422


def test_submit_takes_the_callers_idempotency_key(api: Client) -> None:
    first = api.submit("q", {"to": "ada"}, idempotency_key="order-17")
    assert api.submit("q", {"to": "ada"}, idempotency_key="order-17") == first
    batch = api.submit_many("q", [{"input": 1}, {"input": 2}], idempotency_key="orders-18")
    assert api.submit_many("q", [{"input": 1}, {"input": 2}], idempotency_key="orders-18") == batch
    assert api.submit("q", {"to": "ada"}) == batch[-1] + 1


def test_a_refused_connection_is_retried_for_any_request() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # nobody listens once the socket closes
    sent = Sent()
    with Client(url, retry=FAST, event_hooks=sent.hooks()) as api, pytest.raises(Unavailable, match=url):
        api.submit("q")
    assert sent.requests == ["POST /queue/q/job"] * 3


def test_backoff_grows_to_its_cap_and_stops_after_the_attempts() -> None:
    retry = Retry(attempts=5, base=0.1, cap=0.3)
    safe = calls.get_job(1)
    delays = [retry.after_status(safe, 503, tried) for tried in range(1, 6)]
    assert delays[-1] is None
    bounds = [(0.05, 0.1), (0.1, 0.2), (0.15, 0.3), (0.15, 0.3)]
    assert all(lo <= d <= hi for d, (lo, hi) in zip(delays[:4], bounds, strict=True)), delays  # type: ignore[operator]
    assert retry.after_status(safe, 500, 1) is None
    assert retry.after_status(calls.fetch_jobs("q", 1), 503, 1) is None


# AsyncClient


def test_the_async_client_does_the_same(server: str) -> None:
    async def scenario() -> None:
        async with AsyncClient(server) as api:
            assert await api.put_queue("q", heartbeat_timeout=timedelta(seconds=30))
            job_id = await api.submit("q", {"a": 1}, tags=["t"])
            assert await api.queue_size("q") == 1
            waiting = asyncio.create_task(api.wait(job_id, timeout=15))
            (fetched,) = await api.fetch("q", worker="w")
            await api.heartbeat(fetched.id, fetched.attempt)
            done = {
                "id": fetched.id,
                "status": "completed",
                "output": {"ok": True},
                "attempt": fetched.attempt,
            }
            assert (await api.update_many([done], fetch="q")).refusals == (None,)
            job = await waiting
            assert (job.status, job.output, job.heartbeat_timeout) == ("completed", {"ok": True}, "30s")
            assert [e.type for e in await api.history(job_id)][-1] == "job_completed"
            assert await api.tagged("t") == [job_id]
            launcher_id = await api.create_launcher("@interval", "1h", "q")
            assert (await api.launcher(launcher_id))["type"] == "@interval"
            assert [item["id"] for item in await api.launchers()] == [launcher_id]
            await api.delete_launcher(launcher_id)
            with pytest.raises(NotFound, match="queue 'nope'"):
                await api.queue("nope")
            with pytest.raises(Conflict):
                await api.complete(job_id, attempt=2)
            with pytest.raises(WaitTimeout):
                await api.wait(await api.submit("q"), timeout=0.2)

    asyncio.run(scenario())

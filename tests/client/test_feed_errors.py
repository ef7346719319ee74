"""When a live feed cannot go on: the server's SSE ``event: error`` block is read as the error it
carries (never as an event), the followers try again as their retry policy says and then raise it;
``jobledger events tail`` prints it on one line and exits 1.

The live tests stop a Redis of their own (a valkey-server started for the test, never the shared
one) under a running server."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2
import redis

from jobledger.client import AsyncClient, Client, ClientError, Retry, ServerError, Unavailable
from jobledger.client.sse import SseDecoder, StreamFailed
from jobledger.ledger.runner import Ledger
from tests.support.ledger import create, put_queue
from tests.support.live_server import eventually, live_server
from tests.support.private_redis import PrivateServer

REPO = Path(__file__).resolve().parents[2]
FAST = Retry(attempts=3, base=0.05, cap=0.1)


def _feed(decoder: SseDecoder, text: str) -> list[object]:
    out: list[object] = []
    for line in text.splitlines(keepends=True):
        try:
            event = decoder.feed(line)
        except StreamFailed as failed:
            out.append(failed.error)
        else:
            if event is not None:
                out.append(event)
    return out


def test_an_error_block_is_the_servers_error_not_an_event() -> None:
    decoder = SseDecoder()
    event = '{"id":"5-0","type":"job_created","at":"2030-01-01T00:00:00Z","queue":"q","job":1,"data":{}}'
    got = _feed(
        decoder,
        f": following the ledger\nid: 4-0\n\nid: 5-0\ndata: {event}\n\n"
        'event: error\ndata: {"error": "Redis is unreachable: Timeout reading from valkey.sock"}\n\n',
    )
    assert [type(g).__name__ for g in got] == ["Event", "Unavailable"]
    error = got[1]
    assert isinstance(error, Unavailable) and error.status == 503
    assert error.message == "Redis is unreachable: Timeout reading from valkey.sock"
    assert decoder.last_id == "5-0"  # an error does not move the position a reconnection resumes from


def test_an_error_block_may_name_its_status_and_unknown_blocks_are_skipped() -> None:
    got = _feed(
        SseDecoder(),
        'event: error\ndata: {"error": "archive segment missing", "status": 500}\n\n'
        "event: something-newer\ndata: [1, 2]\n\n"
        "event: error\ndata: not json\n\n"
        "data: {not an event}\n\n",
    )
    assert [(type(g).__name__, g.message) for g in got if isinstance(g, ClientError)] == [
        ("ServerError", "archive segment missing"),
        ("Unavailable", "not json"),
        ("ServerError", "the event feed sent a block that is not an event: {not an event}"),
    ]
    assert len(got) == 3 and isinstance(got[0], ServerError)


def _feeds_open(url: str) -> int:
    """The live feeds the server at ``url`` says it serves."""
    found = re.search(r"^jobledger_feeds_open (\S+)$", httpx2.get(f"{url}/metrics").text, re.MULTILINE)
    assert found is not None
    return int(float(found.group(1)))


def _xreading(client: redis.Redis) -> int:
    return sum(1 for c in client.client_list() if c.get("cmd") == "xread")


def test_followers_and_waits_raise_unavailable_when_the_servers_redis_goes(private: PrivateServer) -> None:
    ns = "feed-errors"
    ledger = Ledger(redis.Redis.from_url(private.url), ns)
    put_queue(ledger, "q")
    job_id = create(ledger, "q")
    with live_server(private.url, ns) as url, ThreadPoolExecutor(3) as pool:

        def follow() -> object:
            with Client(url, retry=FAST) as api:
                return list(api.follow())

        def wait() -> object:
            with Client(url, retry=FAST) as api:
                return api.wait(job_id, timeout=30)

        async def async_wait() -> object:
            async with AsyncClient(url, retry=FAST) as api:
                return await api.wait(job_id, timeout=30)

        futures = [pool.submit(follow), pool.submit(wait), pool.submit(asyncio.run, async_wait())]
        eventually(lambda: _feeds_open(url) == 3, timeout=10)  # every feed is connected
        eventually(lambda: _xreading(ledger.client) == 1, timeout=10)  # the server's one reader, for all
        stopped = time.monotonic()
        private.kill()
        for future in futures:
            error = future.exception(timeout=15)
            assert isinstance(error, Unavailable), repr(error)
            assert error.message.startswith("Redis is unreachable"), error.message
            assert time.monotonic() - stopped < 10
    ledger.client.close()


def test_tail_prints_the_failure_on_one_line_and_exits_1(private: PrivateServer) -> None:
    ns = "tail-errors"
    ledger = Ledger(redis.Redis.from_url(private.url), ns)
    put_queue(ledger, "q")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBLEDGER_")}
    with live_server(private.url, ns) as url:
        command = [sys.executable, "-m", "jobledger.cli.main", "events", "tail", "--url", url]
        with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as proc:  # fmt: skip
            try:
                eventually(lambda: _xreading(ledger.client) >= 1, timeout=15)
                private.kill()
                _, errors = proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
    ledger.client.close()
    assert proc.returncode == 1, errors
    assert errors.startswith("jobledger: unavailable: Redis is unreachable"), errors
    assert len(errors.splitlines()) == 1, errors

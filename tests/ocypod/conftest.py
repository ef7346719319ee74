"""Fixtures of the Ocypod ports: one ``jobledger serve`` process per test module (without its own
scheduler: the tests run the checks themselves, as Ocypod's do), and for each test a namespace as
empty as the new Redis Ocypod's tests start, read through both of Ocypod's ways to read a status."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.ocypod.manager import Manager, connect
from tests.ocypod.server import Served, serve, wipe_ledger


@pytest.fixture(scope="module")
def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with serve(redis_url, log, "--no-scheduler", "--log-level", "warning") as server:
        yield server


@pytest.fixture(params=["fields", "route"])
def status_via(request: pytest.FixtureRequest) -> str:
    """``job_status`` through ``GET /job/{id}?fields=status`` or Ocypod's ``GET /job/{id}/status``."""
    via: str = request.param
    return via


@pytest.fixture
def m(served: Served, redis_url: str, status_via: str) -> Iterator[Manager]:
    manager = connect(served.url, redis_url, served.namespace, status_via)
    wipe_ledger(manager.ledger)
    try:
        yield manager
    finally:
        wipe_ledger(manager.ledger)
        manager.close()

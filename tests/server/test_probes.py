"""Probes: ``GET /ready`` answers 200 only while Redis answers and the server's scheduler runs, 503
with a JSON error otherwise; ``GET /health`` keeps Ocypod's body (always 200).  Redis is stopped and
started again under a running app (with its scheduler), which keeps deadlines again once it is back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from jobledger.server import app as app_module
from jobledger.server.app import create_app
from tests.support.deadlines import SCENARIOS, lateness_ms
from tests.support.http import BASE_URL, error_of, make_config
from tests.support.private_redis import PrivateServer, wait_until


@contextmanager
def serving(url: str, namespace: str, *, run_scheduler: bool = True, **server: Any) -> Iterator[TestClient]:
    """The app as ``serve`` runs it (its scheduler included) on ``url``, while the block runs."""
    app = create_app(make_config(namespace, **server), url, run_scheduler=run_scheduler)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
        yield client


def ready(api: TestClient) -> bool:
    return api.get("/ready").status_code == 200


def test_ready_follows_redis_down_and_back_while_health_keeps_its_body(tmp_path: Path) -> None:
    server = PrivateServer(tmp_path)
    server.start()
    try:
        with serving(server.url, "probes") as api:
            wait_until(lambda: ready(api), "the app to be ready")
            assert api.get("/ready").json() == {"status": "ready"}
            assert api.get("/health").json() == {"status": "healthy"}

            server.kill()
            message = error_of(api.get("/ready"), 503)
            assert "redis is unreachable" in message
            health = api.get("/health")
            assert health.status_code == 200 and health.json()["status"] == "unhealthy"

            server.start()  # the same port, empty
            wait_until(lambda: ready(api), "the app to be ready again")
            assert api.get("/health").json() == {"status": "healthy"}
            # and its scheduler, woken by the ledger again, keeps a deadline on time
            ledger = Ledger(redis.Redis.from_url(server.url), "probes")
            assert 0 <= lateness_ms(ledger, SCENARIOS["retry delay"](ledger)) <= 1500
            ledger.client.close()
    finally:
        server.kill()


def test_a_scheduler_that_started_without_redis_keeps_deadlines_once_it_comes(tmp_path: Path) -> None:
    server = PrivateServer(tmp_path)
    with serving(server.url, "late") as api:
        error_of(api.get("/ready"), 503)
        server.start()
        try:
            wait_until(lambda: ready(api), "the app to be ready")
            ledger = Ledger(redis.Redis.from_url(server.url), "late")
            assert 0 <= lateness_ms(ledger, SCENARIOS["timeout"](ledger)) <= 1500
            ledger.client.close()
        finally:
            server.kill()


def test_ready_without_a_scheduler_asks_only_redis(redis_url: str, namespace: str) -> None:
    with serving(redis_url, namespace, run_scheduler=False) as api:
        assert api.get("/ready").json() == {"status": "ready"}
    with serving(redis_url, namespace, read_only=True) as api:  # a read-only view runs no scheduler
        assert api.get("/ready").json() == {"status": "ready"}


def test_configured_queues_exist_once_serving_and_ready_waits_for_them_while_redis_is_down(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A start with ``[queue.*]`` sections serves with its queues made (as Ocypod's does); when Redis
    is down it serves anyway, and /ready says why it is not ready until they are made."""
    monkeypatch.setattr(app_module, "DECLARE_WAIT", 0.2)
    server = PrivateServer(tmp_path)
    app = create_app(make_config("declared", queues={"q": {"timeout": "1m"}}), server.url)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as api:
        server.start()  # after the start gave up waiting for it
        try:
            message = error_of(api.get("/ready"), 503)
            assert "configured queues" in message or "redis is unreachable" in message
            wait_until(lambda: ready(api), "the configured queue to be made")
            assert api.get("/queue/q").json()["timeout"] == "1m"
        finally:
            server.kill()
    server = PrivateServer(tmp_path / "up")
    server.start()
    try:
        app = create_app(make_config("declared", queues={"q": {}}), server.url)
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as api:
            assert api.get("/queue").json() == ["q"]  # made before the first request is served
    finally:
        server.kill()

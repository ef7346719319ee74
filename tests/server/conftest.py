"""Fixtures of the HTTP server tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.support.http import app_client, put_queue


@pytest.fixture
def api(request: pytest.FixtureRequest, redis_url: str, namespace: str) -> Iterator[TestClient]:
    """The app on the test's namespace, behind Starlette's TestClient, with the queues (default
    settings) that the test's module names in ``QUEUES``."""
    with app_client(redis_url, namespace) as client:
        for name in getattr(request.module, "QUEUES", ()):
            put_queue(client, name)
        yield client

"""Fixtures of the HTTP server tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tests.http_support import app_client


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    """The app on the test's namespace, behind Starlette's TestClient; nothing created yet."""
    with app_client(redis_url, namespace) as client:
        yield client

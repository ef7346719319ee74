"""Fixtures of the worker tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from jobledger.client import Client


@pytest.fixture
def api(server: str) -> Iterator[Client]:
    with Client(server) as client:
        yield client


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Released at the end of every test, so no handler thread outlives it."""
    event = threading.Event()
    yield event
    event.set()

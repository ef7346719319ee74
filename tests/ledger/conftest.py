"""Fixtures of the ledger tests."""

from __future__ import annotations

import pytest

from jobledger.ledger.runner import Ledger
from tests.support.ledger import put_queue


@pytest.fixture
def queue(ledger: Ledger) -> str:
    """Queue ``q``: runs time out after 10 s, ended jobs expire after an hour."""
    put_queue(ledger, "q", timeout="10s", expires_after="1h")
    return "q"

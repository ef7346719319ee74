"""Fixtures of the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jobledger.client import Client
from jobledger.ledger.runner import Ledger
from tests.cli.exec_support import Flow
from tests.cli.process_support import jobledger, wait_serving
from tests.support.private_redis import free_port


@pytest.fixture
def flow(redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path) -> Iterator[Flow]:
    port = free_port()
    data = tmp_path / "data"
    args = ["serve", "--redis-url", redis_url, "--namespace", namespace, "--data-dir", str(data),
            "--host", "127.0.0.1", "--port", str(port), "--timeout-check-interval", "0.2s"]  # fmt: skip
    with jobledger(args, tmp_path / "serve.log") as serve, Client(f"http://127.0.0.1:{port}") as api:
        wait_serving(serve, api.url)
        api.put_queue("q", timeout="30s", retries=0)
        yield Flow(api.url, data / "blobs" / namespace, tmp_path, api, ledger)

"""One Valkey Cluster of three nodes per test module (see tests/support/cluster_redis.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.cluster_redis import LocalCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        local.start()
        yield local
    finally:
        local.kill()

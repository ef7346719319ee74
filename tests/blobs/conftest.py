"""Fixtures: a radosgw for the session (an S3 endpoint of our own), and a store of each kind."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.blobs.radosgw import RadosGW, missing_binaries


@pytest.fixture(scope="session")
def radosgw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RadosGW]:
    """A one-node Ceph cluster and its radosgw, started once per test process and stopped by PID.
    Skipped, saying why, without Ceph's binaries; ``REQUIRE_S3=1`` makes that a failure."""
    missing = missing_binaries()
    if missing:
        reason = (
            f"no S3 to test against: {', '.join(missing)} not installed"
            " (apt-get install radosgw ceph-mon ceph-osd)"
        )
        if os.environ.get("REQUIRE_S3") == "1":
            pytest.fail(reason + "; REQUIRE_S3=1 requires them")
        pytest.skip(reason)
    gateway = RadosGW(tmp_path_factory.mktemp("radosgw"))
    try:
        gateway.start()
        yield gateway
    finally:
        gateway.stop()

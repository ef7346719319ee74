"""Helpers of the HTTP tests: the app on a test's namespace behind Starlette's TestClient, the checks
every error answer must pass, and a guard that a refused request changed nothing."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx2
import redis
from freezegun import freeze_time
from starlette.testclient import TestClient

from jobledger.blobs import BlobStore
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import Partitioned
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.redis_clients import sync_client
from jobledger.ledger.runner import Ledger
from jobledger.replay.compare import snapshot
from jobledger.runtime.config import Config, config_from
from jobledger.scheduler.loop import tick
from jobledger.server.app import create_app
from tests.support.blobs import temporary_store
from tests.support.ledger import TEST_PARTITIONS

#: Where the TestClient's requests go: a loopback name, one the server answers to with auth off.
BASE_URL = "http://localhost"
#: RFC 3339 UTC with microseconds, as every datetime of the API is written.
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
JOB_STATUSES = ("queued", "running", "failed", "completed", "cancelled", "timed_out", "scheduled")
#: jobledger's queue settings beyond Ocypod's, at their defaults.
EXTENSION_DEFAULTS: dict[str, Any] = {
    "retry_backoff": None, "priority": 0, "max_queued_time": "0s", "max_running": 0,
    "max_running_per_key": 0, "retry_on": [], "no_retry_on": [], "paused": False,
    "max_file_size": 2**30, "max_job_bytes": 4 * 2**30,
}  # fmt: skip
DEFAULT_SETTINGS = {"timeout": "5m", "heartbeat_timeout": "0s", "expires_after": "5m",
                    "retries": 0, "retry_delays": [], **EXTENSION_DEFAULTS}  # fmt: skip


def make_config(
    namespace: str,
    queues: dict[str, Any] | None = None,
    partitions: int | None = None,
    launchers: dict[str, Any] | None = None,
    **server: Any,
) -> Config:
    """The config of an app on ``namespace``, with its ``[queue.NAME]`` and ``[launcher.NAME]``
    sections; ``partitions``: how many a new ledger is split into (by default the session's, see
    tests/conftest.py).  Not sealed: a sealer would keep its key and files in the working directory
    (the sealing tests give theirs a directory of their own)."""
    partitions = partitions or TEST_PARTITIONS
    raw = {"redis": {"key_namespace": namespace, "partitions": partitions}, "server": server,
           "queue": queues or {}, "launcher": launchers or {}, "ledger": {"seal": False}}  # fmt: skip
    return config_from(raw)


@contextmanager
def app_client(redis_url: str, namespace: str, queues: dict[str, Any] | None = None,
               blobs: BlobStore | None = None, partitions: int | None = None,
               launchers: dict[str, Any] | None = None, **server: Any) -> Iterator[TestClient]:  # fmt: skip
    """The app on ``namespace`` with no scheduler task; the lifespan runs while the block does.
    ``blobs``: the store of the jobs' files (else one in a temporary directory, gone after);
    ``partitions``: how many the ledger is split into (default: as the config's default)."""
    with contextlib.ExitStack() as stack:
        if blobs is None:
            blobs = stack.enter_context(temporary_store())
        config = make_config(namespace, queues, partitions, launchers, **server)
        app = create_app(config, redis_url, run_scheduler=False, blobs=blobs)
        yield stack.enter_context(TestClient(app, base_url=BASE_URL, raise_server_exceptions=False))


def error_of(response: httpx2.Response, status: int) -> str:
    """Assert ``status`` and an Ocypod-style JSON error; the message, lower-cased."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"], body
    assert isinstance(body["error"], str) and body["error"].strip(), body
    return body["error"].lower()


def no_content(response: httpx2.Response) -> None:
    assert response.status_code == 204, (response.status_code, response.text)
    assert response.content == b""


@dataclass(frozen=True)
class LedgerState:
    events: int
    projections: dict[str, tuple[str, Any]]


def state_of(client: redis.Redis, namespace: str) -> LedgerState:
    """The events and projections of the namespace: of every partition when the session splits its
    ledgers (each read through a client of its own, on its node of a Cluster)."""
    if TEST_PARTITIONS is None:
        return LedgerState(int(client.xlen(Keys(namespace).events)), snapshot(client, namespace))
    given = client.connection_pool.connection_kwargs
    url = f"redis://{given['host']}:{given['port']}"
    events, projections = 0, {}
    for name in Partitioning(namespace, TEST_PARTITIONS).namespaces:
        routed = sync_client(url, name)
        try:
            events += int(routed.xlen(Keys(name).events))
            projections.update({f"{name} {key}": value for key, value in snapshot(routed, name).items()})
        finally:
            routed.close()
    return LedgerState(events, projections)


@contextmanager
def unchanged(client: redis.Redis, namespace: str) -> Iterator[None]:
    """The block appends no event and changes no projection."""
    before = state_of(client, namespace)
    yield
    after = state_of(client, namespace)
    assert after.events == before.events, "an event was appended"
    assert after.projections == before.projections


def put_queue(api: TestClient, name: str = "q", **settings: Any) -> None:
    response = api.put(f"/queue/{name}", json=settings)
    assert response.status_code in (201, 204), response.text


def create_job(api: TestClient, queue: str = "q", **body: Any) -> int:
    response = api.post(f"/queue/{queue}/job", json=body)
    assert response.status_code == 201, response.text
    job_id = response.json()
    assert isinstance(job_id, int)
    return job_id


def fetch(api: TestClient, queue: str = "q") -> dict[str, Any]:
    response = api.get(f"/queue/{queue}/job")
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()
    return job


def job_field(api: TestClient, job_id: int, field: str) -> Any:
    response = api.get(f"/job/{job_id}?fields={field}")
    assert response.status_code == 200, response.text
    return response.json()[field]


def tick_at(ledger: Ledger | Partitioned, later: timedelta) -> dict[str, list[int]]:
    """One scheduler tick on the sync runner, with the clock moved ``later`` than now."""
    with freeze_time(datetime.now(UTC) + later):
        return tick(ledger)

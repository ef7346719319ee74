"""Retention as ``serve`` runs it: with ``[ledger] archive_after`` set, the app's scheduler archives
old events into the blob store (and trims them from the stream), and ``GET /job/{id}/history`` still
shows every event of the job, those in the archive included, on any server that shares the store.
Real time, kept short: events older than 50 ms are archived every 100 ms."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import redis
from starlette.testclient import TestClient

from jobledger.blobs.archive import BlobArchive
from jobledger.blobs.local import LocalBlobStore
from jobledger.ledger.keys import Keys
from jobledger.projections.archive import load_record
from jobledger.runtime.config import Config, config_from
from jobledger.server.app import create_app
from tests.server.test_api_unavailable import wait_until
from tests.support.http import BASE_URL

STATUSES = ["job_created", "job_started", "job_completed"]


def config_of(namespace: str, data_dir: Path, blobs: Path) -> Config:
    """A server's config: its own data directory, the shared blob store, a short retention."""
    return config_from({
        "redis": {"key_namespace": namespace},
        "embedded": {"data_dir": str(data_dir)},
        "blobs": {"url": str(blobs)},
        "ledger": {"archive_after": "0.05s", "archive_check_interval": "0.1s", "seal_interval": "0.05s"},
    })  # fmt: skip


def run_job(api: TestClient, queue: str) -> int:
    """A job created, fetched and completed through ``api``; its id."""
    job_id: int = api.post(f"/queue/{queue}/job", json={"input": 1}).json()
    assert api.get(f"/queue/{queue}/job").json()["id"] == job_id
    assert api.patch(f"/job/{job_id}", json={"status": "completed", "attempt": 1}).status_code == 204
    return job_id


def all_archived(client: redis.Redis, namespace: str) -> bool:
    return load_record(client, Keys(namespace)) is not None and client.xlen(Keys(namespace).events) == 0


def test_serve_archives_and_a_history_keeps_every_event(
    redis_url: str, namespace: str, client: redis.Redis, tmp_path: Path
) -> None:
    config = config_of(namespace, tmp_path / "data", tmp_path / "blobs")
    with TestClient(create_app(config, redis_url), base_url=BASE_URL, raise_server_exceptions=False) as api:
        assert api.put("/queue/q").status_code == 201
        job_id = run_job(api, "q")
        wait_until(lambda: all_archived(client, namespace), "the job's events to be archived and trimmed")
        history = api.get(f"/job/{job_id}/history")
    assert history.status_code == 200, history.text
    events = history.json()
    assert [e["type"] for e in events] == STATUSES
    rec = load_record(client, Keys(namespace))
    assert rec is not None and all(rec.holds(e["id"]) for e in events)
    store = BlobArchive.over(LocalBlobStore(tmp_path / "blobs" / namespace), tmp_path / "data", namespace)
    assert rec.location == store.location_for(namespace)
    assert [s.last for s in store.manifest(rec.location)][-1] == rec.last_id
    assert not (tmp_path / "data" / "archive-cache").exists()  # a local store is read in place


@contextmanager
def servers(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[list[TestClient]]:
    """Two servers of one ledger, one Valkey and one blob store, each with its own data directory."""
    with ExitStack() as stack:
        yield [
            stack.enter_context(
                TestClient(
                    create_app(config_of(namespace, tmp_path / name, tmp_path / "shared-blobs"), redis_url),
                    base_url=BASE_URL,
                    raise_server_exceptions=False,
                )
            )
            for name in ("a", "b")
        ]


def test_two_servers_each_read_the_history_the_other_archived(
    redis_url: str, namespace: str, client: redis.Redis, tmp_path: Path
) -> None:
    with servers(redis_url, namespace, tmp_path) as (a, b):
        assert a.put("/queue/q").status_code == 201
        jobs = [run_job(a, "q"), run_job(b, "q"), run_job(a, "q")]
        wait_until(lambda: all_archived(client, namespace), "every event to be archived and trimmed")
        for api in (a, b):
            for job_id in jobs:
                history = api.get(f"/job/{job_id}/history")
                assert history.status_code == 200, history.text
                assert [e["type"] for e in history.json()] == STATUSES
        listed = [api.get("/events", params={"limit": 1000}).json()["events"] for api in (a, b)]
        assert listed[0] == listed[1] and len(listed[0]) == 1 + 3 * len(jobs)
    rec = load_record(client, Keys(namespace))
    shared = BlobArchive.over(LocalBlobStore(tmp_path / "shared-blobs" / namespace), tmp_path, namespace)
    assert rec is not None and rec.location == shared.location_for(namespace)
    assert sum(s.count for s in shared.manifest(rec.location)) >= rec.count

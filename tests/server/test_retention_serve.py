"""Retention as ``serve`` runs it: with ``[ledger] archive_after`` set, the app's scheduler archives
old events (and trims them from the stream), and ``GET /job/{id}/history`` still shows every event of
the job, those in the archive included.  Real time, kept short: events older than 50 ms are archived
every 100 ms."""

from __future__ import annotations

from pathlib import Path

import redis
from starlette.testclient import TestClient

from jobledger.ledger.keys import Keys
from jobledger.projections.archive import load_record
from jobledger.runtime.config import config_from
from jobledger.server.app import create_app
from tests.server.test_api_unavailable import wait_until
from tests.support.http import BASE_URL


def test_serve_archives_and_a_history_keeps_every_event(
    redis_url: str, namespace: str, client: redis.Redis, tmp_path: Path
) -> None:
    config = config_from({
        "redis": {"key_namespace": namespace},
        "ledger": {"archive_after": "0.05s", "archive_dir": str(tmp_path), "archive_check_interval": "0.1s"},
    })  # fmt: skip
    stream = Keys(namespace).events
    with TestClient(create_app(config, redis_url), base_url=BASE_URL, raise_server_exceptions=False) as api:
        assert api.put("/queue/q").status_code == 201
        job_id = api.post("/queue/q/job", json={"input": 1}).json()
        assert api.get("/queue/q/job").json()["id"] == job_id
        assert api.patch(f"/job/{job_id}", json={"status": "completed", "attempt": 1}).status_code == 204

        def archived() -> bool:
            rec = load_record(client, Keys(namespace))
            return rec is not None and client.xlen(stream) == 0

        wait_until(archived, "the job's events to be archived and trimmed from the stream")
        history = api.get(f"/job/{job_id}/history")
    assert history.status_code == 200, history.text
    events = history.json()
    assert [e["type"] for e in events] == ["job_created", "job_started", "job_completed"]
    rec = load_record(client, Keys(namespace))
    assert rec is not None and all(rec.holds(e["id"]) for e in events)
    assert (tmp_path / namespace / "manifest.jsonl").exists()

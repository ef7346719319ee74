"""The job-orchestrator's routes, spoken to exactly as its users' clients do (curl's
``-F file=@run.sh -F user_id=1 -F service=example``, then polling ``GET /download/{id}``)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.ledger import commands
from jobledger.ledger.requests import JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest
from tests.support.blobs import add_result
from tests.support.http import app_client, put_queue, unchanged
from tests.support.live_server import live_server


@pytest.fixture
def api(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=store) as client:
        put_queue(client, "example")
        put_queue(client, "tiny", max_file_size=4)
        yield client


def form(service: str = "example", user_id: str = "1") -> dict[str, str]:
    return {"user_id": user_id, "service": service}


def test_upload_then_download_as_its_client_does(
    api: TestClient, ledger: Ledger, store: LocalBlobStore
) -> None:
    files = [("file", ("run.sh", b"#!/bin/bash\necho hi > output.txt\n")), ("file", ("input.txt", b"data"))]
    answer = api.post("/upload", files=files, data=form())
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["status"] == "Queued" and body["message"] == "Job successfully uploaded"
    job = body["id"]
    record = api.get(f"/job/{job}").json()
    assert record["quota_key"] == "1" and record["queue"] == "example"
    assert record["input"] == {"user_id": 1, "service": "example"}
    assert [f["name"] for f in record["files"]] == ["run.sh", "input.txt"]
    pending = api.get(f"/download/{job}")
    assert pending.status_code == 200 and pending.json()["status"] == "Queued"
    assert api.get("/queue/example/job").json()["id"] == job
    running = {"id": job, "status": "Submitted", "message": f"job {job} is running"}
    assert api.get(f"/download/{job}").json() == running
    add_result(ledger, store, job, "output.txt", b"hi\n")
    ledger.run(commands.update_job(job, JobUpdate(status="completed")))
    done = api.get(f"/download/{job}")
    assert done.status_code == 200 and done.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(done.content)) as archive:
        assert archive.read("output.txt") == b"hi\n"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"service": "example"}, "Missing user_id field"),
        ({"service": "example", "user_id": "abc"}, "Invalid user_id, should be a number"),
        ({"user_id": "1"}, "Missing service field"),
        ({"user_id": "1", "service": "unknownservice"}, "Invalid service"),
    ],
)
def test_upload_errors_in_its_shape(
    api: TestClient, client: redis.Redis, namespace: str, fields: dict[str, str], message: str
) -> None:
    with unchanged(client, namespace):
        answer = api.post("/upload", files=[("file", ("test.txt", b"file content"))], data=fields)
    assert answer.status_code == 400
    assert answer.json() == {"id": 0, "status": "Unknown", "message": message, "error": message}


def test_upload_limits_and_missing_job(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        answer = api.post("/upload", files=[("file", ("big.txt", b"12345"))], data=form("tiny"))
        assert answer.status_code == 413 and "max_file_size of 4" in answer.json()["message"]
    missing = api.get("/download/999999")
    assert missing.status_code == 404
    assert missing.json() == {
        "id": 0, "status": "Unknown", "message": "Job 999999 not found in the database",
        "error": "Job 999999 not found in the database",
    }  # fmt: skip


def test_form_scope(
    redis_url: str, namespace: str, ledger: Ledger, store: LocalBlobStore, client: redis.Redis
) -> None:
    ledger.run(create_token("example-producer", ["produce:example"], digest("s-ok")))
    ledger.run(create_token("elsewhere", ["produce:zz"], digest("s-no")))
    with app_client(redis_url, namespace, blobs=store, auth=True) as api:
        ledger.run(commands.put_queue("example", QueueSettings()))
        files = [("file", ("run.sh", b"x"))]
        with unchanged(client, namespace):
            assert api.post("/upload", files=files, data=form()).status_code == 401
            refused = api.post("/upload", files=files, data=form(), headers={"authorization": "Bearer s-no"})
            assert refused.status_code == 403 and "elsewhere" in refused.json()["error"]
        ok = api.post("/upload", files=files, data=form(), headers={"authorization": "Bearer s-ok"})
        assert ok.status_code == 201, ok.text


def test_curl_against_a_live_server(
    redis_url: str, namespace: str, store: LocalBlobStore, tmp_path: Path
) -> None:
    """The orchestrator's documented commands, run by curl itself."""
    curl = shutil.which("curl")
    if not curl:
        pytest.skip("curl is not installed")
    (tmp_path / "run.sh").write_text("#!/bin/bash\necho done > output.txt\n")
    with live_server(redis_url, namespace, blobs=store) as url:
        httpx2.put(f"{url}/queue/example", json={}).raise_for_status()
        out = subprocess.run(
            [curl, "-s", "-X", "POST", f"{url}/upload", "-F", f"file=@{tmp_path / 'run.sh'}",
             "-F", "user_id=1", "-F", "service=example"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        body = json.loads(out.stdout)
        assert body["status"] == "Queued"
        files = httpx2.get(f"{url}/job/{body['id']}").json()["files"]
        assert [(f["name"], f["size"]) for f in files] == [("run.sh", 35)]
        poll = [curl, "-s", f"{url}/download/{body['id']}"]
        state = subprocess.run(poll, capture_output=True, text=True, check=True)
        assert json.loads(state.stdout)["status"] == "Queued"

"""The worker's side of files over HTTP: a job's input files downloaded with their digests, results
stored for the running attempt only, within the queue's limit and the digest the worker names."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.ledger.runner import Ledger
from tests.support.files import blob_path, create_with_files
from tests.support.http import app_client, error_of, fetch, job_field, put_queue, unchanged

RUN = b"#!/bin/sh\necho hi > out.txt\n"
DATA = b"a,b\n1,2\n"


@pytest.fixture
def blobs(tmp_path: Path) -> Path:
    return tmp_path / "blobs"


@pytest.fixture
def api(redis_url: str, namespace: str, blobs: Path) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=LocalBlobStore(blobs)) as client:
        put_queue(client, "q")
        yield client


def running_job(api: TestClient, ledger: Ledger, blobs: Path) -> tuple[int, int]:
    """A job with run.sh and data.csv, fetched: its id and attempt."""
    job_id, refs = create_with_files(ledger, blobs, "q", {"run.sh": RUN, "data.csv": DATA})
    fetched = fetch(api)
    assert fetched["id"] == job_id
    assert fetched["files"] == [ref.model_dump() for ref in refs]  # the fetch names the job's files
    return job_id, fetched["attempt"]


def digest_header(content: bytes) -> str:
    return f"sha-256=:{base64.b64encode(hashlib.sha256(content).digest()).decode()}:"


def test_a_file_downloads_with_its_digests(api: TestClient, ledger: Ledger, blobs: Path) -> None:
    job_id, _ = create_with_files(ledger, blobs, "q", {"data.csv": DATA})
    response = api.get(f"/job/{job_id}/files/data.csv")
    assert response.status_code == 200, response.text
    assert response.content == DATA
    assert response.headers["etag"] == f'"{hashlib.sha256(DATA).hexdigest()}"'
    assert response.headers["repr-digest"] == digest_header(DATA)
    assert response.headers["content-length"] == str(len(DATA))
    assert response.headers["content-type"].startswith("application/octet-stream")


def test_an_unknown_job_file_or_lost_blob_is_404(api: TestClient, ledger: Ledger, blobs: Path) -> None:
    job_id, refs = create_with_files(ledger, blobs, "q", {"data.csv": DATA})
    assert "no file 'other'" in error_of(api.get(f"/job/{job_id}/files/other"), 404)
    assert "does not exist" in error_of(api.get("/job/999/files/data.csv"), 404)
    blob_path(blobs, refs[0].sha256).unlink()
    assert "no longer holds its blob" in error_of(api.get(f"/job/{job_id}/files/data.csv"), 404)


def test_the_running_attempt_stores_a_result(api: TestClient, ledger: Ledger, blobs: Path) -> None:
    job_id, attempt = running_job(api, ledger, blobs)
    body = b"hi\n" * 1000
    headers = {"content-type": "text/plain", "repr-digest": digest_header(body)}
    response = api.put(f"/job/{job_id}/results/out.txt?attempt={attempt}", content=body, headers=headers)
    assert response.status_code == 200, response.text
    sha256 = hashlib.sha256(body).hexdigest()
    expected = {"name": "out.txt", "sha256": sha256, "size": len(body), "media_type": "text/plain"}
    assert response.json() == {**expected, "attempt": attempt}
    assert blob_path(blobs, sha256).read_bytes() == body
    (result,) = job_field(api, job_id, "results")
    assert {k: result[k] for k in expected} == expected and result["attempt"] == attempt


def test_a_result_without_content_type_is_octets(api: TestClient, ledger: Ledger, blobs: Path) -> None:
    job_id, attempt = running_job(api, ledger, blobs)
    response = api.put(f"/job/{job_id}/results/raw?attempt={attempt}", content=b"\x00\x01")
    assert response.json()["media_type"] == "application/octet-stream"


def test_a_stale_attempt_or_an_ended_job_is_refused(
    api: TestClient, ledger: Ledger, blobs: Path, client: redis.Redis, namespace: str
) -> None:
    job_id, attempt = running_job(api, ledger, blobs)
    assert api.patch(f"/job/{job_id}", json={"status": "queued", "attempt": attempt}).status_code == 204
    again = fetch(api)["attempt"]
    assert again == attempt + 1
    with unchanged(client, namespace):
        stale = api.put(f"/job/{job_id}/results/out.txt?attempt={attempt}", content=b"late")
        assert f"attempt {attempt}" in error_of(stale, 409)
    assert api.patch(f"/job/{job_id}", json={"status": "completed", "attempt": again}).status_code == 204
    with unchanged(client, namespace):
        ended = api.put(f"/job/{job_id}/results/out.txt", content=b"late")
        assert "completed, not running" in error_of(ended, 409)
    assert not list((blobs / "sha256").rglob("*" + hashlib.sha256(b"late").hexdigest()))


def test_a_result_over_the_queues_limit_is_413(
    api: TestClient, ledger: Ledger, blobs: Path, client: redis.Redis, namespace: str
) -> None:
    put_queue(api, "q", max_file_size=10)
    job_id, attempt = running_job(api, ledger, blobs)
    before = set((blobs / "sha256").rglob("*"))
    with unchanged(client, namespace):
        assert "max_file_size" in error_of(api.put(f"/job/{job_id}/results/big", content=b"x" * 11), 413)

        def chunks() -> Iterator[bytes]:  # no Content-Length: refused as the bytes pass the limit
            yield b"x" * 6
            yield b"x" * 6

        assert "limit of 10" in error_of(api.put(f"/job/{job_id}/results/big", content=chunks()), 413)
    assert set((blobs / "sha256").rglob("*")) == before
    assert not any((blobs / "staging").iterdir())
    ok = api.put(f"/job/{job_id}/results/small?attempt={attempt}", content=b"x" * 10)
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"repr-digest": digest_header(b"other bytes")}, "hash to sha256"),
        ({"content-digest": digest_header(b"other bytes")}, "hash to sha256"),
        ({"repr-digest": "sha-256=:not base64:"}, "repr-digest"),
        ({"content-type": "not a media type"}, "content-type"),
    ],
)
def test_a_body_that_is_not_what_it_says_is_400(
    api: TestClient, ledger: Ledger, blobs: Path, client: redis.Redis, namespace: str,
    headers: dict[str, str], says: str,
) -> None:  # fmt: skip
    job_id, attempt = running_job(api, ledger, blobs)
    with unchanged(client, namespace):
        response = api.put(f"/job/{job_id}/results/out.txt?attempt={attempt}", content=b"hi", headers=headers)
        assert says in error_of(response, 400)
    assert not (blobs / "sha256" / hashlib.sha256(b"hi").hexdigest()[:2]).exists()

"""Results going out: the manifest, one result, and the streamed zip, each checked against the
ledger's SHA-256; scopes with auth on."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Iterator

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.contract.files import sha256_of_digest as parse_digest
from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest
from jobledger.replay.verify import verify
from tests.support.blobs import add_result
from tests.support.http import RFC3339, app_client, create_job, error_of, fetch, put_queue


@pytest.fixture
def api(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=store) as client:
        put_queue(client, "q")
        yield client


@pytest.fixture
def running(api: TestClient) -> int:
    job = create_job(api, "q")
    assert fetch(api, "q")["id"] == job
    return job


def test_manifest_and_one_result(
    api: TestClient, ledger: Ledger, store: LocalBlobStore, running: int
) -> None:
    empty = api.get(f"/job/{running}/results").json()
    assert empty == {"id": running, "status": "running", "results": []}
    add_result(ledger, store, running, "out.txt", b"first", actor="w1")
    ref = add_result(ledger, store, running, "out.txt", b"second", actor="w2")  # replaces the first
    add_result(ledger, store, running, "log é.txt", b"log")
    manifest = api.get(f"/job/{running}/results").json()
    assert [r["name"] for r in manifest["results"]] == ["out.txt", "log é.txt"]
    out = manifest["results"][0]
    assert {k: out[k] for k in ("sha256", "size", "media_type", "attempt", "actor")} == {
        "sha256": ref.sha256, "size": 6, "media_type": "text/plain", "attempt": 1, "actor": "w2"
    }  # fmt: skip
    assert RFC3339.match(out["at"]) and out["url"] == f"/job/{running}/results/out.txt"
    got = api.get(manifest["results"][1]["url"])
    assert got.status_code == 200 and got.content == b"log"
    assert parse_digest(got.headers["repr-digest"]) == hashlib.sha256(b"log").hexdigest()
    second = api.get(out["url"])
    assert second.content == b"second" and second.headers["etag"] == f'"{ref.sha256}"'
    assert api.get(out["url"], headers={"if-none-match": second.headers["etag"]}).status_code == 304
    assert "no result named" in error_of(api.get(f"/job/{running}/results/nope"), 404)
    assert "does not exist" in error_of(api.get("/job/999999/results"), 404)
    assert "does not exist" in error_of(api.get("/job/999999/results.zip"), 404)


def test_zip_streams_every_result(
    api: TestClient, ledger: Ledger, store: LocalBlobStore, running: int
) -> None:
    big = bytes(range(256)) * 20_000  # 5 MB: several store chunks
    add_result(ledger, store, running, "big.bin", big)
    add_result(ledger, store, running, "small.txt", b"small")
    answer = api.get(f"/job/{running}/results.zip")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/zip"
    assert f"job-{running}-results.zip" in answer.headers["content-disposition"]
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        assert archive.namelist() == ["big.bin", "small.txt"]
        assert archive.read("big.bin") == big and archive.read("small.txt") == b"small"
    assert api.get(f"/job/{running}/results.zip").content == answer.content  # the same zip every time
    job = create_job(api, "q")
    with zipfile.ZipFile(io.BytesIO(api.get(f"/job/{job}/results.zip").content)) as archive:
        assert archive.namelist() == []


def test_corrupt_blob_cuts_the_zip_off(
    api: TestClient, ledger: Ledger, store: LocalBlobStore, running: int
) -> None:
    ref = add_result(ledger, store, running, "r.txt", b"right bytes")
    path = store.path(ref.sha256)
    path.chmod(0o644)
    path.write_bytes(b"wrong bytes")
    with pytest.raises(Exception):  # noqa: B017 - the cut connection is the point
        body = api.get(f"/job/{running}/results.zip").content
        zipfile.ZipFile(io.BytesIO(body)).read("r.txt")
    store.path(ref.sha256).unlink()
    assert ref.sha256 in error_of(api.get(f"/job/{running}/results.zip"), 404)
    assert ref.sha256 in error_of(api.get(f"/job/{running}/results/r.txt"), 404)


def test_scopes(redis_url: str, namespace: str, ledger: Ledger, store: LocalBlobStore) -> None:
    tokens = {"prod": ["produce:q"], "other": ["produce:zz"], "reader": ["read"], "worker": ["work:q"]}
    for name, scopes in tokens.items():
        ledger.run(create_token(name, scopes, digest(f"secret-{name}")))
    ledger.run(commands.put_queue("q", QueueSettings()))
    job = ledger.run(commands.create_job("q", JobOptions())).id
    for path in (f"/job/{job}/results", f"/job/{job}/results.zip"):
        with app_client(redis_url, namespace, blobs=store, auth=True) as api:
            assert api.get(path).status_code == 401
            error_of(api.get(path, headers={"authorization": "Bearer secret-other"}), 403)
            for name in ("prod", "reader", "worker"):
                assert api.get(path, headers={"authorization": f"Bearer secret-{name}"}).status_code == 200


def test_replay_verify_passes_after_files_in_and_out(
    api: TestClient, ledger: Ledger, store: LocalBlobStore, client: redis.Redis, namespace: str
) -> None:
    made = api.post("/queue/q/job", files=[("in.txt", ("in.txt", b"in")), ("job", (None, '{"input": 1}'))])
    assert made.status_code == 201, made.text
    stored = api.put("/blob", content=b"named").json()
    api.post("/queue/q/job", json={"files": [{"name": "n", "sha256": stored["sha256"]}]}).raise_for_status()
    assert fetch(api, "q")["id"] == made.json()
    add_result(ledger, store, made.json(), "out.txt", b"out")
    result = verify(client, namespace)
    assert result.ok, result.differences
    assert result.keys > 0

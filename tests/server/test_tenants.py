"""Tenants kept apart with auth on: a blob is named by SHA-256 only by a token that may read a queue
holding it (or admin), and a refusal reads as a blob that is not stored; ``PUT /blob`` answers the
same for bytes new and bytes held; ``POST /upload`` stores nothing before its scope is checked; an
Idempotency-Key is its sender's."""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import Blob, LocalBlobStore
from jobledger.blobs.holders import holders
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest
from tests.support.http import app_client, error_of, unchanged

TOKENS: dict[str, list[str]] = {
    "admin": ["admin"],
    "a": ["produce:qa"],  # tenant A
    "b": ["produce:qb"],  # tenant B
    "a-and-qb-worker": ["produce:qa", "work:qb"],  # may read qb
    "a-and-reader": ["produce:qa", "read"],  # may read every queue
}
SECRET = b"tenant B's secret file\n"
NEVER_STORED = hashlib.sha256(b"no one stored this").hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def auth(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer secret-{name}"}


def listed(store: LocalBlobStore) -> set[str]:
    async def collect() -> list[Blob]:
        return [b async for b in store.list()]

    return {b.sha256 for b in asyncio.run(collect())}


@pytest.fixture
def api(redis_url: str, namespace: str, ledger: Ledger, store: LocalBlobStore) -> Iterator[TestClient]:
    for name, scopes in TOKENS.items():
        ledger.run(create_token(name, scopes, digest(f"secret-{name}")))
    with app_client(redis_url, namespace, blobs=store, auth=True) as client:
        for queue in ("qa", "qb"):
            client.put(f"/queue/{queue}", json={}, headers=auth("admin")).raise_for_status()
        yield client


def naming(api: TestClient, token: str, sha256: str, queue: str = "qa") -> Any:
    body = {"input": 1, "files": [{"name": "f.txt", "sha256": sha256}]}
    return api.post(f"/queue/{queue}/job", json=body, headers=auth(token))


def refusal(answer: Any, sha256: str) -> str:
    """The 400 of a blob that may not be named, with its SHA-256 taken out (to compare wordings)."""
    return error_of(answer, 400).replace(sha256, "<sha>")


def b_stores_a_job_file(api: TestClient) -> int:
    made = api.post("/queue/qb/job", files=[("f", ("secret.txt", SECRET))], headers=auth("b"))
    assert made.status_code == 201, made.text
    return int(made.json())


def test_a_token_names_only_blobs_of_queues_it_may_read(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    b_stores_a_job_file(api)
    uploaded = b"tenant B's upload, named by no job yet"
    assert api.put("/blob?queue=qb", content=uploaded, headers=auth("b")).status_code == 201
    with unchanged(client, namespace):
        for foreign in (sha(SECRET), sha(uploaded)):
            assert refusal(naming(api, "a", foreign), foreign) == refusal(
                naming(api, "a", NEVER_STORED), NEVER_STORED
            )  # the same answer as for bytes no one stored: no oracle
            multipart = api.post(
                "/queue/qa/job",
                files=[("job", (None, f'{{"files": [{{"name": "f", "sha256": "{foreign}"}}]}}'))],
                headers=auth("a"),
            )
            assert foreign in error_of(multipart, 400)
    for token in ("a-and-qb-worker", "a-and-reader", "admin"):
        for named in (sha(SECRET), sha(uploaded)):
            made = naming(api, token, named)
            assert made.status_code == 201, (token, made.text)
    # the admin's job put the secret in qa, so qa's producers may now name it (and download it anyway)
    assert naming(api, "a", sha(SECRET)).status_code == 201


def test_a_queue_lets_go_of_a_blob_when_its_last_job_is_gone(api: TestClient, ledger: Ledger) -> None:
    job = b_stores_a_job_file(api)
    assert ledger.read(holders(sha(SECRET))) == {"qb"}
    assert naming(api, "a-and-qb-worker", sha(SECRET)).status_code == 201  # now qa holds it too
    assert ledger.read(holders(sha(SECRET))) == {"qa", "qb"}
    assert api.delete(f"/job/{job}", headers=auth("admin")).status_code == 204
    assert ledger.read(holders(sha(SECRET))) == {"qa"}
    fetched = api.get("/queue/qa/job", headers=auth("admin")).json()
    result = api.put(f"/job/{fetched['id']}/results/out.txt?attempt=1", content=b"a result",
                     headers=auth("admin"))  # fmt: skip
    assert result.status_code == 200, result.text
    assert ledger.read(holders(sha(b"a result"))) == {"qa"}
    assert refusal(naming(api, "b", sha(SECRET), "qb"), sha(SECRET))


def test_put_blob_answers_alike_for_bytes_held_and_bytes_new(api: TestClient) -> None:
    b_stores_a_job_file(api)
    held = api.put("/blob?queue=qa", content=SECRET, headers=auth("a"))
    new = api.put("/blob?queue=qa", content=b"bytes no one had", headers=auth("a"))
    assert held.status_code == new.status_code == 201
    assert set(held.headers) == set(new.headers)
    assert held.json() == {"sha256": sha(SECRET), "size": len(SECRET)}
    # storing the bytes yourself is knowing them: now tenant A may name them for its own queue
    assert naming(api, "a", sha(SECRET)).status_code == 201


def upload_files_first(api: TestClient, token: str, service: str, data: bytes) -> Any:
    """A ``POST /upload`` whose file parts come before its fields, as the orchestrator's clients send."""
    parts = [("file", ("run.sh", data)), ("user_id", (None, b"7")), ("service", (None, service.encode()))]
    return api.post("/upload", files=parts, headers=auth(token))


def test_an_upload_out_of_scope_stores_nothing(
    api: TestClient, client: redis.Redis, namespace: str, store: LocalBlobStore,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    spools = tmp_path / "spools"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    big = b"x" * (3 * 1024 * 1024)
    with unchanged(client, namespace):
        assert upload_files_first(api, "a", "qb", big).status_code == 403
        fields_first = [("user_id", (None, b"7")), ("service", (None, b"qb")), ("file", ("f", big))]
        assert api.post("/upload", files=fields_first, headers=auth("a")).status_code == 403
    assert listed(store) == set()
    assert list(spools.iterdir()) == []  # the spool went with the request
    made = upload_files_first(api, "b", "qb", big)
    assert made.status_code == 201, made.text
    assert listed(store) == {sha(big)}
    files = api.get(f"/job/{made.json()['id']}?fields=files", headers=auth("b")).json()["files"]
    assert [(f["name"], f["sha256"]) for f in files] == [("run.sh", sha(big))]
    assert list(spools.iterdir()) == []


def test_an_upload_names_its_service_once(api: TestClient, store: LocalBlobStore) -> None:
    parts = [("service", (None, b"qb")), ("file", ("f", b"x")), ("service", (None, b"qa")),
             ("user_id", (None, b"1"))]  # fmt: skip
    assert "service twice" in api.post("/upload", files=parts, headers=auth("admin")).json()["error"]


def test_an_idempotency_key_is_its_senders(redis_url: str, namespace: str, ledger: Ledger) -> None:
    for name in ("one", "two"):
        ledger.run(create_token(name, ["produce:q"], digest(f"secret-{name}")))
    with app_client(redis_url, namespace, auth=True) as api:
        ledger.run(create_token("boss", ["admin"], digest("secret-boss")))
        api.put("/queue/q", json={}, headers=auth("boss")).raise_for_status()

        def send(token: str, body: dict[str, Any]) -> Any:
            return api.post("/queue/q/job", json=body, headers={**auth(token), "idempotency-key": "order-1"})

        first = send("one", {"input": 1})
        same_body = send("two", {"input": 1})
        other_body = send("two", {"input": 2})
        assert first.status_code == 201 and same_body.status_code == 201, (first.text, same_body.text)
        assert same_body.json() != first.json()  # its own job, not one's
        assert "idempotent-replayed" not in same_body.headers
        assert other_body.status_code == 422  # two's own key, sent again with another body
        again = send("one", {"input": 1})
        assert (again.json(), again.headers["idempotent-replayed"]) == (first.json(), "true")
        history = api.get(f"/job/{first.json()}/history", headers=auth("boss")).json()[0]["data"]
        assert (history["idempotency_key"], history["idempotency_owner"]) == ("order-1", "one")

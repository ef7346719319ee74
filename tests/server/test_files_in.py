"""Files going in: ``PUT /blob``, the multipart create, and JSON bodies naming stored blobs; the
limits (413, nothing stored), digest mismatches, bad names, cut-off bodies, scopes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import Blob, LocalBlobStore
from jobledger.contract.files import repr_digest
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest
from tests.support.http import app_client, error_of, job_field, put_queue, unchanged
from tests.support.live_server import eventually, live_server


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def listed(store: LocalBlobStore) -> dict[str, int]:
    async def collect() -> list[Blob]:
        return [b async for b in store.list()]

    return {b.sha256: b.size for b in asyncio.run(collect())}


def staging(store: LocalBlobStore) -> list[Path]:
    return list((store.root / "staging").glob("*")) if (store.root / "staging").is_dir() else []


@pytest.fixture
def api(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=store) as client:
        put_queue(client, "q")
        put_queue(client, "small", max_file_size=10, max_job_bytes=15)
        yield client


def test_put_blob_stores_once(api: TestClient, store: LocalBlobStore) -> None:
    data = b"some bytes\n" * 100
    first = api.put("/blob?queue=q", content=data)
    assert first.status_code == 201, first.text
    assert first.json() == {"sha256": sha(data), "size": len(data)}
    again = api.put("/blob", content=data)
    assert again.status_code == 201 and again.json() == first.json()  # held already: the same answer
    assert listed(store) == {sha(data): len(data)}
    assert staging(store) == []


@pytest.mark.parametrize("how", ["query", "repr-digest", "content-digest"])
def test_put_blob_digest_mismatch_keeps_nothing(api: TestClient, store: LocalBlobStore, how: str) -> None:
    wrong = sha(b"other")
    query = f"?sha256={wrong}" if how == "query" else ""
    headers = {how: repr_digest(wrong)} if how != "query" else {}
    answer = api.put(f"/blob{query}", content=b"these", headers=headers)
    assert wrong in error_of(answer, 400)
    assert listed(store) == {} and staging(store) == []
    right = api.put(
        f"/blob?sha256={sha(b'these')}", content=b"these", headers={"repr-digest": repr_digest(sha(b"these"))}
    )
    assert right.status_code == 201


def test_put_blob_limits_and_queue(api: TestClient, store: LocalBlobStore) -> None:
    over = api.put("/blob?queue=small", content=b"x" * 11)
    assert "max_file_size of 10" in error_of(over, 413)
    chunked = api.put("/blob?queue=small", content=iter([b"x" * 6, b"y" * 6]))  # no Content-Length
    assert "max_file_size" in error_of(chunked, 413)
    assert "does not exist" in error_of(api.put("/blob?queue=nope", content=b"x"), 404)
    assert error_of(api.put("/blob?queue=a%20b", content=b"x"), 400)
    assert error_of(api.put("/blob?sha256=xyz", content=b"x"), 400)
    assert listed(store) == {} and staging(store) == []


def test_multipart_create(
    api: TestClient, store: LocalBlobStore, client: redis.Redis, namespace: str
) -> None:
    stored = api.put("/blob", content=b"named before").json()
    job = {"input": {"n": 1}, "tags": ["t"], "files": [{"name": "before.txt", "sha256": stored["sha256"]}]}
    files: list[Any] = [
        ("job", (None, json.dumps(job))),
        ("run.sh", ("run.sh", b"echo hi\n", "text/x-shellscript")),
        ("data", ("data.bin", b"\x00\x01" * 1000)),
        ("plain.txt", (None, b"no filename: the field's name")),
    ]
    answer = api.post("/queue/q/job", files=files)
    assert answer.status_code == 201, answer.text
    refs = job_field(api, answer.json(), "files")
    assert [r["name"] for r in refs] == ["before.txt", "run.sh", "data.bin", "plain.txt"]
    by_name = {r["name"]: r for r in refs}
    assert by_name["run.sh"] == {
        "name": "run.sh",
        "sha256": sha(b"echo hi\n"),
        "size": 8,
        "media_type": "text/x-shellscript",
    }
    assert by_name["data.bin"]["media_type"] == "application/octet-stream"
    assert by_name["before.txt"]["size"] == len(b"named before")
    assert job_field(api, answer.json(), "input") == {"n": 1}
    assert set(listed(store)) == {r["sha256"] for r in refs}


def test_multipart_without_job_part_and_idempotency(api: TestClient) -> None:
    files = [("a.txt", ("a.txt", b"A"))]
    first = api.post("/queue/q/job", files=files, headers={"idempotency-key": "k1"})
    assert first.status_code == 201, first.text
    again = api.post("/queue/q/job", files=files, headers={"idempotency-key": "k1"})
    assert again.status_code == 201 and again.json() == first.json()  # answered as the first time
    assert again.headers.get("idempotent-replayed") == "true"
    other = api.post("/queue/q/job", files=[("a.txt", ("a.txt", b"B"))], headers={"idempotency-key": "k1"})
    assert other.status_code == 422, other.text


def test_multipart_limits(
    api: TestClient, store: LocalBlobStore, client: redis.Redis, namespace: str
) -> None:
    with unchanged(client, namespace):
        over_file = api.post("/queue/small/job", files=[("big", ("big", b"x" * 11))])
        message = error_of(over_file, 413)
        assert "'big'" in message and "max_file_size of 10" in message
        assert listed(store) == {}
        over_job = api.post("/queue/small/job", files=[("a", ("a", b"a" * 10)), ("b", ("b", b"b" * 6))])
        message = error_of(over_job, 413)
        assert "'b'" in message and "max_job_bytes of 15" in message
        assert sha(b"b" * 6) not in listed(store)  # the file over the limit was never stored
        assert staging(store) == []
    stored = api.put("/blob", content=b"n" * 9).json()
    big = api.put("/blob", content=b"m" * 11).json()
    with unchanged(client, namespace):
        named = {"files": [{"name": "n", "sha256": stored["sha256"]}]}
        answer = api.post(
            "/queue/small/job", files=[("job", (None, json.dumps(named))), ("a", ("a", b"a" * 7))]
        )
        assert "max_job_bytes" in error_of(answer, 413)
        too_big = {"files": [{"name": "m", "sha256": big["sha256"]}]}
        assert "max_file_size" in error_of(api.post("/queue/small/job", json=too_big), 413)
        assert "max_file_size" in error_of(api.post("/queue/small/jobs", json=[named, too_big]), 413)


def test_json_bodies_naming_blobs(api: TestClient, client: redis.Redis, namespace: str) -> None:
    stored = api.put("/blob", content=b"content").json()
    answer = api.post(
        "/queue/q/job",
        json={"files": [{"name": "c.txt", "sha256": stored["sha256"], "media_type": "text/plain"}]},
    )
    assert answer.status_code == 201, answer.text
    assert job_field(api, answer.json(), "files") == [
        {"name": "c.txt", "sha256": stored["sha256"], "size": 7, "media_type": "text/plain"}
    ]
    batch = api.post(
        "/queue/q/jobs", json=[{"files": [{"name": "c", "sha256": stored["sha256"]}]}, {"input": 2}]
    )
    assert batch.status_code == 201, batch.text
    assert job_field(api, batch.json()[0], "files")[0]["size"] == 7
    missing = sha(b"never stored")
    with unchanged(client, namespace):
        assert missing in error_of(
            api.post("/queue/q/job", json={"files": [{"name": "m", "sha256": missing}]}), 400
        )
        assert missing in error_of(
            api.post("/queue/q/jobs", json=[{"files": [{"name": "m", "sha256": missing}]}]), 400
        )
        lie = {"files": [{"name": "c", "sha256": stored["sha256"], "size": 3}]}
        assert "not 3" in error_of(api.post("/queue/q/job", json=lie), 400)


@pytest.mark.parametrize(
    "files",
    [
        [("f", ("../x", b"1"))],
        [("f", ("a/b", b"1"))],
        [("f", ("..", b"1"))],
        [("f", ("same", b"1")), ("g", ("same", b"2"))],
        [("job", (None, "[1]"))],
        [("job", (None, "{not json")), ("f", ("f", b"1"))],
        [("job", (None, "{}")), ("job", (None, "{}"))],
        [("f", ("f", b"1", "not a type"))],
    ],
    ids=[
        "dotdot-path",
        "slash",
        "dotdot",
        "duplicate",
        "job-not-object",
        "job-not-json",
        "two-jobs",
        "bad-type",
    ],
)
def test_bad_multipart_is_400(api: TestClient, client: redis.Redis, namespace: str, files: list[Any]) -> None:
    with unchanged(client, namespace):
        error_of(api.post("/queue/q/job", files=files), 400)


def test_broken_multipart_bodies(
    api: TestClient, client: redis.Redis, namespace: str, store: LocalBlobStore
) -> None:
    boundary = "XyZ"
    headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
    part = f'--{boundary}\r\nContent-Disposition: form-data; name="f"; filename="f"\r\n\r\nhello\r\n'
    with unchanged(client, namespace):
        assert "cut off" in error_of(api.post("/queue/q/job", content=part.encode(), headers=headers), 400)
        assert "cut off" in error_of(
            api.post("/queue/q/job", content=part.encode()[:-10], headers=headers), 400
        )
        error_of(api.post("/queue/q/job", content=b"garbage", headers=headers), 400)
        no_name = f"--{boundary}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--{boundary}--\r\n"
        error_of(api.post("/queue/q/job", content=no_name.encode(), headers=headers), 400)
        many = "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nx\r\n' for i in range(1002)
        )
        assert "at most 1000" in error_of(
            api.post("/queue/q/job", content=(many + f"--{boundary}--\r\n").encode(), headers=headers), 400
        )
        assert "does not exist" in error_of(api.post("/queue/nope/job", files=[("f", ("f", b"1"))]), 404)
    assert staging(store) == []


def test_cut_off_upload_over_a_socket(
    redis_url: str, namespace: str, store: LocalBlobStore, client: redis.Redis
) -> None:
    """A client that hangs up half way through a multipart body and a PUT /blob: nothing appended,
    no staging left behind."""
    with live_server(redis_url, namespace, blobs=store) as url:
        httpx2.put(f"{url}/queue/q", json={}).raise_for_status()
        host, port = url.removeprefix("http://").split(":")
        for head in (
            b"POST /queue/q/job HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n"
            b'--B\r\nContent-Disposition: form-data; name="f"; filename="f"\r\n\r\n',
            b"PUT /blob HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n",
        ):
            with socket.create_connection((host, int(port))) as sock:
                sock.sendall(head + b"x" * 30000)
                eventually(lambda: staging(store))  # the upload is under way ...
            eventually(lambda: not staging(store))  # ... and its staging gone once the client left
        assert listed(store) == {}
        assert httpx2.get(f"{url}/queue/q/size").json() == 0


def test_scopes(
    redis_url: str, namespace: str, ledger: Ledger, store: LocalBlobStore, client: redis.Redis
) -> None:
    tokens = {"prod": ["produce:q*"], "other": ["produce:zz"], "reader": ["read"], "admin": ["admin"]}
    for name, scopes in tokens.items():
        ledger.run(create_token(name, scopes, digest(f"secret-{name}")))

    def auth(name: str) -> dict[str, str]:
        return {"authorization": f"Bearer secret-{name}"}

    with app_client(redis_url, namespace, blobs=store, auth=True) as api:
        api.put("/queue/q", json={}, headers=auth("admin")).raise_for_status()
        with unchanged(client, namespace):
            assert api.put("/blob?queue=q", content=b"x").status_code == 401
            for name in ("other", "reader"):
                error_of(api.put("/blob?queue=q", content=b"x", headers=auth(name)), 403)
                error_of(api.post("/queue/q/job", files=[("f", ("f", b"x"))], headers=auth(name)), 403)
            error_of(api.put("/blob", content=b"x", headers=auth("prod")), 403)  # no queue: admin only
            assert listed(store) == {}
        assert api.put("/blob?queue=q", content=b"x", headers=auth("prod")).status_code == 201
        assert api.put("/blob", content=b"y", headers=auth("admin")).status_code == 201
        made = api.post("/queue/q/job", files=[("f", ("f", b"x"))], headers=auth("prod"))
        assert made.status_code == 201, made.text


def test_part_names_are_utf8(api: TestClient, client: redis.Redis, namespace: str) -> None:
    made = api.post("/queue/q/job", files=[("f", ("résumé 📄.txt", b"cv"))])
    assert made.status_code == 201, made.text
    assert job_field(api, made.json(), "files")[0]["name"] == "résumé 📄.txt"
    body = b'--B\r\nContent-Disposition: form-data; name="f"; filename="\xff\xfe"\r\n\r\nx\r\n--B--\r\n'
    with unchanged(client, namespace):
        answer = api.post(
            "/queue/q/job", content=body, headers={"content-type": "multipart/form-data; boundary=B"}
        )
        assert "utf-8" in error_of(answer, 400)

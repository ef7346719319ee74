"""The streamed download of a blob: its headers, 304 on a matching ETag, and a cut-off download
when the store's bytes do not hash to the ref's SHA-256."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.contract.files import repr_digest
from jobledger.contract.files import sha256_of_digest as parse_digest
from jobledger.ledger.files import FileRef
from jobledger.server.blob_responses import blob_response
from jobledger.server.errors import HANDLERS


async def _chunks(data: bytes):  # type: ignore[no-untyped-def]
    yield data


def _app(store: LocalBlobStore, ref: FileRef) -> Starlette:
    async def endpoint(request: Request) -> Response:
        request.state.blobs = store
        return await blob_response(request, store, ref, "the file")

    return Starlette(routes=[Route("/f", endpoint, methods=["GET", "HEAD"])], exception_handlers=HANDLERS)  # type: ignore[arg-type]


def _stored(tmp_path: Path, data: bytes, name: str = 'résumé "x".txt') -> tuple[LocalBlobStore, FileRef]:
    store = LocalBlobStore(tmp_path)
    blob = asyncio.run(store.put(_chunks(data)))
    return store, FileRef(name=name, sha256=blob.sha256, size=blob.size, media_type="text/plain")


def test_headers_body_and_not_modified(tmp_path: Path) -> None:
    data = b"hello\n" * 1000
    store, ref = _stored(tmp_path, data)
    with TestClient(_app(store, ref)) as client:
        got = client.get("/f")
        assert got.status_code == 200 and got.content == data
        assert got.headers["etag"] == f'"{ref.sha256}"'
        assert parse_digest(got.headers["repr-digest"]) == hashlib.sha256(data).hexdigest()
        assert got.headers["content-length"] == str(len(data))
        assert got.headers["content-type"].startswith("text/plain")
        assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22x%22.txt" in got.headers["content-disposition"]
        again = client.get("/f", headers={"if-none-match": got.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        assert client.get("/f", headers={"if-none-match": '"other"'}).status_code == 200
        head = client.head("/f")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == str(len(data))


def test_missing_blob_is_404(tmp_path: Path) -> None:
    store, ref = _stored(tmp_path, b"x")
    asyncio.run(store.delete(ref.sha256))
    with TestClient(_app(store, ref), raise_server_exceptions=False) as client:
        got = client.get("/f")
        assert got.status_code == 404 and ref.sha256 in got.json()["error"]


def test_corrupt_blob_is_never_delivered_whole(tmp_path: Path) -> None:
    data = b"a" * (3 * 1024 * 1024)
    store, ref = _stored(tmp_path, data)
    path = store.path(ref.sha256)
    path.chmod(0o644)
    path.write_bytes(b"b" * len(data))
    with TestClient(_app(store, ref)) as client, pytest.raises(Exception):  # noqa: B017 - the cut is the point
        got = client.get("/f")
        assert got.content != b"b" * len(data)


def test_digest_header_parsing() -> None:
    sha = hashlib.sha256(b"x").hexdigest()
    assert parse_digest(repr_digest(sha)) == sha
    assert parse_digest(f"md5=:AAAA:, {repr_digest(sha)}") == sha
    assert parse_digest("md5=:AAAA:") is None
    for bad in ("sha-256=abc", "sha-256=:!!:", "sha-256=:AAAA:"):
        with pytest.raises(ValueError):
            parse_digest(bad)

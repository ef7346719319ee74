"""The client's files: put_blob, submit with files (multipart, streamed), the results manifest and
the downloads checked against their SHA-256, through Client and AsyncClient, on a live server."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobledger.blobs import LocalBlobStore
from jobledger.client import AsyncClient, BadRequest, Client, DigestMismatch, NotFound, Upload
from jobledger.ledger import commands
from jobledger.ledger.runner import Ledger
from tests.support.blobs import add_result
from tests.support.live_server import live_server


@pytest.fixture
def url(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[str]:
    with live_server(redis_url, namespace, blobs=store) as base, Client(base) as client:
        client.put_queue("q")
        client.put_queue("small", max_file_size=10)
        yield base


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def finish_with_results(ledger: Ledger, store: LocalBlobStore, job: int, results: dict[str, bytes]) -> None:
    """The job started and given ``results`` as a worker would."""
    ledger.run(commands.fetch_jobs("q", 1, None))
    for name, data in results.items():
        add_result(ledger, store, job, name, data)


def test_submit_with_files_and_put_blob(url: str, tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/bash\necho hi\n")
    with Client(url) as client:
        stored = client.put_blob(b"stored first", queue="q")
        assert stored == {"sha256": sha(b"stored first"), "size": 12}
        assert client.put_blob(io.BytesIO(b"stored first")) == stored  # again: the same blob
        with open(script, "rb") as f:
            job = client.submit(
                "q",
                {"n": 1},
                files=[script, Upload(b"a,b\n", "data.csv", "text/csv"), Upload(f, "copy.sh")],
                tags=["t"],
            )
        refs = {f["name"]: f for f in client.get_fields(job, "files")["files"]}
        assert refs["run.sh"]["sha256"] == sha(script.read_bytes())
        assert refs["data.csv"]["media_type"] == "text/csv"
        assert refs["copy.sh"]["size"] == script.stat().st_size
        named = client.submit("q", files={"x.bin": b"\x00" * 5})
        assert client.get_fields(named, "files")["files"][0]["name"] == "x.bin"
        both = client.submit("q", files=[{"name": "ref", "sha256": stored["sha256"]}, Upload(b"up", "up")])
        assert [f["name"] for f in client.get_fields(both, "files")["files"]] == ["ref", "up"]
        only_named = client.submit("q", files=[{"name": "ref", "sha256": stored["sha256"]}])
        assert client.get_fields(only_named, "files")["files"][0]["size"] == 12
        with pytest.raises(BadRequest, match="max_file_size"):
            client.submit("small", files={"big": b"x" * 11})
        with pytest.raises(BadRequest, match="max_file_size"):
            client.put_blob(b"x" * 11, queue="small")


def test_results_and_downloads(url: str, ledger: Ledger, store: LocalBlobStore, tmp_path: Path) -> None:
    big = bytes(range(256)) * 10_000
    with Client(url) as client:
        job = client.submit("q")
        finish_with_results(ledger, store, job, {"out.txt": b"hello", "big.bin": big})
        manifest = client.results(job)
        assert [r["name"] for r in manifest["results"]] == ["out.txt", "big.bin"]
        path = client.download_result(job, "big.bin", tmp_path / "big.bin")
        assert path.read_bytes() == big
        zipped = client.download_results_zip(job, tmp_path / "all.zip")
        with zipfile.ZipFile(zipped) as archive:
            assert archive.read("out.txt") == b"hello"
        with pytest.raises(NotFound):
            client.download_result(job, "nope", tmp_path / "nope")
        assert not (tmp_path / "nope").exists() and not (tmp_path / "nope.part").exists()
        ref = manifest["results"][0]
        blob = store.path(ref["sha256"])
        blob.chmod(0o644)
        blob.write_bytes(b"HELLO")  # the store's bytes no longer hash to the ledger's SHA-256
        with pytest.raises(Exception):  # noqa: B017 - cut off by the server, or refused here
            client.download_result(job, "out.txt", tmp_path / "out.txt")
        assert not (tmp_path / "out.txt").exists() and not (tmp_path / "out.txt.part").exists()


def test_async_client_parity(url: str, ledger: Ledger, store: LocalBlobStore, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_bytes(b"input bytes")

    async def scenario() -> None:
        async with AsyncClient(url) as client:
            assert (await client.put_blob(src))["sha256"] == sha(b"input bytes")
            job = await client.submit("q", files=[src])
            assert (await client.get_fields(job, "files"))["files"][0]["name"] == "in.txt"
            await asyncio.to_thread(finish_with_results, ledger, store, job, {"r.txt": b"result"})
            assert (await client.results(job))["results"][0]["name"] == "r.txt"
            out = await client.download_result(job, "r.txt", tmp_path / "r.txt")
            assert out.read_bytes() == b"result"
            zipped = await client.download_results_zip(job, tmp_path / "r.zip")
            with zipfile.ZipFile(zipped) as archive:
                assert archive.namelist() == ["r.txt"]

    asyncio.run(scenario())


def test_a_wrong_answer_to_an_upload_is_caught() -> None:
    upload = Upload(b"abc", "f")
    with contextlib.ExitStack() as files:
        b"".join(upload.chunks(upload.open(files)))
    assert upload.checked({"sha256": sha(b"abc"), "size": 3})["size"] == 3
    with pytest.raises(DigestMismatch):
        upload.checked({"sha256": sha(b"abd"), "size": 3})

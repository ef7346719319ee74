"""The client's side of files against a real server: input files downloaded and checked by their
SHA-256 (tried again when they arrive wrong), results uploaded from a path or an open file with
their digest, fenced by the attempt."""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import io
import threading
from pathlib import Path
from typing import ClassVar

import httpx2
import pytest

from jobledger.client import AsyncClient, Client, Conflict, NotFound, Retry, StoredResult, Unavailable
from jobledger.ledger.runner import Ledger
from tests.support.files import blob_path, create_with_files

FAST = Retry(attempts=3, base=0.01, cap=0.02)
DATA = b"a,b\n" + b"1,2\n" * 100_000  # several chunks


@pytest.fixture
def blobs(tmp_path: Path) -> Path:
    return tmp_path / "blobs"  # the server fixture's store


def running(server: str, ledger: Ledger, blobs: Path) -> tuple[int, int]:
    """A job with data.csv, fetched: its id and attempt."""
    with Client(server) as api:
        api.put_queue("q")
        job_id, _ = create_with_files(ledger, blobs, "q", {"data.csv": DATA})
        (fetched,) = api.fetch("q")
    assert fetched.id == job_id
    assert [f.name for f in fetched.files] == ["data.csv"]
    assert fetched.files[0].sha256 == hashlib.sha256(DATA).hexdigest()
    return job_id, fetched.attempt


def test_a_file_downloads_checked(server: str, ledger: Ledger, blobs: Path, tmp_path: Path) -> None:
    job_id, _ = running(server, ledger, blobs)
    dest = tmp_path / "work" / "data.csv"
    with Client(server) as api:
        received = api.download_file(job_id, "data.csv", dest)
    assert dest.read_bytes() == DATA
    assert (received.sha256, received.size) == (hashlib.sha256(DATA).hexdigest(), len(DATA))
    assert list(dest.parent.iterdir()) == [dest]
    again = tmp_path / "async.csv"
    asyncio.run(_download_async(server, job_id, again))
    assert again.read_bytes() == DATA


async def _download_async(server: str, job_id: int, dest: Path) -> None:
    async with AsyncClient(server) as api:
        await api.download_file(job_id, "data.csv", dest)


def test_a_file_the_server_cannot_send_whole_is_tried_again_then_refused(
    server: str, ledger: Ledger, blobs: Path, tmp_path: Path
) -> None:
    """The store's bytes went bad: the server cuts the download off before its end rather than send
    them whole, and the client tries again from the start as its retry policy allows."""
    job_id, _ = running(server, ledger, blobs)
    blob_path(blobs, hashlib.sha256(DATA).hexdigest()).write_bytes(DATA.replace(b"2", b"3"))
    tries: list[httpx2.Request] = []
    dest = tmp_path / "data.csv"
    with Client(server, retry=FAST, event_hooks={"request": [tries.append]}) as api:
        with pytest.raises(Unavailable, match="without sending complete message body"):
            api.download_file(job_id, "data.csv", dest)
        assert len(tries) == FAST.attempts
        with pytest.raises(NotFound, match=r"no file 'other\.csv'"):
            api.download_file(job_id, "other.csv", dest)
    assert not dest.exists() and not list(tmp_path.glob(".*.part"))


def test_results_upload_from_a_path_or_a_file(
    server: str, ledger: Ledger, blobs: Path, tmp_path: Path
) -> None:
    job_id, attempt = running(server, ledger, blobs)
    out = tmp_path / "out.json"
    out.write_bytes(b'{"sum": 3}')
    with Client(server) as api:
        stored = api.add_result(job_id, "out.json", out, attempt)
        assert (stored.name, stored.media_type, stored.attempt) == ("out.json", "application/json", attempt)
        assert stored.sha256 == hashlib.sha256(b'{"sum": 3}').hexdigest()
        stream = io.BytesIO(b"skip|the rest")
        stream.seek(5)
        raw = asyncio.run(_upload_async(server, job_id, stream, attempt))
        assert raw.size == len(b"the rest") and raw.media_type == "application/x-custom"
        assert blob_path(blobs, raw.sha256).read_bytes() == b"the rest"
        results = api.get(job_id).results
        assert [(r.name, r.attempt) for r in results] == [("out.json", attempt), ("raw", attempt)]
        with pytest.raises(Conflict, match=f"attempt {attempt + 1}"):
            api.add_result(job_id, "late", out, attempt + 1)


async def _upload_async(server: str, job_id: int, stream: io.BytesIO, attempt: int) -> StoredResult:
    async with AsyncClient(server) as api:
        return await api.add_result(job_id, "raw", stream, attempt, media_type="application/x-custom")


class _CutOnce(http.server.BaseHTTPRequestHandler):
    """Serves DATA with its digests; the first answer is cut off half way."""

    served: ClassVar[list[int]] = []

    def do_GET(self) -> None:
        self.served.append(1)
        self.send_response(200)
        self.send_header("content-length", str(len(DATA)))
        self.send_header("etag", f'"{hashlib.sha256(DATA).hexdigest()}"')
        self.end_headers()
        self.wfile.write(DATA if len(self.served) > 1 else DATA[: len(DATA) // 2])
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


def test_a_transfer_cut_off_is_tried_again_from_the_start(tmp_path: Path) -> None:
    _CutOnce.served.clear()
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CutOnce) as peer:
        threading.Thread(target=peer.serve_forever, daemon=True).start()
        try:
            with Client(f"http://127.0.0.1:{peer.server_address[1]}", retry=FAST) as api:
                received = api.download_file(7, "data.csv", tmp_path / "data.csv")
        finally:
            peer.shutdown()
    assert len(_CutOnce.served) == 2
    assert (tmp_path / "data.csv").read_bytes() == DATA and received.size == len(DATA)

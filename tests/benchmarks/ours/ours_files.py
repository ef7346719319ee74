"""Ours with files: one big file (1 GiB; 64 MiB with ``--quick``) up and down over HTTP through a
real ``jobledger serve`` process, beside ``cp`` of the same file on the same disk.

One temporary directory holds the file, its ``cp`` copy and the server's blob store (local disk,
``JOBLEDGER_BLOBS_URL``), so every figure writes to the same disk.  In turn:

- ``cp`` then ``sync`` of the copy (the store flushes a blob to disk before it is placed, so the
  bar flushes too): the disk's rate;
- the store alone, in this process (:class:`jobledger.blobs.local.LocalBlobStore`: put, then
  read): what the HTTP figures can at best reach;
- ``PUT /blob`` with the file as the raw body (answer: 201 ``{sha256, size}``);
- ``POST /queue/{q}/job`` as ``multipart/form-data``: a part ``job`` (the JSON body) and the file;
- ``GET /job/{id}/files/{name}`` of that job (or, without the multipart create, of a job whose
  JSON body names the blob ``PUT /blob`` stored), read as it streams and hashed.

Each HTTP figure is MB/s (10^6 bytes a second) and the server process's resident memory growth while
it ran (peak over the start, sampled every 20 ms), against a bar of 64 MiB.  A route the server
does not have (404 or 405) gives no figure, and its note says so: the part runs as it is once the
routes are there.  Named only by ``--only files``; ``ours`` leaves it out (it writes gigabytes).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import httpx2

from jobledger.blobs.local import LocalBlobStore
from jobledger.blobs.store import CHUNK, BlobStore

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_dashboard import resident_mib
from .ours_http import _free_port, _wait_answering, stop
from .server import Servers

QUEUE = "files"
NAME = "big.bin"
#: The most the server may grow serving one file, in MiB.
RSS_BAR_MIB = 64
#: The routes' answers that mean "not on this server" rather than "failed".
ABSENT = (404, 405)


class RouteAbsent(Exception):
    """The server has no such route (yet)."""


@dataclass(frozen=True)
class Transfer:
    """One file moved: how long it took, and the server's memory growth meanwhile."""

    seconds: float
    rss_growth_mib: float
    body: bytes = b""


class PeakMemory:
    """A process's resident memory sampled every 20 ms in a thread: its peak over the start."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.start = self.peak = resident_mib(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, resident_mib(self.pid))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    @property
    def growth(self) -> float:
        return self.peak - self.start


def write_file(path: Path, size: int) -> str:
    """``size`` random bytes (8 MiB of randomness repeated) at ``path``, flushed; their SHA-256."""
    block = os.urandom(8 * CHUNK)
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        left = size
        while left:
            piece = block[: min(left, len(block))]
            out.write(piece)
            digest.update(piece)
            left -= len(piece)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while data := f.read(CHUNK):
            yield data


def copy_seconds(src: Path, dst: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["cp", str(src), str(dst)], check=True)
    subprocess.run(["sync", str(dst)], check=True)
    seconds = time.perf_counter() - start
    dst.unlink()
    return seconds


def through_store(store: BlobStore, path: Path, sha256: str) -> tuple[Transfer, Transfer]:
    """The file put in ``store`` from this process, then read back and hashed, then deleted: each
    way's time and this process's memory growth."""

    async def chunks() -> AsyncIterator[bytes]:
        for data in file_chunks(path):
            yield data

    async def read() -> str:
        digest = hashlib.sha256()
        async for data in store.read(sha256):
            digest.update(data)
        return digest.hexdigest()

    with PeakMemory(os.getpid()) as memory:
        start = time.perf_counter()
        asyncio.run(store.put(chunks(), expected_sha256=sha256))
        put = Transfer(time.perf_counter() - start, memory.growth)
    with PeakMemory(os.getpid()) as memory:
        start = time.perf_counter()
        if asyncio.run(read()) != sha256:
            raise RuntimeError(f"{store.description} gave back other bytes")
        got = Transfer(time.perf_counter() - start, memory.growth)
    asyncio.run(store.delete(sha256))
    return put, got


@contextmanager
def serve(redis_url: str, workdir: Path) -> Iterator[tuple[str, int]]:
    """A ``jobledger serve`` process on ``redis_url``, keeping blobs in ``workdir/blobs``: its URL
    and PID; stopped by its PID."""
    port = _free_port()
    namespace = "bench-files-" + os.urandom(4).hex()
    env = {**os.environ, "JOBLEDGER_BLOBS_URL": str(workdir / "blobs")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobledger.cli.main", "serve", "--redis-url", redis_url,
         "--namespace", namespace, "--port", str(port), "--no-scheduler",
         "--data-dir", str(workdir / "data")],
        env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_answering(port, proc)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        stop(proc)


def _check(response: httpx2.Response, what: str, expected: int) -> None:
    if response.status_code in ABSENT:
        raise RouteAbsent(f"{what}: {response.status_code}, no such route on this server")
    if response.status_code != expected:
        raise RuntimeError(f"{what} answered {response.status_code}: {response.text[:300]!r}")


def upload_blob(http: httpx2.Client, pid: int, path: Path, size: int) -> Transfer:
    _check(http.put("/blob", content=b"x"), "PUT /blob", 201)
    with PeakMemory(pid) as memory:
        start = time.perf_counter()
        response = http.put("/blob", content=file_chunks(path), headers={"content-length": str(size)})
        seconds = time.perf_counter() - start
    _check(response, "PUT /blob", 201)
    return Transfer(seconds, memory.growth, response.content)


def _multipart_create(http: httpx2.Client, file: BinaryIO | bytes) -> httpx2.Response:
    job = json.dumps({"input": {"bench": "files"}})
    return http.post(
        f"/queue/{QUEUE}/job",
        files={"job": (None, job, "application/json"), NAME: (NAME, file, "application/octet-stream")},
    )


def create_with_file(http: httpx2.Client, pid: int, path: Path) -> Transfer:
    probe = _multipart_create(http, b"x")  # a server without the route refuses the form (400, 413, 415)
    if probe.status_code != 201:
        raise RouteAbsent(
            f"a multipart create of a 1-byte file answered {probe.status_code}: {probe.text[:120]}"
        )
    with PeakMemory(pid) as memory, open(path, "rb") as f:
        start = time.perf_counter()
        response = _multipart_create(http, f)
        seconds = time.perf_counter() - start
    _check(response, f"multipart POST /queue/{QUEUE}/job", 201)
    return Transfer(seconds, memory.growth, response.content)


def create_naming_blob(http: httpx2.Client, sha256: str) -> int:
    response = http.post(
        f"/queue/{QUEUE}/job", json={"input": {}, "files": [{"name": NAME, "sha256": sha256}]}
    )
    _check(response, f"POST /queue/{QUEUE}/job naming a stored blob", 201)
    return int(response.json())


def download(http: httpx2.Client, pid: int, job_id: int, sha256: str, size: int) -> Transfer:
    digest = hashlib.sha256()
    got = 0
    with PeakMemory(pid) as memory:
        start = time.perf_counter()
        with http.stream("GET", f"/job/{job_id}/files/{NAME}") as response:
            _check(response, f"GET /job/{{id}}/files/{NAME}", 200)
            for data in response.iter_raw(CHUNK):
                digest.update(data)
                got += len(data)
        seconds = time.perf_counter() - start
    if got != size or digest.hexdigest() != sha256:
        raise RuntimeError(f"GET /job/{job_id}/files/{NAME} gave {got} bytes, not the file's {size}")
    return Transfer(seconds, memory.growth)


def _rate(size: int, seconds: float) -> float:
    return size / seconds / 1e6


def _http_figures(key: str, rss_key: str, what: str, size: int, cp_mbps: float,
                  attempt: Callable[[], Transfer]) -> tuple[Results, Transfer | None]:  # fmt: skip
    try:
        moved = attempt()
    except RouteAbsent as absent:
        note = f"not measured: {absent}"
        return {key: Figure(None, "MB/s", note), rss_key: Figure(None, "MiB", note)}, None
    mbps = _rate(size, moved.seconds)
    met = "met" if moved.rss_growth_mib <= RSS_BAR_MIB else "NOT MET"
    return {
        key: Figure(mbps, "MB/s", f"{what}, {size / 2**20:,.0f} MiB: {mbps / cp_mbps:.2f}x cp",
                    {"seconds": moved.seconds, "vs_cp": mbps / cp_mbps}),
        rss_key: Figure(moved.rss_growth_mib, "MiB",
                        f"server RSS growth during {what} (bar {RSS_BAR_MIB} MiB: {met})"),
    }, moved  # fmt: skip


def measure(servers: Servers, settings: Settings, log: Callable[[str], None] = print) -> Results:
    size = settings.file_bytes
    results: Results = {}
    with tempfile.TemporaryDirectory(prefix="jobledger-bench-files-") as tmp:
        workdir = Path(tmp)
        path = workdir / NAME
        sha256 = write_file(path, size)
        cp = copy_seconds(path, workdir / "copy.bin")
        cp_mbps = _rate(size, cp)
        results[F.FILES_CP] = Figure(cp_mbps, "MB/s", f"cp + sync of {size / 2**20:,.0f} MiB in {workdir}")
        put, read = through_store(LocalBlobStore(workdir / "store"), path, sha256)
        for key, way, moved in ((F.FILES_STORE_PUT, "put", put), (F.FILES_STORE_READ, "read", read)):
            note = f"LocalBlobStore.{way} in this process: its RSS +{moved.rss_growth_mib:.1f} MiB"
            results[key] = Figure(
                _rate(size, moved.seconds), "MB/s", note, {"rss_growth_mib": moved.rss_growth_mib}
            )
        log(f"  files: cp {cp_mbps:,.0f} MB/s; store put {results[F.FILES_STORE_PUT].value:,.0f}, "
            f"read {results[F.FILES_STORE_READ].value:,.0f}")  # fmt: skip
        with servers.fresh() as url, serve(url, workdir) as (base, pid), \
                httpx2.Client(base_url=base, timeout=600) as http:  # fmt: skip
            http.put(f"/queue/{QUEUE}", json={"timeout": "10m"}).raise_for_status()
            up, stored = _http_figures(F.FILES_UP, F.FILES_UP_RSS, "PUT /blob", size, cp_mbps,
                                       lambda: upload_blob(http, pid, path, size))  # fmt: skip
            results.update(up)
            job, created = _http_figures(F.FILES_JOB_UP, F.FILES_JOB_UP_RSS, "a multipart job create", size,
                                         cp_mbps, lambda: create_with_file(http, pid, path))  # fmt: skip
            results.update(job)
            job_id: int | None = None
            if created is not None:
                job_id = int(json.loads(created.body))
            elif stored is not None:
                job_id = create_naming_blob(http, sha256)

            def fetch() -> Transfer:
                if job_id is None:
                    raise RouteAbsent("no job holds the file: neither upload route is on this server")
                return download(http, pid, job_id, sha256, size)

            results.update(_http_figures(F.FILES_DOWN, F.FILES_DOWN_RSS, "GET /job/{id}/files/{name}", size,
                                         cp_mbps, fetch)[0])  # fmt: skip
    for key in (F.FILES_UP, F.FILES_JOB_UP, F.FILES_DOWN):
        log(f"  files: {key}: {results[key].note}")
    return results

"""A 100 MiB file up and back through a real ``jobledger serve`` process: its memory stays flat.

Not a timed test: it reads the server's resident memory (VmRSS in /proc) before and after, and
holds the growth well below the file's size.  The upload is streamed by the test too (a generator
of chunks), as a multipart create and as ``PUT /blob``; then the file goes back as a result in a
zip."""

from __future__ import annotations

import hashlib
import io
import signal
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx2
import redis

from jobledger.ledger import commands
from jobledger.ledger.files import FileRef
from jobledger.ledger.runner import Ledger
from jobledger.runtime.config import DEFAULT_NAMESPACE
from jobledger.runtime.embedded import ServerRecord
from tests.cli.process_support import jobledger, no_server_left, serve_args, wait_serving
from tests.support.private_redis import free_port

MIB = 1024 * 1024
SIZE = 100 * MIB
#: how much the server may grow while a file of SIZE goes through it
ALLOWED_GROWTH = 40 * MIB


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def chunks(seed: bytes) -> Iterator[bytes]:
    block = hashlib.sha256(seed).digest() * (MIB // 32)
    for _ in range(SIZE // MIB):
        yield block


def digest_of(seed: bytes) -> str:
    sha = hashlib.sha256()
    for chunk in chunks(seed):
        sha.update(chunk)
    return sha.hexdigest()


def multipart(boundary: str, seed: bytes) -> Iterator[bytes]:
    yield (f'--{boundary}\r\nContent-Disposition: form-data; name="job"\r\n\r\n{{"input": 1}}\r\n'
           f'--{boundary}\r\nContent-Disposition: form-data; name="big"; filename="big.bin"\r\n'
           "Content-Type: application/octet-stream\r\n\r\n").encode()  # fmt: skip
    yield from chunks(seed)
    yield f"\r\n--{boundary}--\r\n".encode()


def test_a_100_mib_file_keeps_the_server_flat(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", free_port()
    base = f"http://127.0.0.1:{port}"
    with no_server_left(data_dir), jobledger(serve_args(data_dir, port), tmp_path / "serve.log") as serve:
        wait_serving(serve, base)
        with httpx2.Client(base_url=base, timeout=120) as http:
            assert http.put("/queue/q", json={}).status_code == 201
            http.post("/queue/q/job", json={}).raise_for_status()  # warm up the routes
            before = rss(serve.pid)
            started = time.monotonic()
            made = http.post("/queue/q/job", content=multipart("b0undary", b"one"),
                             headers={"content-type": "multipart/form-data; boundary=b0undary"})  # fmt: skip
            assert made.status_code == 201, made.text
            after_multipart = rss(serve.pid)
            took = {"multipart": time.monotonic() - started}
            started = time.monotonic()
            stored = http.put("/blob?queue=q", content=chunks(b"two"))
            took["put"] = time.monotonic() - started
            assert stored.status_code == 201 and stored.json()["size"] == SIZE
            after_put = rss(serve.pid)
            job = made.json()
            files = http.get(f"/job/{job}").json()["files"]
            assert files[0]["sha256"] == digest_of(b"one") and files[0]["size"] == SIZE
            record = ServerRecord.read(data_dir)
            assert record is not None
            result = FileRef(name="back.bin", sha256=stored.json()["sha256"], size=SIZE)
            with redis.Redis.from_url(record.url) as client:
                ledger = Ledger(client, DEFAULT_NAMESPACE)
                ledger.run(commands.fetch_jobs("q", 2, None))  # the warm-up job and this one
                ledger.run(commands.add_result(job, result))
            sha = hashlib.sha256()
            started = time.monotonic()
            with http.stream("GET", f"/job/{job}/results.zip") as answer:
                assert answer.status_code == 200
                spooled = io.BytesIO()
                for chunk in answer.iter_bytes(MIB):
                    spooled.write(chunk)
            after_zip = rss(serve.pid)
            took["zip"] = time.monotonic() - started
            with zipfile.ZipFile(spooled) as archive, archive.open("back.bin") as member:
                while chunk := member.read(MIB):
                    sha.update(chunk)
            assert sha.hexdigest() == digest_of(b"two")
        serve.signal(signal.SIGTERM)  # stops its embedded server too
        assert serve.wait(timeout=30) == 0, serve.output()
        growth = {"multipart": after_multipart - before, "put": after_put - before, "zip": after_zip - before}
        print(f"server RSS {before / MIB:.1f} MiB before; growth in MiB: "
              + ", ".join(f"{k} {v / MIB:.1f}" for k, v in growth.items())
              + "; seconds (informative, not checked): "
              + ", ".join(f"{k} {v:.2f}" for k, v in took.items()))  # fmt: skip
        assert all(g < ALLOWED_GROWTH for g in growth.values()), growth
        assert len(list((data_dir / "blobs" / DEFAULT_NAMESPACE / "sha256").rglob("*"))) >= 2

"""job-orchestrator's whole flow, as its users run it, with real processes, on each kind of store:
``jobledger serve`` (local disk, then a radosgw bucket), files uploaded with its ``POST /upload`` (a
``run.sh`` among them), ``jobledger worker --exec`` running the script, ``GET /download/{id}``
answering the job's state until it completed and then the zip of its results, which is unzipped and
compared; ``replay verify --blobs`` then finds every blob whole."""

from __future__ import annotations

import io
import time
import uuid
import zipfile
from pathlib import Path

import httpx2
import pytest

from tests.blobs.radosgw import RadosGW
from tests.cli.process_support import jobledger, wait_serving
from tests.support.private_redis import free_port

RUN_SH = b"""#!/bin/bash
set -e
sort data.csv > sorted.csv
wc -l < data.csv | tr -d ' ' > lines.txt
echo done
"""
DATA = b"pear,3\napple,1\nfig,2\n"


def blobs_section(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "local":
        return f'[blobs]\nurl = "{tmp_path / "blobs"}"\n'
    gateway: RadosGW = request.getfixturevalue("radosgw")
    options = "\n".join(f'{k} = "{v}"' for k, v in gateway.options().items())
    return f'[blobs]\nurl = "s3://{gateway.bucket}/flow-{uuid.uuid4().hex[:8]}"\n[blobs.options]\n{options}\n'


@pytest.mark.parametrize("kind", ["local", "s3"])
def test_upload_run_download(
    kind: str, redis_url: str, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    config = tmp_path / "jobledger.toml"
    config.write_text(blobs_section(kind, tmp_path, request))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    ledger_args = ["--config", str(config), "--redis-url", redis_url, "--namespace", namespace]
    serve_args = ["serve", *ledger_args, "--host", "127.0.0.1", "--port", str(port)]
    with (
        jobledger(serve_args, tmp_path / "serve.log") as serve,
        httpx2.Client(base_url=base, timeout=30) as http,
    ):
        wait_serving(serve, base)
        assert http.put("/queue/render", json={"timeout": "1m"}).status_code == 201  # a service
        files = [("file", ("run.sh", RUN_SH)), ("file", ("data.csv", DATA))]
        uploaded = http.post("/upload", files=files, data={"user_id": "7", "service": "render"})
        assert uploaded.status_code == 201, uploaded.text
        job = uploaded.json()["id"]
        assert http.get(f"/download/{job}").json()["status"] == "Queued"

        worker_args = [
            "worker",
            "--exec",
            "-q",
            "render",
            "--url",
            base,
            "--exec-dir",
            str(tmp_path / "work"),
        ]
        with jobledger(worker_args, tmp_path / "worker.log") as worker:
            deadline = time.monotonic() + 60
            while (answer := http.get(f"/download/{job}")).headers["content-type"] != "application/zip":
                assert answer.json()["status"] in ("Queued", "Submitted"), (answer.json(), worker.output())
                assert time.monotonic() < deadline, worker.output()
                time.sleep(0.2)
        with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
            assert sorted(archive.namelist()) == ["lines.txt", "sorted.csv"], "what run.sh wrote, no input"
            assert archive.read("sorted.csv") == b"apple,1\nfig,2\npear,3\n"
            assert archive.read("lines.txt") == b"3\n"
        record = http.get(f"/job/{job}").json()
        assert record["status"] == "completed" and record["quota_key"] == "7"
        assert [f["name"] for f in record["files"]] == ["run.sh", "data.csv"]

        verify = jobledger_run(["replay", "verify", "--blobs", *ledger_args], tmp_path / "verify.log")
        assert "verified 4 blobs" in verify, verify


def jobledger_run(args: list[str], log: Path) -> str:
    """Run one jobledger command to its end; its output (it must succeed)."""
    with jobledger(args, log) as command:
        code = command.wait(timeout=60)
        assert code == 0, command.output()
        return command.output()

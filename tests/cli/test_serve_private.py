"""A real ``jobledger serve`` keeps what it writes to its user (directories 0700, files 0600: the
data directory, the append-only file, the record, blobs, the archive in the blob store), and on a
data directory too long for a socket its embedded server wants a password that every jobledger
command finds."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path
from typing import Any

import httpx2

from jobledger.runtime.embedded import ServerRecord
from tests.cli.process_support import REPO, jobledger, no_server_left, serve_args, wait_for, wait_serving
from tests.runtime.test_embedded_private import deep_dir, port_of, refused_without_password
from tests.support.private_redis import free_port


def loose(root: Path) -> list[str]:
    """Everything under ``root`` (itself too) that another user could reach, or a regular file not 0600."""
    found = []
    for where, dirs, files in os.walk(root):
        for path in [Path(where)] + [Path(where) / name for name in (*dirs, *files)]:
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if mode & 0o077 or (stat.S_ISREG(st.st_mode) and mode != 0o600):
                found.append(f"{path.relative_to(root.parent)} {mode:o}")
    return sorted(set(found))


def test_serve_keeps_the_data_directory_the_blobs_and_the_archive_private(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", free_port()
    data_dir.mkdir(mode=0o755)
    os.chmod(data_dir, 0o755)  # made by an earlier version, or by hand
    base = f"http://127.0.0.1:{port}"
    archiving = {"JOBLEDGER_ARCHIVE_AFTER": "1s", "JOBLEDGER_ARCHIVE_CHECK_INTERVAL": "200ms"}
    serve_log = tmp_path / "s.log"
    with (
        no_server_left(data_dir),
        jobledger(serve_args(data_dir, port), serve_log, REPO, **archiving) as serve,
    ):
        wait_serving(serve, base)
        assert httpx2.put(f"{base}/queue/q").status_code == 201
        assert httpx2.put(f"{base}/blob", content=b"secret bytes").status_code in (200, 201)
        files: dict[str, Any] = {"job": (None, b'{"input": 1}', "application/json"), "a.txt": ("a.txt", b"x")}
        assert httpx2.post(f"{base}/queue/q/job", files=files).status_code == 201
        wait_for(lambda: any((data_dir / "blobs").rglob("events-*.jsonl")), "an archived segment")
        assert loose(data_dir) == []
        assert list((data_dir / "blobs").rglob("*/sha256/*/*")), "no blob stored"
        assert "open to other users (mode 755)" in serve.output()
        serve.signal(signal.SIGTERM)
        assert serve.wait(timeout=15) == 0, serve.output()
    assert loose(data_dir) == []


def test_a_long_data_dir_serves_the_cli_and_a_redis_worker_behind_a_password(tmp_path: Path) -> None:
    data_dir, port = deep_dir(tmp_path), free_port()
    long_tmp = tmp_path / ("t" * 80)
    long_tmp.mkdir()
    env = {"TMPDIR": str(long_tmp), "XDG_RUNTIME_DIR": ""}  # nowhere for a short socket path
    base = f"http://127.0.0.1:{port}"
    release = tmp_path / "release"
    release.touch()
    with (
        no_server_left(data_dir),
        jobledger(serve_args(data_dir, port), tmp_path / "s.log", REPO, **env) as serve,
    ):
        wait_serving(serve, base)
        record = ServerRecord.read(data_dir)
        assert record is not None and record.url.startswith("redis://:"), record
        assert refused_without_password(port_of(record.url))
        assert httpx2.put(f"{base}/queue/q").status_code == 201
        made = httpx2.post(f"{base}/queue/q/job", json={"input": {"release": str(release)}})
        assert made.status_code == 201
        job = made.json()
        verify = ["replay", "verify", "--data-dir", str(data_dir)]
        with jobledger(verify, tmp_path / "v.log", REPO, **env) as cli:
            assert cli.wait(timeout=30) == 0, cli.output()
        worker_args = ["worker", "tests.support.worker_handlers:wait_for_release", "--queue", "q",
                       "--transport", "redis", "--data-dir", str(data_dir)]  # fmt: skip
        with jobledger(worker_args, tmp_path / "w.log", REPO, **env) as worker:

            def completed() -> bool:
                assert worker.process.poll() is None, worker.output()
                return bool(httpx2.get(f"{base}/job/{job}/status").json() == "completed")

            wait_for(completed, "the worker over Redis to complete the job")
            worker.signal(signal.SIGTERM)
            assert worker.wait(timeout=15) == 0, worker.output()
        serve.signal(signal.SIGTERM)
        assert serve.wait(timeout=15) == 0, serve.output()

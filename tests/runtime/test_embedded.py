"""jobledger.runtime.embedded, jobledger.runtime.locate and the `jobledger` command, against real
valkey-server processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
import redis

from jobledger.runtime.config import load_config
from jobledger.runtime.embedded import (
    LOCK_NAME,
    RECORD_NAME,
    EmbeddedServer,
    EmbeddedServerError,
    ServerRecord,
    connect_or_start,
    free_port,
    pid_alive,
)
from jobledger.runtime.locate import NoLedgerHere, redis_url_for

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 30.0


@contextmanager
def redis_at(url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(url)
    try:
        yield client
    finally:
        client.close()


def put(url: str, key: str, value: str) -> None:
    with redis_at(url) as client:
        client.set(key, value)


def get(url: str, key: str) -> bytes | None:
    with redis_at(url) as client:
        value = client.get(key)
    assert value is None or isinstance(value, bytes)
    return value


def wait_for(condition: object, what: str, timeout: float = DEADLINE) -> None:
    """Poll ``condition`` (a callable) until it is true, failing after ``timeout`` seconds."""
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def clean_env() -> dict[str, str]:
    """This process's environment without JOBLEDGER_* settings, so subprocesses see only our flags."""
    return {k: v for k, v in os.environ.items() if not k.startswith("JOBLEDGER_")}


def test_data_survives_a_restart(tmp_path: Path) -> None:
    with EmbeddedServer(tmp_path) as server:
        assert server.url == f"unix://{tmp_path.resolve()}/valkey.sock"
        record = ServerRecord.read(tmp_path)
        assert record is not None
        assert (record.url, record.pid, record.owner_pid) == (server.url, server.pid, os.getpid())
        put(server.url, "greeting", "hello")
        first_pid = server.pid
    assert first_pid is not None and not pid_alive(first_pid)
    assert ServerRecord.read(tmp_path) is None
    assert (tmp_path / "appendonlydir").is_dir()
    with EmbeddedServer(tmp_path, appendfsync="always") as server:
        assert get(server.url, "greeting") == b"hello"


def test_second_caller_connects_to_the_running_server(tmp_path: Path) -> None:
    with EmbeddedServer(tmp_path) as server:
        url, started = connect_or_start(tmp_path, "everysec")
        assert (url, started) == (server.url, None)
        with pytest.raises(EmbeddedServerError):
            EmbeddedServer(tmp_path).start()  # never two servers on one directory
        put(url, "k", "v")
        assert get(server.url, "k") == b"v"


def test_connect_or_start_starts_one_when_none_runs(tmp_path: Path) -> None:
    url, server = connect_or_start(tmp_path / "new", "always")
    assert server is not None
    try:
        assert url == server.url
        with redis_at(url) as client:
            assert client.config_get("appendfsync") == {"appendfsync": "always"}
            assert client.config_get("appendonly") == {"appendonly": "yes"}
            assert client.config_get("save") == {"save": ""}
    finally:
        server.stop()
    assert server.pid is None


def test_concurrent_callers_start_a_single_server(tmp_path: Path) -> None:
    barrier = threading.Barrier(4)
    results: list[tuple[str, EmbeddedServer | None]] = []

    def call() -> None:
        barrier.wait()
        results.append(connect_or_start(tmp_path, "everysec"))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    owners = [server for _, server in results if server is not None]
    try:
        assert len(results) == 4
        assert len(owners) == 1
        assert {url for url, _ in results} == {owners[0].url}
    finally:
        for server in owners:
            server.stop()


def test_stale_record_is_recovered(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = ServerRecord(f"unix://{tmp_path}/old.sock", gone.pid, gone.pid, "everysec")
    stale.write(tmp_path)
    (tmp_path / LOCK_NAME).touch()
    url, server = connect_or_start(tmp_path, "everysec")
    assert server is not None
    try:
        assert url == server.url != stale.url
        record = json.loads((tmp_path / RECORD_NAME).read_text())
        assert record["pid"] == server.pid
    finally:
        server.stop()


def test_server_left_behind_by_a_killed_owner_is_replaced_without_loss(tmp_path: Path) -> None:
    owner_code = (
        "import sys, redis\n"
        "from pathlib import Path\n"
        "from jobledger.runtime.embedded import EmbeddedServer\n"
        "server = EmbeddedServer(Path(sys.argv[1]))\n"
        "server.start()\n"
        "client = redis.Redis.from_url(server.url)\n"
        "client.set('survivor', 'yes')\n"
        "client.close()\n"
        "print(server.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", owner_code, str(tmp_path)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert owner.stdout is not None and owner.stdin is not None
    orphan_pid = int(owner.stdout.readline())
    owner.kill()
    owner.wait()
    owner.stdin.close()
    owner.stdout.close()
    assert pid_alive(orphan_pid)  # the server outlives its owner...
    url, server = connect_or_start(tmp_path, "everysec")
    assert server is not None
    try:
        assert not pid_alive(orphan_pid)  # ...until the next command takes the directory over
        assert server.pid != orphan_pid
        assert get(url, "survivor") == b"yes"
    finally:
        server.stop()


def test_failure_to_start_reports_the_log(tmp_path: Path) -> None:
    (tmp_path / "appendonlydir").write_text("not a directory")
    server = EmbeddedServer(tmp_path)
    with pytest.raises(EmbeddedServerError, match="exited with code") as error:
        server.start()
    assert "append-only dir" in str(error.value)
    assert server.pid is None
    (tmp_path / "appendonlydir").unlink()
    with EmbeddedServer(tmp_path):  # the failed start released the directory's lock
        pass


def test_bad_appendfsync_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="appendfsync"):
        EmbeddedServer(tmp_path, appendfsync="no")


def test_redis_url_for_embedded_and_external(tmp_path: Path) -> None:
    config = load_config(None, {"embedded.data_dir": tmp_path}, environ={})
    with pytest.raises(NoLedgerHere), redis_url_for(config):  # no ledger there: only a creator starts one
        pass
    with redis_url_for(config, create=True) as url:
        assert url.startswith("unix://")
        put(url, "k", "v")
        with redis_url_for(config) as again:  # a second command shares the running server
            assert again == url
        assert get(url, "k") == b"v"  # ...and leaving it did not stop the server
    assert ServerRecord.read(tmp_path) is None  # the owner stopped it

    external = load_config(None, {"redis.url": "redis://example.invalid:6379"}, environ={})
    with redis_url_for(external) as url:
        assert url == "redis://example.invalid:6379"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobledger.cli.main", *args],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )


def test_cli_version() -> None:
    result = run_cli("version")
    assert result.returncode == 0
    assert result.stdout.strip()


def test_cli_reports_a_bad_option(tmp_path: Path) -> None:
    result = run_cli("serve", "--data-dir", str(tmp_path), "--appendfsync", "sometimes")
    assert result.returncode == 2
    assert "embedded.appendfsync" in result.stderr
    assert not (tmp_path / RECORD_NAME).exists()


def healthy(base: str) -> bool:
    try:
        response = httpx2.get(f"{base}/health", timeout=1.0)
    except httpx2.HTTPError:
        return False
    return response.status_code == 200 and response.json().get("status") == "healthy"


def test_serve_answers_health_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", free_port()
    log = (tmp_path / "serve.log").open("wb")
    command = [sys.executable, "-m", "jobledger.cli.main", "serve", "--data-dir", str(data_dir)]
    serve = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def up() -> bool:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            return healthy(f"http://127.0.0.1:{port}")

        wait_for(up, "jobledger serve to answer /health")
        record = ServerRecord.read(data_dir)
        assert record is not None and record.owner_pid == serve.pid
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=DEADLINE) == 0, (tmp_path / "serve.log").read_text()
        assert not pid_alive(record.pid)  # no valkey-server left behind
        assert ServerRecord.read(data_dir) is None
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        log.close()

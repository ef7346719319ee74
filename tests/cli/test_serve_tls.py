"""``serve --tls-cert --tls-key``: HTTPS with a self-signed certificate made here by the openssl
command, auth on; a file that is not a certificate stops the start with its reason."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import httpx2
import pytest

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.cli.process_support import jobledger, wait_for
from tests.support.private_redis import free_port

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def self_signed(where: Path) -> tuple[Path, Path]:
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def test_https_with_auth(tmp_path: Path, redis_url: str, namespace: str, ledger: Ledger) -> None:
    cert, key = self_signed(tmp_path)
    secret = new_secret()
    ledger.run(create_token("reader", ["read"], digest(secret)))
    port = free_port()
    args = ["serve", "--redis-url", redis_url, "--namespace", namespace, "--port", str(port),
            "--no-scheduler", "--auth", "--tls-cert", str(cert), "--tls-key", str(key)]  # fmt: skip
    base = f"https://127.0.0.1:{port}"
    trusted = ssl.create_default_context(cafile=str(cert))
    with jobledger(args, tmp_path / "serve.log") as command:

        def up() -> bool:
            assert command.process.poll() is None, command.output()
            try:
                return httpx2.get(f"{base}/health", verify=trusted, timeout=1).status_code == 200
            except httpx2.HTTPError:
                return False

        wait_for(up, "serve to answer over HTTPS")
        assert httpx2.get(f"{base}/queue", verify=trusted).status_code == 401
        answer = httpx2.get(f"{base}/queue", verify=trusted, headers={"authorization": f"Bearer {secret}"})
        assert answer.status_code == 200
        with pytest.raises(httpx2.HTTPError):
            httpx2.get(f"http://127.0.0.1:{port}/health", timeout=2)  # plain HTTP gets no answer
        assert f"listening on https://127.0.0.1:{port}" in command.output()
        assert secret not in command.output()


def test_a_bad_certificate_stops_the_start(tmp_path: Path, redis_url: str) -> None:
    bad = tmp_path / "cert.pem"
    bad.write_text("not a certificate\n")
    args = ["serve", "--redis-url", redis_url, "--port", str(free_port()),
            "--tls-cert", str(bad), "--tls-key", str(bad)]  # fmt: skip
    with jobledger(args, tmp_path / "serve.log") as command:
        assert command.wait(30) == 2
        assert "cannot serve HTTPS with" in command.output()

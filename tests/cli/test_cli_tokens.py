"""``jobledger token create|list|revoke`` on the ledger itself, and ``serve``'s refusal to expose an
address other than loopback without auth."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from jobledger.cli.main import build_app
from jobledger.cli.server_commands import exposure_refusal, loopback
from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import digest
from jobledger.projections import tokens
from jobledger.runtime.config import Config, config_from

PIPED = {"TTY_COMPATIBLE": "0", "NO_COLOR": "1"}


def run(redis_url: str, namespace: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        build_app(), ["token", *args, "--redis-url", redis_url, "--namespace", namespace], env=PIPED
    )
    return result.exit_code, result.output


def test_create_list_revoke(redis_url: str, namespace: str, ledger: Ledger) -> None:
    code, out = run(
        redis_url, namespace, "create", "ci", "--scope", "produce:build-*", "-s", "read", "--json"
    )
    assert code == 0, out
    created = json.loads(out)
    assert created["name"] == "ci" and created["token"].startswith("jl_")
    (found,) = ledger.read(tokens.tokens())
    assert found.digest == digest(created["token"]) and found.scopes == ("produce:build-*", "read")
    code, out = run(redis_url, namespace, "list")
    assert code == 0 and out.splitlines() == ["name\tscopes", "ci\tproduce:build-* read"]
    assert created["token"] not in out
    code, out = run(redis_url, namespace, "create", "ci", "--scope", "read")
    assert code == 1 and "exists already" in out
    code, out = run(redis_url, namespace, "revoke", "ci")
    assert code == 0 and out.strip() == "ci"
    code, out = run(redis_url, namespace, "revoke", "ci")
    assert code == 1 and "does not exist" in out
    assert ledger.read(tokens.tokens()) == []


def test_plain_create_prints_the_secret_alone(redis_url: str, namespace: str, ledger: Ledger) -> None:
    code, out = run(redis_url, namespace, "create", "w", "--scope", "work:*")
    assert code == 0
    assert ledger.read(tokens.token(digest(out.strip())))[0] is not None


@pytest.mark.parametrize("scope", ["root", "produce", "work:a b"])
def test_a_bad_scope_is_a_usage_error(redis_url: str, namespace: str, scope: str) -> None:
    code, out = run(redis_url, namespace, "create", "x", "--scope", scope)
    assert code == 2 and "is not a scope" in out


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"])
def test_loopback(host: str) -> None:
    assert loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "example.com"])
def test_not_loopback(host: str) -> None:
    assert not loopback(host)


def _config(**server: object) -> Config:
    return config_from({"server": server})


def test_exposure_needs_auth_or_insecure() -> None:
    refusal = exposure_refusal(_config(host="0.0.0.0"))
    assert refusal and "--auth" in refusal and "--insecure" in refusal
    assert exposure_refusal(_config(host="0.0.0.0", auth=True)) is None
    assert exposure_refusal(_config(host="0.0.0.0", insecure=True)) is None
    assert exposure_refusal(_config()) is None
    assert "together" in (exposure_refusal(_config(tls_cert="c.pem")) or "")


def test_serve_refuses_at_once(redis_url: str, namespace: str) -> None:
    result = CliRunner().invoke(
        build_app(), ["serve", "--host", "0.0.0.0", "--port", "0", "--redis-url", redis_url], env=PIPED
    )
    assert result.exit_code == 2
    assert "refusing to serve 0.0.0.0 without auth" in result.output

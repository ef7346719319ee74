"""``jobledger serve`` ignores body keys it does not know, naming them in a header and its log, as
Ocypod ignores them; ``--strict`` (or ``JOBLEDGER_STRICT``) refuses them."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
import redis

from tests.ocypod.server import serve, wipe

BODY = b'{"timeout": "10m", "timeot": "1m"}'  # a typo Ocypod would ignore
JSON = {"content-type": "application/json"}  # as every Ocypod client sends it


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_a_strict_server_refuses_unknown_keys(tmp_path: Path, redis_url: str, how: str) -> None:
    args, env = (("--strict",), {}) if how == "flag" else ((), {"JOBLEDGER_STRICT": "true"})
    client = redis.Redis.from_url(redis_url)
    with serve(redis_url, tmp_path / "serve.log", *args, env=env) as server:
        try:
            answer = httpx2.put(f"{server.url}/queue/q", content=BODY, headers=JSON, timeout=10)
            assert answer.status_code == 400
            assert "unknown field(s) timeot" in answer.json()["error"]
            assert httpx2.get(f"{server.url}/queue/q", timeout=10).status_code == 404
        finally:
            wipe(client, server.namespace)
            client.close()


def test_a_lenient_server_names_them(tmp_path: Path, redis_url: str) -> None:
    client, log = redis.Redis.from_url(redis_url), tmp_path / "serve.log"
    with serve(redis_url, log) as server:
        try:
            answer = httpx2.put(f"{server.url}/queue/q", content=BODY, headers=JSON, timeout=10)
            assert (answer.status_code, answer.headers["x-jobledger-ignored-keys"]) == (201, "timeot")
        finally:
            wipe(client, server.namespace)
            client.close()
    assert "PUT /queue/q: ignored unknown field(s) timeot" in log.read_text()

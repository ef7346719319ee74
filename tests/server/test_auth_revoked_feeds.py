"""A feed that goes on (SSE, a long-poll) ends when the token it was opened with is revoked, within a
second, against a real served app; a feed of another token goes on."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx2
import pytest

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret, revoke_token
from tests.support.live_server import eventually, live_server


def token(ledger: Ledger, name: str, *scopes: str) -> dict[str, str]:
    secret = new_secret()
    ledger.run(create_token(name, list(scopes), digest(secret)))
    return {"authorization": f"Bearer {secret}"}


@pytest.fixture
def server(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace, auth=True) as url:
        yield url


def test_a_live_feed_ends_when_its_token_is_revoked(server: str, ledger: Ledger) -> None:
    doomed, kept = token(ledger, "doomed", "read"), token(ledger, "kept", "read")
    lines: dict[str, list[str]] = {"doomed": [], "kept": []}
    done: dict[str, float] = {}

    def read(name: str, headers: dict[str, str]) -> None:
        with httpx2.stream("GET", f"{server}/events/stream", headers=headers, timeout=30) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                lines[name].append(line)
                if name == "kept" and line.startswith("data: ") and "token_revoked" in line:
                    break
        done[name] = time.monotonic()

    threads = [
        threading.Thread(target=read, args=a, daemon=True) for a in (("doomed", doomed), ("kept", kept))
    ]
    for thread in threads:
        thread.start()
    eventually(lambda: all(lines[n] for n in lines))  # both feeds are following
    revoked_at = time.monotonic()
    ledger.run(revoke_token("doomed"))
    for thread in threads:
        thread.join(timeout=10)
    assert "doomed" in done and done["doomed"] - revoked_at < 1.0, "the feed did not end within a second"
    assert "event: error" in lines["doomed"]
    error = json.loads(lines["doomed"][lines["doomed"].index("event: error") + 1][len("data: ") :])
    assert error == {"error": "the token was revoked", "status": 401}
    assert "event: error" not in lines["kept"]  # the other token's feed saw the revocation and went on
    # the revoked token opens nothing more
    assert httpx2.get(f"{server}/events", headers=doomed).status_code == 401


def test_a_long_poll_ends_when_its_token_is_revoked(server: str, ledger: Ledger) -> None:
    admin = token(ledger, "admin", "admin")
    worker = token(ledger, "worker", "work:q")
    assert httpx2.put(f"{server}/queue/q", json={}, headers=admin).status_code == 201
    answer: dict[str, httpx2.Response] = {}

    def poll() -> None:
        answer["r"] = httpx2.get(f"{server}/queue/q/job?wait=20s", headers=worker, timeout=30)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    time.sleep(0.3)  # the long-poll is waiting
    revoked_at = time.monotonic()
    ledger.run(revoke_token("worker"))
    thread.join(timeout=10)
    assert "r" in answer and time.monotonic() - revoked_at < 1.0, "the long-poll did not end within a second"
    assert answer["r"].status_code == 401
    assert answer["r"].json() == {"error": "the token was revoked"}
    assert "invalid_token" in answer["r"].headers["www-authenticate"]
    # a job created now stays queued: the revoked poll took nothing
    created = httpx2.post(f"{server}/queue/q/job", json={}, headers=admin).json()
    assert httpx2.get(f"{server}/job/{created}/status", headers=admin).json() == "queued"

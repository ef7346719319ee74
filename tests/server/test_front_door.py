"""The front door: with auth off only loopback names (and ``[server] allowed_hosts``) are answered,
whatever the route but the probes; a write a browser marks as cross-site is refused on the API as on
the dashboard, comparing its Origin with the names the server answers to, never with the request's
own Host alone; every answer says nosniff."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest, new_secret
from tests.support.http import app_client, error_of, unchanged
from tests.support.live_server import live_server

QUEUES = ("q",)


@pytest.mark.parametrize(
    "host", ["localhost", "localhost:8023", "app.localhost:1", "127.0.0.1:9", "127.8.9.10", "[::1]:8023"]
)
def test_loopback_hosts_are_answered(api: TestClient, host: str) -> None:
    assert api.get("/queue", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["rebind.example:8023", "localhost.example.com", "10.0.0.1", "", "a b", "[::2]:80", "evil@localhost"],
)
def test_other_hosts_are_refused_on_reads_and_writes(
    api: TestClient, client: redis.Redis, namespace: str, host: str
) -> None:
    with unchanged(client, namespace):
        assert "host" in error_of(api.get("/queue/q", headers={"host": host}), 400)
        assert "host" in error_of(api.post("/queue/q/job", json={}, headers={"host": host}), 400)
        assert "host" in error_of(api.get("/ui", headers={"host": host}), 400)


def test_probes_answer_any_host(api: TestClient) -> None:
    for path in ("/health", "/ready"):
        assert api.get(path, headers={"host": "10.1.2.3:8023"}).status_code == 200


def test_allowed_hosts_are_answered(redis_url: str, namespace: str) -> None:
    with app_client(redis_url, namespace, allowed_hosts=["jobs.example.com", "*.internal"]) as api:
        for host in ("jobs.example.com", "JOBS.example.com:8023", "a.b.internal", "localhost"):
            assert api.get("/queue", headers={"host": host}).status_code == 200, host
        for host in ("example.com", "internal", "jobs.example.com.evil"):
            error_of(api.get("/queue", headers={"host": host}), 400)


def test_with_auth_on_the_api_answers_any_host_and_the_dashboard_does_not(
    redis_url: str, namespace: str, ledger: Ledger
) -> None:
    secret = new_secret()
    ledger.run(create_token("ops", ["admin"], digest(secret)))
    bearer = {"authorization": f"Bearer {secret}"}
    with app_client(redis_url, namespace, auth=True) as api:
        assert api.get("/queue", headers={**bearer, "host": "jobs.example.com"}).status_code == 200
        error_of(api.get("/ui", headers={"host": "jobs.example.com"}), 400)
        error_of(api.get("/ui/signin", headers={"host": "jobs.example.com"}), 400)


CROSS = [
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},
    {"origin": "https://evil.example"},
    {"origin": "null"},
    {"origin": "http://localhost:9999"},  # another port of this machine: another origin
    {"origin": "http://127.0.0.1"},  # another loopback name than the one the request went to
]


@pytest.mark.parametrize("headers", CROSS)
@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/queue/q/job"), ("PUT", "/queue/other"), ("DELETE", "/queue/q"), ("GET", "/queue/q/job"),
     ("PATCH", "/jobs"), ("POST", "/ui/signout")],
)  # fmt: skip
def test_cross_site_writes_are_refused(
    api: TestClient, client: redis.Redis, namespace: str, method: str, path: str, headers: dict[str, str]
) -> None:
    api.post("/queue/q/job", json={"input": 1})
    with unchanged(client, namespace):
        response = api.request(method, path, json={}, headers=headers)
    assert "another site" in error_of(response, 403)


def test_with_auth_on_a_cross_site_write_meets_the_token_check(
    redis_url: str, namespace: str, ledger: Ledger
) -> None:
    """A bearer token is never sent by a browser of its own accord: with auth on, the API leaves
    a page of another origin that holds one to the token check, as any other client."""
    secret = new_secret()
    ledger.run(create_token("app", ["admin"], digest(secret)))
    cross = {"origin": "https://app.example", "sec-fetch-site": "cross-site"}
    with app_client(redis_url, namespace, auth=True) as api:
        assert api.put("/queue/q", json={}, headers=cross).status_code == 401
        bearer = {**cross, "authorization": f"Bearer {secret}"}
        assert api.put("/queue/q", json={}, headers=bearer).status_code in (200, 201, 204)
        assert "another site" in error_of(api.post("/ui/signout", headers=cross), 403)


@pytest.mark.parametrize(
    "headers",
    [{}, {"sec-fetch-site": "same-origin"}, {"sec-fetch-site": "none"}, {"origin": "http://localhost"},
     {"origin": "http://localhost:80", "sec-fetch-site": "same-origin"}],
)  # fmt: skip
def test_own_and_headerless_writes_pass(api: TestClient, headers: dict[str, str]) -> None:
    assert api.post("/queue/q/job", json={"input": 1}, headers=headers).status_code == 201


def test_cross_site_reads_pass(api: TestClient) -> None:
    """A read is not a write: a browser cannot read its answer across origins anyway."""
    assert api.get("/queue/q", headers={"sec-fetch-site": "cross-site"}).status_code == 200


def test_a_rebound_origin_is_refused_even_when_it_matches_the_host(
    redis_url: str, namespace: str, ledger: Ledger, client: redis.Redis
) -> None:
    """With auth on the API answers any Host; the dashboard's form post from a rebound name names
    itself in both Host and Origin, and is still refused."""
    with app_client(redis_url, namespace, auth=True) as api, unchanged(client, namespace):
        response = api.post("/ui/signout", headers={"host": "rebind.example:8023",
                                                    "origin": "http://rebind.example:8023"})  # fmt: skip
    assert response.status_code in (400, 403)
    with app_client(redis_url, namespace, auth=True, allowed_hosts=["jobs.example.com"]) as api:
        same = {"host": "jobs.example.com", "origin": "https://jobs.example.com"}
        assert api.post("/ui/signout", headers=same, follow_redirects=False).status_code == 303


def test_every_answer_says_nosniff(api: TestClient) -> None:
    for path in ("/queue", "/job/999", "/ui/static/ui.css", "/health"):
        response = api.get(path)
        assert response.headers["x-content-type-options"] == "nosniff"
    assert "strict-transport-security" not in api.get("/queue").headers


@pytest.fixture
def served(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace) as url:
        yield url


def test_a_served_process_refuses_a_foreign_host(served: str) -> None:
    with httpx2.Client(base_url=served, timeout=5) as http:
        assert http.put("/queue/q").status_code == 201
        refused = http.get("/queue/q", headers={"host": "rebind.example:8023"})
        assert refused.status_code == 400 and "host" in refused.json()["error"]
        assert http.get("/queue/q").status_code == 200


BODY_ROUTES = [("POST", "/queue/q/job"), ("POST", "/queue/q/jobs"), ("PUT", "/queue/q"), ("PATCH", "/jobs"),
               ("POST", "/launcher"), ("PATCH", "/job/1"), ("PUT", "/job/1/output"),
               ("PUT", "/job/1/heartbeat")]  # fmt: skip


@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_that_is_not_said_to_be_json_is_415(
    api: TestClient, client: redis.Redis, namespace: str, method: str, path: str, content_type: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    with unchanged(client, namespace):
        response = api.request(method, path, content=b'{"input": 1}', headers=headers)
    assert "content-type: application/json" in error_of(response, 415)


@pytest.mark.parametrize(
    "content_type", ["application/json", "Application/JSON; charset=utf-8", "application/vnd.api+json"]
)
def test_json_media_types_are_read(api: TestClient, content_type: str) -> None:
    response = api.post("/queue/q/job", content=b'{"input": 1}', headers={"content-type": content_type})
    assert response.status_code == 201


def test_an_empty_body_needs_no_content_type(api: TestClient) -> None:
    """Ocypod's clients PUT a queue of default settings with no body at all."""
    assert api.put("/queue/other").status_code == 201


def test_probes_name_no_address_of_a_redis_they_cannot_reach(namespace: str) -> None:
    dead = "redis://:hunter2@127.0.0.1:1/0"
    with app_client(dead, namespace) as api:
        health = api.get("/health", headers={"host": "10.1.2.3"})
        ready = api.get("/ready", headers={"host": "10.1.2.3"})
    assert health.json() == {"status": "unhealthy", "error": "Redis is unreachable"}
    assert ready.status_code == 503 and ready.json() == {"error": "not ready: Redis is unreachable"}


@pytest.mark.parametrize(("listen", "answered"), [("10.0.0.5", True), ("0.0.0.0", False), ("::", False)])
def test_the_address_served_on_is_answered(
    redis_url: str, namespace: str, listen: str, answered: bool
) -> None:
    with app_client(redis_url, namespace, host=listen, insecure=True) as api:
        assert (api.get("/queue", headers={"host": "10.0.0.5:8023"}).status_code == 200) == answered

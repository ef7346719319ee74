"""Redis going away and coming back: requests answer 503 with a JSON error, ``/health`` answers 200
``unhealthy``, and once a server listens again on the same port the same app serves again."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.support.http import DEFAULT_SETTINGS, app_client, error_of, no_content
from tests.support.private_redis import PrivateServer, wait_until

#: Requests of every kind, reads and writes, against a queue "q" with job 1 queued.
REQUESTS: list[tuple[str, str, object]] = [
    ("GET", "/queue", None),
    ("GET", "/queue/q", None),
    ("PUT", "/queue/q", {"retries": 1}),
    ("GET", "/queue/q/size", None),
    ("GET", "/queue/q/job_ids", None),
    ("POST", "/queue/q/job", {"input": 1}),
    ("GET", "/job/1", None),
    ("PATCH", "/job/1", {"status": "cancelled"}),
    ("GET", "/job/1/output", None),
    ("PUT", "/job/1/heartbeat", None),
    ("GET", "/tag/t", None),
    ("GET", "/info", None),
    ("GET", "/queue/q/job", None),
    ("DELETE", "/job/1", None),
    ("DELETE", "/queue/q", None),
]


def set_up(api: TestClient) -> None:
    """Queue "q" with job 1 queued and tagged "t"."""
    assert api.put("/queue/q").status_code == 201
    assert api.post("/queue/q/job", json={"input": 1, "tags": ["t"]}).json() == 1


def assert_unavailable(api: TestClient) -> None:
    for method, path, body in REQUESTS:
        message = error_of(api.request(method, path, json=body), 503)
        assert "redis is unreachable" in message, (method, path, message)
    health = api.get("/health")
    assert health.status_code == 200
    assert health.json()["status"] == "unhealthy"
    assert set(health.json()) == {"status", "error"}
    assert "redis is unreachable" in health.json()["error"].lower()


def test_503_while_redis_is_down_and_service_again_after_restart(private: PrivateServer) -> None:
    with app_client(private.url, "outage") as api:
        set_up(api)
        assert api.get("/health").json() == {"status": "healthy"}
        assert api.get("/job/1?fields=status,tags").json() == {"status": "queued", "tags": ["t"]}

        private.kill()
        assert_unavailable(api)
        assert_unavailable(api)  # a second round: a refused reconnect does not break the client

        private.start()  # same port, empty: the app must reconnect and load its scripts again
        wait_until(lambda: api.get("/health").json() == {"status": "healthy"}, "the app to see Redis again")
        set_up(api)
        assert api.get("/queue/q/job").json() == {"id": 1, "input": 1, "attempt": 1}
        no_content(api.patch("/job/1", json={"status": "completed", "output": "done"}))
        assert api.get("/job/1/output").json() == "done"
        assert api.get("/info").json()["statistics"]["total_jobs_completed"] == 1


def test_503_when_redis_was_never_there(tmp_path: Path) -> None:
    """The app starts without Redis (no queues configured), answers 503, then serves once it is up."""
    server = PrivateServer(tmp_path)
    with app_client(server.url, "late") as api:
        assert_unavailable(api)
        server.start()
        try:
            wait_until(lambda: api.get("/health").json() == {"status": "healthy"}, "the app to see Redis")
            set_up(api)
            assert api.get("/queue").json() == ["q"]
        finally:
            server.kill()


def test_configured_queues_are_applied_once_redis_comes_up(tmp_path: Path) -> None:
    server = PrivateServer(tmp_path)
    with app_client(server.url, "configured", queues={"cfg": {"timeout": "1h15m5s", "retries": 2}}) as api:
        error_of(api.get("/queue/cfg"), 503)
        server.start()
        try:
            wait_until(lambda: api.get("/queue/cfg").status_code == 200, "the configured queue")
            settings = api.get("/queue/cfg").json()
            assert settings == {**DEFAULT_SETTINGS, "timeout": "1h15m5s", "retries": 2}
        finally:
            server.kill()

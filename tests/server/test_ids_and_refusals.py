"""Ids and stream positions out of range are a 400 that never reaches Redis (never a 500, never a
traceback), after the token check; a 403 on a job reads the same whether the job is on a queue the
token does not cover or does not exist, and names no queue."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import create_token, digest
from tests.support.http import app_client, error_of, put_queue, unchanged

HUGE = "9" * 4301  # past Python's limit on converting digits to an int
OVER = str(2**63)  # past Redis's integers
POSITIONS = [OVER, f"1-{OVER}", f"{OVER}-0", HUGE, f"1-{HUGE}", "99999999999999999999999999-0"]


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    with app_client(redis_url, namespace) as client:
        put_queue(client, "q")
        yield client


ID_PATHS = [
    ("GET", "/job/{id}"), ("GET", "/job/{id}/status"), ("GET", "/job/{id}/history"), ("PATCH", "/job/{id}"),
    ("DELETE", "/job/{id}"), ("PUT", "/job/{id}/heartbeat"), ("GET", "/job/{id}/output"),
    ("GET", "/job/{id}/results"), ("GET", "/job/{id}/results.zip"), ("GET", "/job/{id}/files/a.txt"),
    ("GET", "/download/{id}"), ("GET", "/launcher/{id}"), ("DELETE", "/launcher/{id}"),
    ("GET", "/ui/job/{id}"),
    ("GET", "/events?job={id}"), ("GET", "/events/stream?job={id}"),
]  # fmt: skip


@pytest.mark.parametrize("raw", [HUGE, OVER, "0" * 5000 + OVER])
@pytest.mark.parametrize(("method", "path"), ID_PATHS)
def test_an_id_out_of_range_is_400(
    api: TestClient, client: redis.Redis, namespace: str, caplog: pytest.LogCaptureFixture,
    method: str, path: str, raw: str,
) -> None:  # fmt: skip
    with unchanged(client, namespace), caplog.at_level(logging.ERROR):
        response = api.request(method, path.format(id=raw), json={"status": "cancelled"})
    assert response.status_code == 400, response.text[:300]
    assert "out of range" in response.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_the_largest_id_is_merely_missing(api: TestClient) -> None:
    error_of(api.get(f"/job/{2**63 - 1}"), 404)


@pytest.mark.parametrize(
    "query",
    [f"limit={HUGE}", f"cursor={HUGE}", f"cursor={OVER}", f"count={HUGE}"],
)
def test_counts_and_cursors_out_of_range_are_400(api: TestClient, query: str) -> None:
    path = "/queue/q/job" if query.startswith("count") else "/queue/q/jobs"
    error_of(api.get(f"{path}?{query}"), 400)


def test_an_attempt_out_of_range_is_400(api: TestClient) -> None:
    job = api.post("/queue/q/job", json={}).json()
    response = api.put(f"/job/{job}/results/r.txt?attempt={HUGE}", content=b"x")
    assert "attempt" in error_of(response, 400)


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize(
    "path", ["/events?after={p}", "/events/stream?after={p}", "/ui/events/stream?after={p}"]
)
def test_a_stream_position_out_of_range_is_400_naming_no_redis_command(
    api: TestClient, caplog: pytest.LogCaptureFixture, path: str, position: str
) -> None:
    with caplog.at_level(logging.ERROR):
        response = api.get(path.format(p=position))
    assert response.status_code == 400, response.text[:300]
    assert "xread" not in response.text.lower() and "xrange" not in response.text.lower()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_timeline_position_out_of_range_is_400(api: TestClient) -> None:
    job = api.post("/queue/q/job", json={}).json()
    for query in (f"after={OVER}-0", f"prev={HUGE}"):
        assert api.get(f"/ui/job/{job}/stream?{query}").status_code == 400
    assert api.get(f"/ui/job/{job}/stream", headers={"last-event-id": f"{OVER}-1"}).status_code == 400


TOKENS = {"a": ["produce:qa"], "b": ["produce:qb"], "admin": ["admin"]}


def bearer(name: str) -> dict[str, str]:
    return {"authorization": f"Bearer secret-{name}"}


@pytest.fixture
def secured(redis_url: str, namespace: str, ledger: Ledger) -> Iterator[TestClient]:
    for name, scopes in TOKENS.items():
        ledger.run(create_token(name, scopes, digest(f"secret-{name}")))
    with app_client(redis_url, namespace, auth=True) as client:
        for queue in ("qa", "qb"):
            client.put(f"/queue/{queue}", json={}, headers=bearer("admin")).raise_for_status()
        yield client


def test_a_bad_id_with_a_bogus_token_is_401(secured: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        for headers in ({}, {"authorization": "Bearer bogus"}):
            error_of(secured.get(f"/job/{HUGE}", headers=headers), 401)
            error_of(secured.get(f"/events?job={HUGE}", headers=headers), 401)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "out of range" in error_of(secured.get(f"/job/{HUGE}", headers=bearer("a")), 400)


@pytest.mark.parametrize(
    "path", ["/job/{id}", "/job/{id}/status", "/job/{id}/history", "/job/{id}/results", "/events?job={id}"]
)
def test_a_job_elsewhere_reads_as_a_job_that_does_not_exist(secured: TestClient, path: str) -> None:
    other = secured.post("/queue/qb/job", json={"input": "b's"}, headers=bearer("b")).json()
    elsewhere = secured.get(path.format(id=other), headers=bearer("a"))
    missing = secured.get(path.format(id=other + 1000), headers=bearer("a"))
    assert elsewhere.status_code == missing.status_code == 403
    assert elsewhere.json() == missing.json()
    assert "qb" not in elsewhere.text
    assert secured.get(path.format(id=other + 1000), headers=bearer("admin")).status_code in (404, 200)


def test_a_batch_on_a_job_elsewhere_names_no_queue(secured: TestClient, ledger: Ledger) -> None:
    ledger.run(create_token("wa", ["work:qa"], digest("secret-wa")))
    other = secured.post("/queue/qb/job", json={}, headers=bearer("b")).json()
    elsewhere = secured.patch("/jobs", json={"updates": [{"id": other, "progress": 5}]}, headers=bearer("wa"))
    gone = {"updates": [{"id": other + 1000, "progress": 5}]}
    missing = secured.patch("/jobs", json=gone, headers=bearer("wa"))
    assert elsewhere.status_code == missing.status_code == 403
    assert elsewhere.json() == missing.json() and "qb" not in elsewhere.text

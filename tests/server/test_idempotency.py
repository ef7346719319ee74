"""Idempotency-Key on the creating routes: the same request sent again is answered as the first time
and appends nothing; the key sent with another request is a 422; a bad key a 400; the key is
recorded in the creating event (history shows it) and forgotten by the scheduler after its window."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.events import IdempotencyExpired, decode_entry
from jobledger.ledger.runner import Ledger
from jobledger.replay.source import xrange
from tests.support.http import app_client, error_of, put_queue, state_of, tick_at, unchanged
from tests.support.ledger import ID_STEP, in_partition_of, queue_ledger

QUEUES = ("q", "other")

CRON = {"type": "@cron", "arguments": "*/5 * * * * *", "queue": "q"}

#: route -> (path, a body, another body)
ROUTES: dict[str, tuple[str, Any, Any]] = {
    "job": ("/queue/q/job", {"input": {"to": "ada"}, "tags": ["a"]}, {"input": {"to": "bob"}}),
    "jobs": ("/queue/q/jobs", [{"input": 1}, {"input": 2, "unique_key": "u"}], [{"input": 3}]),
    "launcher": ("/launcher", CRON, {**CRON, "arguments": "*/7 * * * * *"}),
}


def post(api: TestClient, path: str, body: Any, key: str | None = "k-1", **headers: str) -> Any:
    if key is not None:
        headers = {"idempotency-key": key, **headers}
    return api.post(path, json=body, headers=headers)


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_same_request_again_is_answered_as_the_first_time(
    api: TestClient, client: redis.Redis, namespace: str, route: str
) -> None:
    path, body, _ = ROUTES[route]
    first = post(api, path, body)
    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    with unchanged(client, namespace):
        again = post(api, path, body)
        # the same request however its JSON is written: keys in another order, other spacing
        reordered = api.post(
            path,
            content=_reordered(body),
            headers={"idempotency-key": "k-1", "content-type": "application/json"},
        )
    for answer in (again, reordered):
        assert answer.status_code == first.status_code
        assert answer.json() == first.json()
        assert answer.headers.get("location") == first.headers.get("location")
        assert answer.headers["idempotent-replayed"] == "true"


def _reordered(body: Any) -> bytes:
    import json

    def flip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: flip(value[k]) for k in reversed(list(value))}
        if isinstance(value, list):
            return [flip(v) for v in value]
        return value

    return json.dumps(flip(body), indent=2).encode()


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_key_with_another_request_is_refused(
    api: TestClient, client: redis.Redis, namespace: str, route: str
) -> None:
    path, body, other = ROUTES[route]
    assert post(api, path, body).status_code == 201
    with unchanged(client, namespace):
        assert "idempotency-key" in error_of(post(api, path, other), 422)


def test_the_hash_covers_the_route_and_the_queue(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    assert post(api, "/queue/q/job", {"input": 1}).status_code == 201
    other = in_partition_of(namespace, "q", "other")  # a key is compared within its queue's partition
    put_queue(api, other)
    with unchanged(client, namespace):
        error_of(post(api, f"/queue/{other}/job", {"input": 1}), 422)
        error_of(post(api, "/queue/q/jobs", [{"input": 1}]), 422)


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there", "line\u007f"])
def test_a_bad_key_is_a_400(api: TestClient, client: redis.Redis, namespace: str, key: str) -> None:
    with unchanged(client, namespace):
        response = api.post("/queue/q/job", json={}, headers=[(b"idempotency-key", key.encode("latin-1"))])
        assert "idempotency-key" in error_of(response, 400)


def test_keys_of_255_printable_characters_are_taken(api: TestClient) -> None:
    key = "".join(chr(c) for c in range(0x20, 0x7F)) * 3
    assert post(api, "/queue/q/job", {}, key=key[:255]).status_code == 201


def test_bad_input_with_a_key_records_nothing(api: TestClient, client: redis.Redis, namespace: str) -> None:
    with unchanged(client, namespace):
        error_of(post(api, "/queue/q/job", {"retries": -1}), 400)
        error_of(post(api, "/queue/nowhere/job", {}), 404)
    # the key is still free: the next request with it is a new one
    assert post(api, "/queue/q/job", {"input": 2}).status_code == 201


def test_history_shows_the_key(api: TestClient) -> None:
    job_id = post(api, "/queue/q/job", {"input": 1}, key="history-key").json()
    created = api.get(f"/job/{job_id}/history").json()[0]
    assert created["type"] == "job_created"
    assert created["data"]["idempotency_key"] == "history-key"
    assert len(created["data"]["request_hash"]) == 64


def test_a_batch_answers_its_ids_again_even_those_a_unique_key_held(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    held = post(api, "/queue/q/job", {"unique_key": "u"}, key=None).json()
    batch = [{"unique_key": "u"}, {"unique_key": "v"}, {"unique_key": "v"}, {}]
    first = post(api, "/queue/q/jobs", batch, key="batch")
    assert first.status_code == 201
    assert first.json() == [held, held + ID_STEP, held + ID_STEP, held + 2 * ID_STEP]
    with unchanged(client, namespace):
        assert post(api, "/queue/q/jobs", batch, key="batch").json() == first.json()


def test_a_create_answered_by_a_unique_key_records_no_key(api: TestClient, client: redis.Redis) -> None:
    held = post(api, "/queue/q/job", {"unique_key": "u"}, key=None).json()
    answer = post(api, "/queue/q/job", {"unique_key": "u"}, key="unrecorded")
    assert (answer.status_code, answer.json()) == (200, held)
    assert post(api, "/queue/q/job", {"input": 1}, key="unrecorded").status_code == 201


def test_the_key_is_forgotten_after_its_window(
    redis_url: str, client: redis.Redis, namespace: str, ledger: Ledger
) -> None:
    with app_client(redis_url, namespace, idempotency_window="1h") as api:
        put_queue(api, "q")
        first = post(api, "/queue/q/job", {"input": 1}).json()
        assert tick_at(ledger, timedelta(minutes=59))["idempotency"] == []
        assert post(api, "/queue/q/job", {"input": 1}).json() == first
        assert tick_at(ledger, timedelta(minutes=61))["idempotency"] == ["local:k-1"]
        mine = queue_ledger(ledger)  # where q's keys are
        keys = mine.keys
        assert not mine.client.exists(keys.build("idempotency", key="local:k-1"))
        assert mine.client.zcard(keys.build("due_idempotency")) == 0
        last = decode_entry(*list(xrange(mine.client, keys.events))[-1])
        assert (last.type, last.queue, last.data) == (
            "idempotency_expired",
            "q",
            IdempotencyExpired(key="local:k-1"),
        )
        events = state_of(client, namespace).events
        # a new request with the key, even the same body, now creates
        second = post(api, "/queue/q/job", {"input": 1})
        assert second.status_code == 201 and second.json() == first + ID_STEP
        assert state_of(client, namespace).events == events + 1

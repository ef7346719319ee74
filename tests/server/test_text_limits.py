"""Every free-text value that lands in an event has a maximum: past it, a 400 that says so, and
nothing appended (one 195 KiB worker id used to add 119 MB to Redis).  The table of maxima in
docs/http-api.md is the constants' own."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.contract.files import MAX_FILES, MAX_NAME
from jobledger.ledger import requests
from jobledger.ledger.launchers import MAX_CRON
from jobledger.ledger.tokens import MAX_SCOPES, ScopeError, create_token
from jobledger.server.upload_form import MAX_FIELD, MAX_FIELDS
from jobledger.worker.worker import Worker
from tests.support.http import app_client, create_job, error_of, unchanged

BODY_LIMIT = 256 * 1024
DOCS = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, max_body_size=BODY_LIMIT) as client:
        client.put("/queue/q", json={}).raise_for_status()
        create_job(client, input=1)
        create_job(client, input=2)
        yield client


def refused(api: TestClient, client: redis.Redis, namespace: str, method: str, url: str,
            **request: Any) -> str:  # fmt: skip
    with unchanged(client, namespace):
        return error_of(api.request(method, url, **request), 400)


@pytest.mark.parametrize(
    "worker", ["w" * (requests.MAX_WORKER_ID + 1), "w" * 195 * 1024, "bad\x1b[2Jid", "x\x85"]
)
def test_a_worker_id_past_its_maximum_or_with_a_control_character_is_400(
    api: TestClient, client: redis.Redis, namespace: str, worker: str
) -> None:
    in_url = {"worker": worker[: 60 * 1024]}  # as much as a URL takes
    assert "worker id" in refused(api, client, namespace, "GET", "/queue/q/job", params=in_url)
    batch = {"fetch": {"queue": "q", "count": 2, "worker": worker}}
    assert "worker" in refused(api, client, namespace, "PATCH", "/jobs", json=batch)


def test_a_worker_id_at_its_maximum_is_recorded(api: TestClient) -> None:
    worker = "é" * requests.MAX_WORKER_ID
    job = api.get("/queue/q/job", params={"worker": worker}).json()
    assert api.get(f"/job/{job['id']}?fields=worker").json()["worker"] == worker


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"tags": [f"t{i}" for i in range(requests.MAX_TAGS + 1)]}, "tags"),
        ({"tags": ["t" * (requests.MAX_TAG + 1)]}, "tags"),
        ({"retry_on": [f"k{i}" for i in range(requests.MAX_ERROR_KINDS + 1)]}, "retry_on"),
        ({"no_retry_on": ["k" * (requests.MAX_ERROR_KIND + 1)]}, "no_retry_on"),
        ({"unique_key": "u" * (requests.MAX_KEY + 1)}, "unique_key"),
        ({"quota_key": "q" * (requests.MAX_KEY + 1)}, "quota_key"),
    ],
)
def test_job_texts_past_their_maxima_are_400(
    api: TestClient, client: redis.Redis, namespace: str, body: dict[str, Any], named: str
) -> None:
    assert named in refused(api, client, namespace, "POST", "/queue/q/job", json=body)


def test_a_queue_lists_at_most_its_maximum_of_error_kinds(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    kinds = [f"k{i}" for i in range(requests.MAX_ERROR_KINDS + 1)]
    assert "retry_on" in refused(api, client, namespace, "PUT", "/queue/q", json={"retry_on": kinds})


def test_a_cron_expression_past_its_maximum_is_400(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    seconds = ",".join(["0"] * (MAX_CRON // 2))
    launcher = {"type": "@cron", "arguments": f"{seconds} * * * * *", "queue": "q"}
    assert str(MAX_CRON) in refused(api, client, namespace, "POST", "/launcher", json=launcher)


def test_the_text_fields_of_an_upload_are_bounded_by_the_body_limit(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    with app_client(redis_url, namespace, max_body_size=1000) as api:
        api.put("/queue/example", json={}).raise_for_status()
        fields = {"user_id": "1", "service": "example", "a": "x" * 600, "b": "y" * 600}
        with unchanged(client, namespace):
            answer = api.post("/upload", files=[("file", ("f.txt", b"x"))], data=fields)
            assert answer.status_code == 400 and "limit" in answer.json()["error"]


def test_a_worker_or_a_token_past_its_maxima_is_refused_before_it_runs(redis_url: str) -> None:
    with pytest.raises(ValueError, match="worker id"):
        Worker(lambda job: None, "q", transport="redis", redis_url=redis_url, worker_id="w" * 256)
    with pytest.raises(ScopeError, match=str(MAX_SCOPES)):
        create_token("many", [f"produce:q{i}" for i in range(MAX_SCOPES + 1)], "0" * 64)


def test_the_documented_maxima_are_the_code_s() -> None:
    """Each row of docs/http-api.md's table of maxima names the number the code holds."""
    section = DOCS.read_text().split("### Maxima of free text", 1)[1].split("\n## ", 1)[0]
    documented = {m[0]: int(m[1]) for m in re.findall(r"^\| ([^|]+?) \| (\d+)", section, re.MULTILINE)}
    assert documented == {
        "worker id": requests.MAX_WORKER_ID,
        "tag": requests.MAX_TAG,
        "tags of a job": requests.MAX_TAGS,
        "unique_key, quota_key": requests.MAX_KEY,
        "error kind": requests.MAX_ERROR_KIND,
        "error kinds of retry_on, no_retry_on": requests.MAX_ERROR_KINDS,
        "error message, progress message": requests.MAX_MESSAGE,
        "traceback": requests.MAX_TRACEBACK,
        "file or result name": MAX_NAME,
        "files of a job": MAX_FILES,
        "media type": 255,
        "queue name": 255,
        "Idempotency-Key": 255,
        "token name": 128,
        "token scope": 255,
        "scopes of a token": MAX_SCOPES,
        "cron expression": MAX_CRON,
        "/upload text field": MAX_FIELD,
        "/upload text fields": MAX_FIELDS,
    }

"""Bad input over HTTP: each request gets the right 4xx, a JSON error that names what was wrong, and
appends no event and changes no projection."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.server.inputs import MAX_DEPTH
from tests.support.http import app_client, create_job, error_of, fetch, put_queue, unchanged
from tests.support.ledger import nth_id

LIMIT = 1024
JSON = {"content-type": "application/json"}


@pytest.fixture
def api(redis_url: str, namespace: str) -> Iterator[TestClient]:
    """Queue ``q`` with job 1 running (attempt 1) and job 2 queued (on a split ledger, the first and
    second ids of q's partition); bodies over 1 KiB refused."""
    with app_client(redis_url, namespace, max_body_size=LIMIT) as client:
        put_queue(client)
        assert create_job(client, input="a", tags=["t"]) == nth_id(namespace, 1)
        assert fetch(client)["id"] == nth_id(namespace, 1)
        assert create_job(client, input="b") == nth_id(namespace, 2)
        yield client


#: A path of job 1 (its id, then the end, a ``/`` or a ``?``).
_JOB_1 = re.compile(r"^/job/1(?=$|[/?])")


def refused(api: TestClient, client: redis.Redis, namespace: str, method: str, url: str, status: int,
            **request: Any) -> str:  # fmt: skip
    """Send the request (job 1's path naming the fixture's running job); assert it is refused with
    ``status`` and changes nothing; the message."""
    url = _JOB_1.sub(f"/job/{nth_id(namespace, 1)}", url)
    if "content" in request:  # raw bytes, sent as a JSON client sends them
        request["headers"] = {**JSON, **request.get("headers", {})}
    with unchanged(client, namespace):
        return error_of(api.request(method, url, **request), status)


# Malformed JSON and bodies that are not objects

MALFORMED = [b"{", b'{"timeout": }', b"{'retries': 1}", b"nope", b'{"a": 1} trailing', b"\xff\xfe{}"]


@pytest.mark.parametrize("body", MALFORMED)
@pytest.mark.parametrize(
    ("method", "url"),
    [("PUT", "/queue/q"), ("POST", "/queue/q/job"), ("PATCH", "/job/1"), ("PUT", "/job/1/output"),
     ("PUT", "/job/1/heartbeat")],
)  # fmt: skip
def test_malformed_json_is_400(api: TestClient, client: redis.Redis, namespace: str, method: str, url: str,
                               body: bytes) -> None:  # fmt: skip
    message = refused(api, client, namespace, method, url, 400, content=body)
    assert "not valid json" in message


@pytest.mark.parametrize(
    "body",
    [b'{"input": NaN}', b'{"input": [Infinity]}', b'{"input": -Infinity}', b'{"input": 1e400}',
     b'{"timeout": Infinity}', b'{"timeout": 1e999}'],
)  # fmt: skip
def test_non_standard_numbers_are_400(api: TestClient, client: redis.Redis, namespace: str,
                                      body: bytes) -> None:  # fmt: skip
    """Python's json takes NaN and Infinity; stored, they would make the job unreadable (500)."""
    message = refused(api, client, namespace, "POST", "/queue/q/job", 400, content=body)
    assert "not valid json" in message
    assert any(word in message for word in ("nan", "infinity", "out of range"))


@pytest.mark.parametrize(
    "body", [b'{"input": "\\ud800"}', b'{"input": {"\\udc00": 1}}', b'{"tags": ["\\udfff"]}'],
)  # fmt: skip
def test_lone_surrogates_are_400(api: TestClient, client: redis.Redis, namespace: str, body: bytes) -> None:
    message = refused(api, client, namespace, "POST", "/queue/q/job", 400, content=body)
    assert "surrogate" in message


def test_a_paired_surrogate_escape_is_fine(api: TestClient) -> None:
    response = api.post("/queue/q/job", content=b'{"input": "\\ud83d\\ude00"}', headers=JSON)
    assert response.status_code == 201
    assert api.get(f"/job/{response.json()}").json()["input"] == "\U0001f600"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
def test_nesting_too_deep_is_400(redis_url: str, client: redis.Redis, namespace: str, depth: int) -> None:
    body = b'{"input": ' + b"[" * depth + b"]" * depth + b"}"
    with app_client(redis_url, namespace) as roomy:  # the default limit, 256 KiB, lets the body in
        put_queue(roomy)
        message = refused(roomy, client, namespace, "POST", "/queue/q/job", 400, content=body)
    assert f"nested too deeply: at most {MAX_DEPTH} levels" in message


def test_nesting_up_to_the_limit_reads_back(redis_url: str, namespace: str) -> None:
    deep: Any = "bottom"
    for _ in range(MAX_DEPTH - 1):  # the body object is one level
        deep = [deep]
    with app_client(redis_url, namespace) as roomy:
        put_queue(roomy)
        job_id = create_job(roomy, input=deep)
        assert roomy.get(f"/job/{job_id}").json()["input"] == deep
        assert fetch(roomy) == {"id": job_id, "input": deep, "attempt": 1}


@pytest.mark.parametrize("body", [b"[]", b"[1, 2]", b'"text"', b"3", b"null", b"true"])
@pytest.mark.parametrize(
    ("method", "url"), [("PUT", "/queue/q"), ("POST", "/queue/q/job"), ("PATCH", "/job/1")]
)
def test_a_body_that_is_not_an_object_is_400(api: TestClient, client: redis.Redis, namespace: str,
                                             method: str, url: str, body: bytes) -> None:  # fmt: skip
    message = refused(api, client, namespace, method, url, 400, content=body)
    assert "must be a json object" in message


def test_patch_with_an_empty_body_is_400(api: TestClient, client: redis.Redis, namespace: str) -> None:
    assert "empty" in refused(api, client, namespace, "PATCH", "/job/1", 400, content=b"  ")


# Wrong types, bad values: the message names the field (unknown fields: tests/server/test_api_ocypod.py)

FIELD_ERRORS: list[tuple[str, str, dict[str, Any], tuple[str, ...]]] = [
    ("PUT", "/queue/q", {"retries": "3"}, ("retries", "integer")),
    ("PUT", "/queue/q", {"retries": 1.5}, ("retries", "integer")),
    ("PUT", "/queue/q", {"retries": -1}, ("retries", "greater than or equal to 0")),
    ("PUT", "/queue/q", {"retries": True}, ("retries", "integer")),
    ("PUT", "/queue/q", {"retries": 10**20}, ("retries", "less than or equal")),
    ("PUT", "/queue/q", {"timeout": True}, ("timeout", "boolean")),
    ("PUT", "/queue/q", {"timeout": "soon"}, ("timeout", "'soon' is not a duration")),
    ("PUT", "/queue/q", {"timeout": "1mo"}, ("timeout", "not a duration")),
    ("PUT", "/queue/q", {"timeout": "-5s"}, ("timeout", "negative")),
    ("PUT", "/queue/q", {"heartbeat_timeout": -1}, ("heartbeat_timeout", "negative")),
    ("PUT", "/queue/q", {"expires_after": None}, ("expires_after", "not none")),
    ("PUT", "/queue/q", {"expires_after": ["5m"]}, ("expires_after", "duration")),
    ("PUT", "/queue/q", {"timeout": 1e300}, ("timeout", "longer than 100 years")),
    ("PUT", "/queue/q", {"timeout": 10**30}, ("timeout", "longer than 100 years")),
    ("PUT", "/queue/q", {"timeout": "99999999999w"}, ("timeout", "longer than 100 years")),
    ("PUT", "/queue/q", {"retry_delays": "10s"}, ("retry_delays", "list")),
    ("PUT", "/queue/q", {"retry_delays": ["10s", "later"]}, ("retry_delays.1", "'later'")),
    ("POST", "/queue/q/job", {"retries": "3"}, ("retries", "integer")),
    ("POST", "/queue/q/job", {"tags": "t"}, ("tags", "list")),
    ("POST", "/queue/q/job", {"tags": [1]}, ("tags.0", "string")),
    ("POST", "/queue/q/job", {"tags": [""]}, ("tags.0", "at least 1 character")),
    ("POST", "/queue/q/job", {"tags": ["x" * 256]}, ("tags.0", "at most 255 characters")),
    ("POST", "/queue/q/job", {"timeout": True}, ("timeout", "boolean")),
    ("POST", "/queue/q/job", {"heartbeat_timeout": "1x"}, ("heartbeat_timeout", "'1x' is not a duration")),
    ("POST", "/queue/q/job", {"expires_after": 1e300}, ("expires_after", "longer than 100 years")),
    ("POST", "/queue/q/job", {"retry_delays": [True]}, ("retry_delays.0", "boolean")),
    ("PATCH", "/job/1", {"status": "done"}, ("status", "'queued', 'running'", "'timed_out' or 'scheduled'")),
    ("PATCH", "/job/1", {"status": 5}, ("status",)),
    ("PATCH", "/job/1", {"status": "completed", "attempt": "1"}, ("attempt", "integer")),
    ("PATCH", "/job/1", {"status": "completed", "attempt": 0}, ("attempt", "greater than or equal to 1")),
    ("PATCH", "/job/1", {"status": "completed", "attempt": True}, ("attempt", "integer")),
    ("PUT", "/job/1/heartbeat", {"attempt": "1"}, ("attempt", "positive integer")),
    ("PUT", "/job/1/heartbeat", {"attempt": 0}, ("attempt", "positive integer")),
    ("PUT", "/job/1/heartbeat", {"attempt": True}, ("attempt", "positive integer")),
]


@pytest.mark.parametrize(("method", "url", "body", "words"), FIELD_ERRORS)
def test_wrong_field_is_400_naming_it(
    api: TestClient, client: redis.Redis, namespace: str,
    method: str, url: str, body: dict[str, Any], words: tuple[str, ...],
) -> None:  # fmt: skip
    message = refused(api, client, namespace, method, url, 400, json=body)
    for word in words:
        assert word.lower() in message, (word, message)


@pytest.mark.parametrize(
    ("method", "url", "words"),
    [("PATCH", "/job/1?attempt=abc", "'abc'"), ("PATCH", "/job/1?attempt=0", "'0'"),
     ("PATCH", "/job/1?attempt=-1", "'-1'"), ("PUT", "/job/1/heartbeat?attempt=1.0", "'1.0'"),
     ("PUT", "/job/1/output?attempt=%C2%B2", "'²'"), ("GET", "/queue/q/job?count=%C2%B2", "count"),
     ("GET", "/queue/q/job?count=0", "count"), ("GET", "/queue/q/jobs?tag=" + "t" * 256, "1 to 255"),
     ("GET", "/queue/q/jobs?tag=", "1 to 255"), ("GET", "/tag/" + "t" * 256, "1 to 255")],
)  # fmt: skip
def test_a_bad_query_parameter_is_400(api: TestClient, client: redis.Redis, namespace: str, method: str,
                                      url: str, words: str) -> None:  # fmt: skip
    body = {"PATCH": {"status": "completed"}, "PUT": "output"}.get(method)
    message = refused(api, client, namespace, method, url, 400, json=body)
    assert words in message


@pytest.mark.parametrize("job_id", ["%C2%B2", "%D9%A3", "1.0", "0x1"])
def test_a_job_id_that_is_not_ascii_digits_is_404(api: TestClient, client: redis.Redis, namespace: str,
                                                  job_id: str) -> None:  # fmt: skip
    """Both "²" and "٣" pass ``str.isdigit``; neither names a job."""
    for method in ("GET", "PATCH", "DELETE"):
        body = {"status": "completed"} if method == "PATCH" else None
        assert "does not exist" in refused(api, client, namespace, method, f"/job/{job_id}", 404, json=body)


def test_an_unknown_job_field_is_400(api: TestClient) -> None:
    message = error_of(api.get("/job/1?fields=id,secret"), 400)
    assert "secret" in message and "known" in message


# Bad queue names

BAD_NAMES = ["a b", "x" * 256, "a:b", "a*b", "caf%C3%A9", "{q}"]


@pytest.mark.parametrize("name", BAD_NAMES)
@pytest.mark.parametrize(
    ("method", "suffix"),
    [("PUT", ""), ("GET", ""), ("DELETE", ""), ("GET", "/size"), ("GET", "/job_ids"), ("POST", "/job"),
     ("GET", "/job")],
)  # fmt: skip
def test_a_bad_queue_name_is_400(api: TestClient, client: redis.Redis, namespace: str, name: str,
                                 method: str, suffix: str) -> None:  # fmt: skip
    body: dict[str, Any] | None = {} if method in ("PUT", "POST") else None
    message = refused(api, client, namespace, method, f"/queue/{name}{suffix}", 400, json=body)
    assert "invalid queue name" in message and "1-255 characters" in message


def test_a_name_of_255_characters_is_fine(api: TestClient) -> None:
    assert api.put("/queue/" + "x" * 255).status_code == 201


# Bodies over max_body_size: 413


def big(size: int) -> bytes:
    return b'{"input": "' + b"x" * size + b'"}'


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [("PUT", "/queue/q", b'{"timeout": "' + b" " * LIMIT + b'5m"}'), ("POST", "/queue/q/job", big(LIMIT)),
     ("PATCH", "/job/1", b'{"output": "' + b"x" * LIMIT + b'"}'), ("PUT", "/job/1/output", big(LIMIT)),
     ("PUT", "/job/1/heartbeat", b" " * (LIMIT + 1))],
)  # fmt: skip
def test_a_body_over_the_limit_is_413(api: TestClient, client: redis.Redis, namespace: str, method: str,
                                      url: str, body: bytes) -> None:  # fmt: skip
    message = refused(api, client, namespace, method, url, 413, content=body)
    assert f"limit of {LIMIT} bytes" in message


def test_a_streamed_body_over_the_limit_is_413(api: TestClient, client: redis.Redis, namespace: str) -> None:
    """No content-length (chunked): the limit is counted while reading."""
    chunks = [b'{"input": "', b"x" * 600, b"x" * 600, b'"}']
    message = refused(api, client, namespace, "POST", "/queue/q/job", 413, content=iter(chunks))
    assert f"limit of {LIMIT} bytes" in message


def test_a_body_just_under_the_limit_is_fine(api: TestClient) -> None:
    body = big(LIMIT - len(big(0)))
    assert len(body) == LIMIT
    assert api.post("/queue/q/job", content=body, headers=JSON).status_code == 201

"""The server's spans, in process: one per request (the child of the request's traceparent), one per
ledger command it runs (the request's child); the create's traceparent recorded in job_created,
handed out with the fetched job, rebuilt by replay; a bad traceparent ignored, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.testclient import TestClient

from jobledger.contract.traceparent import formatted
from jobledger.ledger.keys import Keys
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from jobledger.runtime.config import TracingConfig
from jobledger.server.app import create_app
from jobledger.server.request_spans import CommandSpans
from tests.support.blobs import temporary_store
from tests.support.http import BASE_URL, make_config, put_queue
from tests.support.ledger import events

TRACE, PARENT = 0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331
TRACEPARENT = formatted(TRACE, PARENT, 1)


@pytest.fixture
def traced(redis_url: str, namespace: str) -> Iterator[TestClient]:
    """The app with tracing on, queue ``q`` made."""
    config = replace(make_config(namespace), tracing=TracingConfig(enabled=True))
    with temporary_store() as blobs:
        app = create_app(config, redis_url, run_scheduler=False, blobs=blobs)
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
            put_queue(client, "q")
            yield client


def created_data(client: redis.Redis, namespace: str, job_id: int) -> dict[str, object]:
    [created] = [e for e in events(client, namespace, job_id) if e["type"] == "job_created"]
    data: dict[str, object] = json.loads(created["data"])
    return data


def request_span(spans: InMemorySpanExporter, method: str) -> ReadableSpan:
    ended = spans.get_finished_spans()
    [span] = [s for s in ended if s.kind is SpanKind.SERVER and s.name.startswith(method)]
    return span


def test_a_request_is_the_child_of_its_traceparent_and_its_commands_of_it(
    traced: TestClient, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    response = traced.post("/queue/q/job", json={"input": 1}, headers={"traceparent": TRACEPARENT})
    assert response.status_code == 201
    server = request_span(spans, "POST")
    assert server.name == "POST /queue/{queue}/job"
    assert server.attributes is not None and server.attributes["http.response.status_code"] == 201
    assert server.parent is not None and server.parent.span_id == PARENT and server.parent.is_remote
    assert server.context is not None and server.context.trace_id == TRACE
    [command] = [s for s in spans.get_finished_spans() if s.name == "create_job"]
    assert command.parent is not None and command.parent.span_id == server.context.span_id
    assert command.context is not None and command.context.trace_id == TRACE
    assert server.start_time is not None and command.start_time is not None and command.end_time is not None
    assert server.start_time <= command.start_time <= command.end_time


def test_a_request_without_a_traceparent_starts_a_trace(
    traced: TestClient, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    assert traced.get("/queue/q/size").status_code == 200
    server = request_span(spans, "GET")
    assert server.parent is None and server.name == "GET /queue/{queue}/size"


def test_an_unrouted_request_is_named_by_its_method_alone(
    traced: TestClient, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    assert traced.get("/no/such/path/7").status_code == 404
    assert request_span(spans, "GET").name == "GET"


def test_the_traceparent_is_recorded_in_job_created_and_handed_out_with_the_job(
    traced: TestClient, client: redis.Redis, namespace: str
) -> None:
    job_id = traced.post("/queue/q/job", json={"input": 1}, headers={"traceparent": TRACEPARENT}).json()
    ids = traced.post("/queue/q/jobs", json=[{"input": 2}, {}], headers={"traceparent": TRACEPARENT}).json()
    for one in [job_id, *ids]:
        assert created_data(client, namespace, one)["traceparent"] == TRACEPARENT
    fetched = traced.get("/queue/q/job", params={"count": 3}).json()
    assert [j["traceparent"] for j in fetched] == [TRACEPARENT] * 3
    assert traced.get(f"/job/{job_id}").json()["traceparent"] == TRACEPARENT


def test_replay_rebuilds_the_traceparent_from_the_event(
    traced: TestClient, client: redis.Redis, namespace: str
) -> None:
    job_id = traced.post("/queue/q/job", json={}, headers={"traceparent": TRACEPARENT}).json()
    target = namespace + "-rebuilt"
    rebuild(client, namespace, target)
    assert client.hget(Keys(target).with_generation(0).job(job_id), "traceparent") == TRACEPARENT.encode()
    assert compare(client, namespace, target) == []


BAD = [
    "01-" + TRACEPARENT[3:],  # a version this server does not know
    TRACEPARENT.upper(),
    formatted(0, PARENT, 1),  # no trace
    formatted(TRACE, 0, 1),  # no span
    TRACEPARENT + "-extra",
    TRACEPARENT[:-1],
    "x" * 8000,
    "00-" + "é" * 32 + TRACEPARENT[35:],
]


@pytest.mark.parametrize("header", BAD)
def test_a_bad_traceparent_is_ignored_not_recorded(
    traced: TestClient, client: redis.Redis, namespace: str, spans: InMemorySpanExporter, header: str
) -> None:
    spans.clear()
    response = traced.post("/queue/q/job", json={}, headers={b"traceparent": header.encode()})
    assert response.status_code == 201, response.text
    assert "traceparent" not in created_data(client, namespace, response.json())
    assert "traceparent" not in traced.get("/queue/q/job").json()
    assert request_span(spans, "POST").parent is None


def test_a_5xx_answer_makes_the_span_an_error(namespace: str, spans: InMemorySpanExporter) -> None:
    config = replace(make_config(namespace), tracing=TracingConfig(enabled=True))
    with temporary_store() as blobs:
        app = create_app(config, "redis://127.0.0.1:1/0", run_scheduler=False, blobs=blobs)  # no Redis there
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as unreachable:
            spans.clear()
            assert unreachable.post("/queue/q/job", json={}).status_code == 503
    server = request_span(spans, "POST")
    assert server.status.status_code is StatusCode.ERROR


def test_commands_outside_any_span_make_none(spans: InMemorySpanExporter) -> None:
    seen: list[tuple[str, float]] = []
    observe = CommandSpans(then=lambda name, seconds: seen.append((name, seconds))).observe
    spans.clear()
    observe("check_timeouts", 0.001)
    assert spans.get_finished_spans() == ()
    with trace.get_tracer("test").start_as_current_span("tick"):
        observe("check_timeouts", 0.002)
    assert [s.name for s in spans.get_finished_spans()] == ["check_timeouts", "tick"]
    assert seen == [("check_timeouts", 0.001), ("check_timeouts", 0.002)]  # the metrics see every one

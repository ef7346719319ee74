"""One trace across real processes: a producer (this test process, its spans in memory) creates a
job in a span of its own through ``jobledger serve`` (a subprocess), and ``jobledger worker`` (a
subprocess, over HTTP or over Redis) runs it.  The server's request span and the worker's span of the
job are children of the producer's span, in its trace; the handler's own span is a child of the
worker's.  The subprocesses export their spans to files (:mod:`tests.traces.process_support`)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from jobledger.client import Client
from tests.cli.process_support import REPO, Command, jobledger, wait_for, wait_serving
from tests.support.private_redis import free_port
from tests.traces.process_support import spans_in, traced_env


@pytest.fixture
def served(tmp_path: Path, redis_url: str, namespace: str) -> Iterator[tuple[str, Path]]:
    """``jobledger serve`` on the test's Redis and namespace, tracing; its URL and its spans' file."""
    port, spans = free_port(), tmp_path / "serve-spans.jsonl"
    args = ["serve", "--redis-url", redis_url, "--namespace", namespace, "--host", "127.0.0.1",
            "--port", str(port)]  # fmt: skip
    with jobledger(args, tmp_path / "serve.log", REPO, **traced_env(tmp_path / "site", spans)) as serve:
        base = f"http://127.0.0.1:{port}"
        wait_serving(serve, base)
        yield base, spans


def worker_args(transport: str, base: str, redis_url: str, namespace: str) -> list[str]:
    args = ["worker", "tests.support.worker_handlers:traced_echo", "--queue", "q"]
    if transport == "http":
        return [*args, "--url", base]
    return [*args, "--transport", "redis", "--redis-url", redis_url, "--namespace", namespace]


def stopped(worker: Command) -> None:
    """SIGTERM, and the worker's exit (which flushes its spans)."""
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, worker.output()


def named(spans: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [span] = [s for s in spans if s["name"] == name]
    return span


@pytest.mark.parametrize("transport", ["http", "redis"])
def test_the_handlers_span_is_a_child_of_the_producers(
    tmp_path: Path,
    served: tuple[str, Path],
    redis_url: str,
    namespace: str,
    spans: InMemorySpanExporter,
    transport: str,
) -> None:
    base, server_spans = served
    with Client(base) as producer:
        producer.put_queue("q")
        with trace.get_tracer("producer").start_as_current_span("produce") as span:
            job_id = producer.submit("q", {"n": 1})
        context = span.get_span_context()
        trace_id, span_id = f"{context.trace_id:032x}", f"{context.span_id:016x}"
        worker_spans = tmp_path / "worker-spans.jsonl"
        env = traced_env(tmp_path / "site", worker_spans)
        with jobledger(
            worker_args(transport, base, redis_url, namespace), tmp_path / "w.log", REPO, **env
        ) as worker:
            assert producer.wait(job_id, timeout=30).status == "completed", worker.output()
            stopped(worker)
    handled = named(spans_in(worker_spans), "process q")
    assert (handled["trace"], handled["parent"], handled["kind"]) == (trace_id, span_id, "CONSUMER")
    assert handled["attributes"]["messaging.message.id"] == str(job_id)
    assert handled["attributes"]["jobledger.outcome"] == "completed"
    inside = named(spans_in(worker_spans), "inside the handler")
    assert (inside["trace"], inside["parent"]) == (trace_id, handled["span"])

    def created() -> list[dict[str, Any]]:
        return [s for s in spans_in(server_spans) if s["name"] == "POST /queue/{queue}/job"]

    wait_for(created, "the server's span of the create")
    [request] = created()
    assert (request["trace"], request["parent"], request["kind"]) == (trace_id, span_id, "SERVER")
    wait_for(lambda: any(s["name"] == "create_job" for s in spans_in(server_spans)), "the command's span")
    command = named(spans_in(server_spans), "create_job")
    assert (command["trace"], command["parent"]) == (trace_id, request["span"])


def test_a_job_created_outside_any_span_is_handled_in_a_trace_of_its_own(
    tmp_path: Path, served: tuple[str, Path], redis_url: str, namespace: str
) -> None:
    base, _ = served
    with Client(base) as producer:
        producer.put_queue("q")
        job_id = producer.submit("q", {"n": 2})
        worker_spans = tmp_path / "worker-spans.jsonl"
        env = traced_env(tmp_path / "site", worker_spans)
        args = worker_args("http", base, redis_url, namespace)
        with jobledger(args, tmp_path / "w.log", REPO, **env) as worker:
            assert producer.wait(job_id, timeout=30).status == "completed", worker.output()
            stopped(worker)
    assert named(spans_in(worker_spans), "process q")["parent"] is None

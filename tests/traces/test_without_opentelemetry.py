"""Without the otel extra nothing changes: ``serve`` and the worker start and work with OpenTelemetry
impossible to import (the environment asking for traces gets a warning; ``[tracing] enabled`` a
refusal naming the extra), and a server, worker or client not told to trace never imports it."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from jobledger.client import Client
from tests.cli.process_support import REPO, clean_env, jobledger, wait_serving
from tests.support.private_redis import free_port
from tests.traces.process_support import site, traced_env

#: What a process that traces loads; and whether it set up a tracer provider.
IMPORTS = """
import json, sys
from jobledger.client import calls
from jobledger.runtime.config import load_config
from jobledger.server.app import create_app
from jobledger.worker.worker import Worker
create_app(load_config(None, environ={}), "redis://127.0.0.1:1/0")
Worker(lambda job: None, "q", url="http://127.0.0.1:1")
calls.create_job("q", calls.JobSpec(input=1))
ours = ("jobledger.runtime.spans", "jobledger.server.request_spans", "jobledger.worker.job_spans")
trace = sys.modules.get("opentelemetry.trace")
provider = trace is not None and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
print(json.dumps([m for m in ours if m in sys.modules] + (["a tracer provider"] if provider else [])))
"""


def test_a_server_worker_or_client_not_tracing_loads_nothing_of_tracing() -> None:
    """(redis-py imports OpenTelemetry's API whenever it is installed: what counts is that nothing
    of jobledger's tracing is loaded, nor the SDK set up.)"""
    done = subprocess.run([sys.executable, "-c", IMPORTS], capture_output=True, text=True, check=True,
                          env=clean_env())  # fmt: skip
    assert json.loads(done.stdout) == []


def test_without_opentelemetry_a_server_worker_and_client_load() -> None:
    env = clean_env(JOBLEDGER_TEST_NO_OTEL="1", PYTHONPATH=f"{site(Path(tempfile.mkdtemp()))}:{REPO}")
    code = IMPORTS + "print(json.dumps(sorted(m for m in sys.modules if m.startswith('opentelemetry'))))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.splitlines() == ["[]", "[]"]


def test_serve_and_the_worker_run_without_opentelemetry(
    tmp_path: Path, redis_url: str, namespace: str
) -> None:
    port, base = free_port(), ""
    base = f"http://127.0.0.1:{port}"
    # the environment asks for traces, which cannot be had: a warning, and they run all the same
    env = traced_env(tmp_path / "site", tmp_path / "spans.jsonl", JOBLEDGER_TEST_NO_OTEL="1")
    serve_args = ["serve", "--redis-url", redis_url, "--namespace", namespace, "--port", str(port)]
    with jobledger(serve_args, tmp_path / "serve.log", REPO, **env) as serve, Client(base) as producer:
        wait_serving(serve, base)
        producer.put_queue("q")
        job_id = producer.submit("q", 1)
        args = ["worker", "tests.support.worker_handlers:traced_echo", "--queue", "q", "--url", base]
        with jobledger(args, tmp_path / "worker.log", REPO, **env) as worker:
            job = producer.wait(job_id, timeout=30)
        assert job.status == "failed", worker.output()  # the handler itself imports OpenTelemetry
        assert "ModuleNotFoundError" in (producer.get(job_id).model_dump_json())
    for log in ("serve.log", "worker.log"):
        assert "tracing is off: tracing needs the otel extra" in (tmp_path / log).read_text()
    assert not (tmp_path / "spans.jsonl").exists()


def test_tracing_enabled_without_the_extra_refuses_to_serve(tmp_path: Path, redis_url: str) -> None:
    env = {"PYTHONPATH": f"{site(tmp_path / 'site')}:{REPO}", "JOBLEDGER_TEST_NO_OTEL": "1",
           "JOBLEDGER_TRACING": "true"}  # fmt: skip
    args = ["serve", "--redis-url", redis_url, "--port", str(free_port())]
    with jobledger(args, tmp_path / "serve.log", REPO, **env) as serve:
        assert serve.wait(timeout=30) == 2
        assert "pip install 'jobledger[otel]'" in serve.output()

"""A worker's own metrics: the jobs in hand while handlers run, each job's handler duration and
outcome by queue (over HTTP and over Redis), and ``jobledger worker --metrics-port`` serving them."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from jobledger.client import Client
from jobledger.worker.metrics import WorkerMetrics
from jobledger.worker.worker import JobContext
from tests.support.private_redis import free_port, wait_until
from tests.worker.worker_support import TRANSPORTS, cli_worker, make_worker, read_until, wait_for, working


def sample(metrics: WorkerMetrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_jobs_in_hand_durations_and_outcomes(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, gate: threading.Event
) -> None:
    def handler(job: JobContext) -> str:
        if job.input.get("hold"):
            wait_for(gate)
        if job.input.get("fail"):
            raise ValueError("no")
        return "done"

    api.put_queue("q")
    api.put_queue("other")
    metrics = WorkerMetrics()
    worker = make_worker(transport, handler, ["q", "other"], server, redis_url, namespace, concurrency=2,
                         metrics=metrics)  # fmt: skip
    with working(worker):
        held = api.submit("q", {"hold": True})
        wait_until(lambda: sample(metrics, "jobledger_worker_jobs_in_hand") == 1, "the held job in hand")
        ids = [api.submit("q", {}), api.submit("q", {"fail": True}), api.submit("other", {})]
        for job_id in ids:
            api.wait(job_id, timeout=15)
        # a job leaves the worker's hands once the server has answered its outcome, a moment after
        # the server recorded it (which is what the waits saw)
        wait_until(lambda: sample(metrics, "jobledger_worker_jobs_in_hand") == 1, "the held job alone")
        gate.set()
        api.wait(held, timeout=15)
        wait_until(lambda: sample(metrics, "jobledger_worker_jobs_in_hand") == 0, "no job in hand")

    assert sample(metrics, "jobledger_worker_jobs_total", queue="q", outcome="completed") == 2
    assert sample(metrics, "jobledger_worker_jobs_total", queue="q", outcome="failed") == 1
    assert sample(metrics, "jobledger_worker_jobs_total", queue="other", outcome="completed") == 1
    assert sample(metrics, "jobledger_worker_handler_seconds_count", queue="q") == 3
    assert sample(metrics, "jobledger_worker_handler_seconds_count", queue="other") == 1
    assert sample(metrics, "jobledger_worker_handler_seconds_sum", queue="q") > 0
    assert sample(metrics, "jobledger_worker_resends_total", queue="q") == 0


def scrape(url: str) -> dict[str, float]:
    text = httpx2.get(url, timeout=5).text
    return {
        s.name + str(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_the_worker_command_serves_its_metrics(api: Client, server: str, tmp_path: Path) -> None:
    api.put_queue("q")
    port = free_port()
    release = tmp_path / "release"
    job_id = api.submit("q", {"release": str(release)})
    with cli_worker("--queue", "q", "--url", server, "--metrics-port", str(port)) as proc:
        read_until(proc, "started")
        url = f"http://127.0.0.1:{port}/metrics"
        wait_until(lambda: scrape(url).get("jobledger_worker_jobs_in_hand[]") == 1, "the job in hand")
        release.touch()
        api.wait(job_id, timeout=15)
        key = "jobledger_worker_jobs_total[('outcome', 'completed'), ('queue', 'q')]"
        wait_until(lambda: scrape(url).get(key) == 1, "the completion counted")
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(url, timeout=2)  # the endpoint stopped with the worker


def test_a_metrics_port_in_use_is_refused(server: str) -> None:
    port = free_port()
    with cli_worker("--queue", "q", "--url", server, "--metrics-port", str(port)) as first:
        read_until(first, "started")
        with cli_worker("--queue", "q", "--url", server, "--metrics-port", str(port)) as second:
            assert second.wait(timeout=15) == 1
            assert second.stderr is not None
            assert f"--metrics-port: cannot listen on 127.0.0.1:{port}" in second.stderr.read()
        first.terminate()
        first.wait(timeout=15)

"""Prometheus's own checker on what we ship: ``promtool check metrics`` on a live ``/metrics`` (every
family present: jobs moved, a ledger split in two) and on a worker's, ``promtool check rules`` on
deploy/alerts.yaml.  promtool is Debian's ``prometheus`` package; without it these skip, unless
``REQUIRE_PROMTOOL=1`` (set by .ci/run once it is there) makes that a failure."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from jobledger.worker.metrics import WorkerMetrics
from tests.support.http import app_client, create_job, fetch, no_content, put_queue
from tests.support.ledger import one_queue_per_partition

ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "alerts.yaml"


@pytest.fixture
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        reason = "promtool not found (apt-get install prometheus)"
        if os.environ.get("REQUIRE_PROMTOOL") == "1":
            pytest.fail(f"REQUIRE_PROMTOOL=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return found


def check_metrics(promtool: str, text: bytes) -> None:
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()
    assert not done.stdout.strip() and not done.stderr.strip(), (done.stdout + done.stderr).decode()


def test_a_live_metrics_page_passes_promtool(promtool: str, redis_url: str, namespace: str) -> None:
    a, b = one_queue_per_partition(namespace, 2)
    with app_client(redis_url, namespace, partitions=2) as api:
        for q in (a, b):
            put_queue(api, q)
            create_job(api, q)
            create_job(api, q)
            no_content(api.patch(f"/job/{fetch(api, q)['id']}", json={"status": "completed"}))
        response = api.get("/metrics")
    assert response.status_code == 200
    assert b"jobledger_job_wait_seconds_bucket" in response.content
    assert b"jobledger_oldest_queued_job_age_seconds" in response.content
    check_metrics(promtool, response.content)


def test_a_workers_metrics_pass_promtool(promtool: str) -> None:
    metrics = WorkerMetrics()
    metrics.count_in_hand(lambda: 2)
    metrics.ended("q", "completed", 0.3)
    metrics.resent("q")
    check_metrics(promtool, generate_latest(metrics.registry))


def test_the_alert_rules_pass_promtool(promtool: str) -> None:
    done = subprocess.run(
        [promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_a_sealer_that_stopped_pages_someone(promtool: str, tmp_path: Path) -> None:
    # a stopped sealer (no scheduler, or the ledger changed under what it published) lets the seal
    # lag grow: the alert fires once it has been over a minute for five
    description = (
        "No checkpoint covers them: no scheduler seals, or a sealer stopped because the ledger changed"
        " under what it had published (its log says which file). Run `jobledger ledger verify`."
    )
    tests = tmp_path / "seal_test.yaml"
    tests.write_text(
        f"""rule_files: [{ALERTS}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'jobledger_seal_lag_seconds{{partition="0"}}'
        values: '0 0 0 60+60x10'
      - series: 'jobledger_seal_lag_seconds{{partition="1"}}'
        values: '0x13'
    alert_rule_test:
      - eval_time: 4m
        alertname: JobledgerSealLagging
        exp_alerts: []
      - eval_time: 10m
        alertname: JobledgerSealLagging
        exp_alerts:
          - exp_labels: {{severity: critical, partition: "0"}}
            exp_annotations:
              summary: "Events of partition 0 have waited 8m 0s for a signed checkpoint"
              description: "{description}"
"""
    )
    done = subprocess.run([promtool, "test", "rules", str(tests)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr

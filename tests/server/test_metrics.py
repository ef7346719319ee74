"""``GET /metrics``: Prometheus text whose values match the ledger after a small workload — jobs by
queue and status, each queue's lifetime counts, wait and run time histograms and oldest queued job
(on one partition and on four), ledger length, archive position, command latency, scheduler lag —
and a 200 with ``redis_up 0`` when Redis is unreachable; every metric is in docs/operations.md."""

from __future__ import annotations

import re
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from freezegun import freeze_time
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.partitions import Partitioning
from jobledger.scheduler.loop import tick
from jobledger.server.metrics import DEADLINE_SETS, Registry
from jobledger.server.process_metrics import ProcessMetrics
from jobledger.worker.metrics import WorkerMetrics
from tests.support.http import JOB_STATUSES, app_client, create_job, fetch, no_content, put_queue
from tests.support.ledger import frozen_clock, one_queue_per_partition

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(api: TestClient) -> Samples:
    """Every sample of one scrape, keyed by (sample name, labels)."""
    response = api.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def test_jobs_by_queue_and_status(api: TestClient) -> None:
    put_queue(api, "a")
    put_queue(api, "b")
    for _ in range(3):
        create_job(api, "a")
    create_job(api, "b")
    first, _second = fetch(api, "a"), fetch(api, "a")
    no_content(api.patch(f"/job/{first['id']}", json={"status": "completed"}))

    samples = scrape(api)
    expected = {("a", "queued"): 1, ("a", "running"): 1, ("a", "completed"): 1, ("b", "queued"): 1}
    for queue in ("a", "b"):
        for status in JOB_STATUSES:
            got = value(samples, "jobledger_jobs", queue=queue, status=status)
            assert got == expected.get((queue, status), 0), (queue, status)
    assert value(samples, "jobledger_jobs_created_total", queue="a") == 3
    assert value(samples, "jobledger_jobs_completed_total", queue="a") == 1
    assert value(samples, "jobledger_jobs_created_total", queue="b") == 1
    assert not [name for name in names(samples) if name.startswith("jobledger_statistics")]
    assert value(samples, "jobledger_redis_up") == 1


def test_ledger_length_is_the_stream_length(api: TestClient, client: redis.Redis, namespace: str) -> None:
    put_queue(api)
    job_id = create_job(api)
    fetch(api)
    no_content(api.put(f"/job/{job_id}/heartbeat"))

    samples = scrape(api)
    length = client.xlen(Keys(namespace).events)
    assert length == 4
    assert value(samples, "jobledger_ledger_length") == length
    assert value(samples, "jobledger_events_total") == length  # nothing trimmed: every event ever added


def test_empty_ledger(api: TestClient) -> None:
    samples = scrape(api)
    assert value(samples, "jobledger_ledger_length") == 0
    assert value(samples, "jobledger_events_total") == 0
    assert not [key for key in samples if key[0] == "jobledger_jobs"]
    assert "jobledger_partition_length" not in names(samples)  # one partition: no such gauge


def test_the_blob_collectors_counters(api: TestClient, client: redis.Redis, namespace: str) -> None:
    assert value(scrape(api), "jobledger_blobs_swept_total") == 0, "no sweep has removed anything"
    client.hset(Keys(namespace).build("blob_sweep"), mapping={"swept": 3, "swept_bytes": 4096, "staging": 1})
    samples = scrape(api)
    assert value(samples, "jobledger_blobs_swept_total") == 3
    assert value(samples, "jobledger_blobs_swept_bytes_total") == 4096
    assert value(samples, "jobledger_blob_staging_removed_total") == 1


def test_latency_histogram_counts_every_command_run(api: TestClient) -> None:
    put_queue(api)
    put_queue(api)
    ids = [create_job(api) for _ in range(3)]
    fetch(api)
    no_content(api.patch(f"/job/{ids[0]}", json={"status": "completed"}))
    assert api.patch(f"/job/{ids[0]}", json={"status": "completed"}).status_code == 409  # refused: counted

    samples = scrape(api)
    runs = {"put_queue": 2, "create_job": 3, "fetch_jobs": 1, "update_job": 2}
    for command, count in runs.items():
        assert value(samples, "jobledger_command_seconds_count", command=command) == count
        assert value(samples, "jobledger_command_seconds_bucket", command=command, le="+Inf") == count
        assert value(samples, "jobledger_command_seconds_sum", command=command) > 0
    counted = [dict(labels) for name, labels in samples if name == "jobledger_command_seconds_count"]
    observed = {labels["command"] for labels in counted}
    assert observed == set(runs)  # reads (GET /job, /info, the scrape itself) run no command


def test_scheduler_lag(api: TestClient) -> None:
    """0 while nothing is due; how overdue the oldest item is once its deadline has passed."""
    put_queue(api, timeout="1s")
    job_id = create_job(api)
    fetch(api)
    create_job(api, delay="2s")

    samples = scrape(api)
    assert {"releases", "timeouts", "queued", "retries", "expiry"} <= DEADLINE_SETS.keys()
    for check in DEADLINE_SETS:
        assert value(samples, "jobledger_scheduler_lag_seconds", check=check) == 0

    with freeze_time(datetime.now(UTC) + timedelta(seconds=10)):
        samples = scrape(api)
    assert 8.5 <= value(samples, "jobledger_scheduler_lag_seconds", check="timeouts") <= 10
    assert 7.5 <= value(samples, "jobledger_scheduler_lag_seconds", check="releases") <= 9
    for check in DEADLINE_SETS.keys() - {"timeouts", "releases"}:
        assert value(samples, "jobledger_scheduler_lag_seconds", check=check) == 0
    # nothing ran the scheduler: the job is still running, only overdue
    assert api.get(f"/job/{job_id}?fields=status").json() == {"status": "running"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_redis_down_answers_200_with_redis_up_0(namespace: str) -> None:
    with app_client(f"redis://127.0.0.1:{_free_port()}", namespace) as api:
        assert api.post("/queue/q/job", json={}).status_code == 503
        samples = scrape(api)
    assert value(samples, "jobledger_redis_up") == 0
    assert "jobledger_jobs" not in names(samples)
    assert "jobledger_ledger_length" not in names(samples)
    # what the process measured itself is still there: the refused command's attempt
    assert value(samples, "jobledger_command_seconds_count", command="create_job") == 1


def test_each_app_has_its_own_registry(api: TestClient, redis_url: str, namespace: str) -> None:
    put_queue(api)
    with app_client(redis_url, namespace) as other:
        samples = scrape(other)
    assert "jobledger_command_seconds_count" not in names(samples)
    assert value(scrape(api), "jobledger_command_seconds_count", command="put_queue") == 1


def test_a_split_ledger_is_measured_whole(redis_url: str, namespace: str, client: redis.Redis) -> None:
    """Three partitions, a queue in each: every queue's jobs from its partition, the lengths and the
    counters added up, each partition's length beside them, each check's lag from the oldest
    deadline of any partition, the blob collector's counters from the home partition."""
    a, b, c = one_queue_per_partition(namespace, 3)
    keys = [Keys(ns) for ns in Partitioning(namespace, 3).namespaces]
    with app_client(redis_url, namespace, partitions=3) as api:
        put_queue(api, a, timeout="1s")
        put_queue(api, b)
        put_queue(api, c)
        for _ in range(2):
            create_job(api, a)
        fetch(api, a)  # times out in partition 0 after 1s
        create_job(api, b, delay="5s")
        create_job(api, c, delay="2s")  # the oldest release: partition 2's
        client.hset(keys[0].build("blob_sweep"), mapping={"swept": 2, "swept_bytes": 10, "staging": 0})
        with freeze_time(datetime.now(UTC) + timedelta(seconds=10)):
            samples = scrape(api)

    expected = {(a, "queued"): 1, (a, "running"): 1, (b, "scheduled"): 1, (c, "scheduled"): 1}
    for queue in (a, b, c):
        for status in JOB_STATUSES:
            assert value(samples, "jobledger_jobs", queue=queue, status=status) == expected.get(
                (queue, status), 0
            )
    assert sum(value(samples, "jobledger_jobs_created_total", queue=q) for q in (a, b, c)) == 4
    lengths = [client.xlen(k.events) for k in keys]
    assert lengths == [4, 2, 2]  # queue_created, job_created x2, job_started; queue_created, job_created
    assert value(samples, "jobledger_ledger_length") == value(samples, "jobledger_events_total") == 8
    for partition, length in enumerate(lengths):
        assert value(samples, "jobledger_partition_length", partition=str(partition)) == length
    assert 8.5 <= value(samples, "jobledger_scheduler_lag_seconds", check="timeouts") <= 10
    assert 7.5 <= value(samples, "jobledger_scheduler_lag_seconds", check="releases") <= 9
    assert value(samples, "jobledger_scheduler_lag_seconds", check="retries") == 0
    assert value(samples, "jobledger_blobs_swept_total") == 2


def test_what_the_app_counted_before_its_registry_was_built_is_in_the_first_scrape() -> None:
    process = ProcessMetrics()
    process.observe("create", 0.002)
    process.observe("create", 0.004)
    process.feeds_open(2)
    registry = process.build()
    process.observe("fetch", 0.001)
    process.feeds_open(1)
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(generate_latest(registry.registry).decode())
        for s in family.samples
    }
    assert samples[("jobledger_command_seconds_count", frozenset({("command", "create")}))] == 2
    assert samples[("jobledger_command_seconds_sum", frozenset({("command", "create")}))] == 0.006
    assert samples[("jobledger_command_seconds_count", frozenset({("command", "fetch")}))] == 1
    assert samples[("jobledger_feeds_open", frozenset())] == 1
    assert process.build() is registry


@pytest.mark.parametrize("partitions", [1, 4])
def test_each_queues_counts_histograms_and_oldest_job_move_as_jobs_move(
    redis_url: str, namespace: str, partitions: int
) -> None:
    """In each queue: three jobs; one waits 2 s and runs 3 s (completed), one waits 5 s and fails at
    once, one waits 5 s and times out after its 10 s; a minute later the three expire (the counts
    stay), and a fourth job created then has waited 4 s at the scrape."""
    queues = one_queue_per_partition(namespace, partitions)
    with frozen_clock() as clock, app_client(redis_url, namespace, partitions=partitions) as api:
        ledger = open_ledger(redis_url, namespace, partitions)
        for q in queues:
            put_queue(api, q, timeout="10s", expires_after="1m")
            for _ in range(3):
                create_job(api, q)
        clock.tick(2)
        first = {q: fetch(api, q)["id"] for q in queues}
        clock.tick(3)
        for q in queues:
            no_content(api.patch(f"/job/{first[q]}", json={"status": "completed"}))
            no_content(api.patch(f"/job/{fetch(api, q)['id']}", json={"status": "failed"}))
            fetch(api, q)
        samples = scrape(api)
        for q in queues:
            assert value(samples, "jobledger_oldest_queued_job_age_seconds", queue=q) == 0
            assert value(samples, "jobledger_jobs_started_total", queue=q) == 3
        clock.tick(10)
        tick(ledger)
        clock.tick(60)
        tick(ledger)
        for q in queues:
            create_job(api, q)
        clock.tick(4)
        samples = scrape(api)
        for runner in ledger.runners:
            runner.client.close()

    expected = {"created": 4, "started": 3, "completed": 1, "failed": 1, "timed_out": 1, "cancelled": 0,
                "expired": 3, "returned": 0}  # fmt: skip
    for q in queues:
        for outcome, count in expected.items():
            assert value(samples, f"jobledger_jobs_{outcome}_total", queue=q) == count, (q, outcome)
        assert value(samples, "jobledger_jobs", queue=q, status="completed") == 0  # expired
        assert value(samples, "jobledger_job_wait_seconds_count", queue=q) == 3
        assert value(samples, "jobledger_job_wait_seconds_sum", queue=q) == 12.0
        assert value(samples, "jobledger_job_wait_seconds_bucket", queue=q, le="1.0") == 0
        assert value(samples, "jobledger_job_wait_seconds_bucket", queue=q, le="2.5") == 1
        assert value(samples, "jobledger_job_wait_seconds_bucket", queue=q, le="5.0") == 3
        assert value(samples, "jobledger_job_wait_seconds_bucket", queue=q, le="+Inf") == 3
        assert value(samples, "jobledger_job_run_seconds_count", queue=q) == 3
        assert value(samples, "jobledger_job_run_seconds_sum", queue=q) == 13.0
        assert value(samples, "jobledger_job_run_seconds_bucket", queue=q, le="0.005") == 1
        assert value(samples, "jobledger_oldest_queued_job_age_seconds", queue=q) == 4.0


def test_the_archive_position(api: TestClient, client: redis.Redis, namespace: str) -> None:
    """Nothing archived: a count of 0 and no position; then the record's count and its newest
    archived event's time."""
    samples = scrape(api)
    assert value(samples, "jobledger_archived_events_total") == 0
    assert "jobledger_archive_position_timestamp_seconds" not in names(samples)
    record = {"dir": "/archive", "last_id": "1893456000000-3", "count": 7}
    client.hset(Keys(namespace).build("archive"), mapping=record)  # type: ignore[arg-type]
    samples = scrape(api)
    assert value(samples, "jobledger_archived_events_total") == 7
    assert value(samples, "jobledger_archive_position_timestamp_seconds") == 1893456000.0


OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def documented_metrics() -> set[str]:
    """The metric names the tables of docs/operations.md's Metrics section give (``_total`` off, as
    the parser names counter families)."""
    section = OPERATIONS.read_text().split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `jobledger_")]
    return {name.removesuffix("_total") for row in rows for name in re.findall(r"`(jobledger_\w+)`", row)}


def test_every_metric_is_documented(redis_url: str, namespace: str, client: redis.Redis) -> None:
    a, _b = one_queue_per_partition(namespace, 2)
    with app_client(redis_url, namespace, partitions=2) as api:
        put_queue(api, a)
        create_job(api, a)
        archived = {"dir": "/archive", "last_id": "1-0", "count": 1}
        for partition in Partitioning(namespace, 2).namespaces:
            client.hset(Keys(partition).build("archive"), mapping=archived)  # type: ignore[arg-type]
        page = api.get("/metrics").text
    worker = WorkerMetrics()
    worker.ended("q", "completed", 1.0)
    worker.resent("q")
    served = {f.name for f in text_string_to_metric_families(page)}
    served |= {f.name for f in text_string_to_metric_families(generate_latest(worker.registry).decode())}
    # what a process observes itself comes with prometheus_client's _created series
    own = [*Registry().registry.collect(), *worker.registry.collect()]
    created = {f"{f.name}_created" for f in own if f.type in ("counter", "histogram")}
    # the seal lag is served only by a sealing server (this app does not seal): its own test is
    # tests/server/test_ledger_proofs.py::test_the_seal_lag_is_how_long_the_oldest_event_not_sealed_has_waited
    assert served - created == documented_metrics() - {"jobledger_seal_lag_seconds"}

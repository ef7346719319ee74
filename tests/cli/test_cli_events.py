"""``jobledger events export`` / ``import`` / ``tail`` from the command line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner, Result

from jobledger.cli.event_commands import print_event
from jobledger.cli.main import build_app
from jobledger.cli.output import Output, event_details, when
from jobledger.client import Event
from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.stream_merge import Cursor
from jobledger.replay.compare import compare
from tests.support.ledger import create, fetch_one, put_queue, update
from tests.support.live_server import live_server
from tests.support.replay import stream_entries, stream_ids, workload

REPO = Path(__file__).resolve().parents[2]
PIPED = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "NO_COLOR": None, "JOBLEDGER_REDIS_URL": None,
         "JOBLEDGER_NAMESPACE": None, "JOBLEDGER_CONFIG": None, "JOBLEDGER_URL": None}  # fmt: skip


def jobledger(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(build_app(), list(args), env=PIPED)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result


def test_export_then_import_from_the_command_line(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    total = client.xlen(Keys(namespace).events)
    path = tmp_path / "ledger.jsonl"
    out = jobledger("events", "export", "--to", str(path), "--redis-url", redis_url, "--namespace", namespace)
    assert out.stdout.startswith(f"exported {total} events in ") and str(path) in out.stdout
    first = json.loads(path.read_text().splitlines()[0])
    assert set(first) == {"id", "type", "v", "at", "job", "queue", "actor", "data"}
    assert first["actor"] == "local" and isinstance(first["data"], str)
    copy = namespace + "-copy"
    out = jobledger("events", "import", str(path), "--redis-url", redis_url, "--namespace", copy)
    assert out.stdout.startswith(f"imported {total} events in ") and f"namespace '{copy}'" in out.stdout
    assert stream_entries(client, copy) == stream_entries(client, namespace)
    assert compare(client, namespace, copy) == []
    refused = jobledger("events", "import", str(path), "--redis-url", redis_url, "--namespace", copy, code=3)
    assert "is not empty" in refused.stderr
    assert stream_entries(client, copy) == stream_entries(client, namespace)  # untouched


def test_export_until_and_a_bad_file_on_import(
    client: redis.Redis, redis_url: str, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    ids = stream_ids(client, namespace)
    path = tmp_path / "part.jsonl"
    jobledger("events", "export", "--to", str(path), "--until", ids[4], "--redis-url", redis_url,
              "--namespace", namespace)  # fmt: skip
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ids[:5]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + "not an event\n")
    copy = namespace + "-bad"
    out = jobledger("events", "import", str(bad), "--redis-url", redis_url, "--namespace", copy, code=3)
    assert f"{bad}:6" in out.stderr
    assert list(client.scan_iter(match=Keys(copy).pattern())) == []  # nothing half-imported is left


def test_tail_prints_each_event_as_it_happens_and_stops_cleanly(
    server: str, client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    put_queue(ledger, "q")
    first = create(ledger, "q", input="before")
    after = stream_ids(client, namespace)[0]  # the queue's creation
    env = {k: v for k, v in os.environ.items() if k not in PIPED}
    command = [sys.executable, "-m", "jobledger.cli.main", "events", "tail", "--url", server,
               "--json", "--after", after,
               "--type", "job_created"]  # fmt: skip
    lines: list[str] = []
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:  # fmt: skip
        reader = threading.Thread(target=lambda: lines.extend(_read_lines(proc.stdout, 2)), daemon=True)
        reader.start()
        try:
            second = create(ledger, "q", input="after")  # before or after tail connects: it starts at --after
            reader.join(timeout=20)
        finally:
            proc.send_signal(signal.SIGINT)
            _, errors = proc.communicate(timeout=10)
    assert proc.returncode == 0, errors
    assert [json.loads(line)["job"] for line in lines] == [first, second]
    assert json.loads(lines[1])["data"]["input"] == "after"


def test_tail_follows_every_partition_of_a_split_ledger_from_a_position_the_feed_gave(
    redis_url: str, client: redis.Redis, namespace: str
) -> None:
    router = open_ledger(redis_url, namespace, 3)
    try:
        queues = [f"q{p}" for p in range(3)]  # a new queue goes where the fewest are: one each
        for name in queues:
            router.run(commands.put_queue(name, QueueSettings()))
        made = [router.run(commands.create_job(name, JobOptions())).id for name in queues]
        with live_server(redis_url, namespace) as server:
            proc = _tail(server, "--json", "--type", "job_created", "--after", Cursor.start(3).token())
            with proc:
                lines: list[str] = []
                reader = threading.Thread(
                    target=lambda: lines.extend(_read_lines(proc.stdout, 4)), daemon=True
                )
                reader.start()
                try:
                    made.append(router.run(commands.create_job(queues[1], JobOptions())).id)
                    reader.join(timeout=20)
                finally:
                    proc.send_signal(signal.SIGINT)
                    _, errors = proc.communicate(timeout=10)
        assert proc.returncode == 0, errors
        assert [json.loads(line)["job"] for line in lines] == made
        assert {job % 3 for job in made} == {0, 1, 2}
    finally:
        for runner in router.runners:
            runner.client.close()


def _read_lines(stream: object, n: int) -> list[str]:
    out: list[str] = []
    for line in stream:  # type: ignore[attr-defined]
        out.append(line)
        if len(out) == n:
            break
    return out


def _tail(server: str, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in PIPED}
    command = [sys.executable, "-m", "jobledger.cli.main", "events", "tail", "--url", server, *args]
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_tail_prints_readable_lines(server: str, client: redis.Redis, ledger: Ledger, namespace: str) -> None:
    """Piped: RFC 3339 time, type, queue, job, actor, the data with durations and times formatted, id."""
    put_queue(ledger, "q", retries=1, retry_delays=["1m"])
    after = stream_ids(client, namespace)[0]
    job_id = create(ledger, "q", input={"to": "ada"}, tags=["a", "b"], timeout="2m15s")
    fetch_one(ledger, "q")
    update(ledger, job_id, status="failed", error={"kind": "ValueError", "message": "bad input"})
    with _tail(server, "--after", after) as proc:
        try:
            lines = _read_lines(proc.stdout, 3)
        finally:
            proc.send_signal(signal.SIGINT)
            _, errors = proc.communicate(timeout=10)
    assert proc.returncode == 0, errors
    rows = [line.rstrip("\n").split("\t") for line in lines]
    ids = stream_ids(client, namespace)[1:4]
    assert [r[1:5] + r[6:] for r in rows] == [
        ["job_created", "q", str(job_id), "local", ids[0]],
        ["job_started", "q", str(job_id), "local", ids[1]],
        ["job_failed", "q", str(job_id), "local", ids[2]],
    ]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", r[0]) for r in rows)
    created, started, failed = (r[5] for r in rows)
    assert created == 'timeout=2m15s expires_after=5m retries=1 retry_delays=1m tags=a,b input={"to":"ada"}'
    assert started == "attempt=1"
    assert re.fullmatch(r'retry_at=\d{4}-\d\d-\d\dT[0-9:.]+Z error="ValueError: bad input"', failed), failed


def test_tail_shows_who_caused_each_event_and_filters_by_it(
    server: str, client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    put_queue(ledger, "q")
    after = stream_ids(client, namespace)[0]
    create(ledger, "q")  # local: filtered out
    job_id = create(ledger.as_actor("ci-bot"), "q")
    with _tail(server, "--after", after, "--actor", "ci-bot") as proc:
        try:
            lines = _read_lines(proc.stdout, 1)
        finally:
            proc.send_signal(signal.SIGINT)
            _, errors = proc.communicate(timeout=10)
    assert proc.returncode == 0, errors
    assert lines[0].split("\t")[1:5] == ["job_created", "q", str(job_id), "ci-bot"]


def test_tail_on_a_terminal_says_by_whom(capsys: pytest.CaptureFixture[str]) -> None:
    out = Output(as_json=False)
    out.mode = "rich"
    event = Event.model_validate(
        {"id": "5-0", "type": "job_requeued", "at": "2030-01-01T00:00:00Z", "queue": "q", "job": 3,
         "actor": "scheduler", "data": {"retry": True}}
    )  # fmt: skip
    print_event(out, event)
    assert " by scheduler " in capsys.readouterr().out
    old = Event.model_validate({"id": "6-0", "type": "job_heartbeat", "at": "2030-01-01T00:00:00Z"})
    assert old.actor == "local"  # an item without one (an older server's) reads as local


def test_tail_waits_through_a_quiet_spell(server: str, ledger: Ledger) -> None:
    """Real time: a quiet spell longer than redis-py 8's default socket timeout (5 s) ends nothing;
    the event after it is printed."""
    put_queue(ledger, "q")
    lines: list[str] = []
    with _tail(server, "--type", "job_created") as proc:
        reader = threading.Thread(target=lambda: lines.extend(_read_lines(proc.stdout, 1)), daemon=True)
        reader.start()
        try:
            time.sleep(6.5)
            assert proc.poll() is None and lines == []
            job_id = create(ledger, "q")
            reader.join(timeout=5)
        finally:
            proc.send_signal(signal.SIGINT)
            _, errors = proc.communicate(timeout=10)
    assert proc.returncode == 0, errors
    assert errors == ""
    assert [line.split("\t")[1:4] for line in lines] == [["job_created", "q", str(job_id)]]


@pytest.fixture
def in_india(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone set to UTC+5:30 (a POSIX TZ: no tz database needed)."""
    monkeypatch.setenv("TZ", "IST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_times_are_local_on_a_terminal_and_rfc_3339_utc_when_piped(in_india: None) -> None:
    at = datetime(2030, 1, 1, 0, 0, 0, 250_000, tzinfo=UTC)
    assert when(at, plain=True) == "2030-01-01T00:00:00.250000Z"
    assert when(at, plain=False) == "2030-01-01 05:30:00.250"
    retry_at = int(at.timestamp() * 1000) + 135_000
    backoff = {"base": 10_000, "factor": 2, "max": 3_600_000}
    data = {"ended": True, "retry_at": retry_at, "error": {"kind": "timeout", "message": "running longer"},
            "retry_delays": [135_000, 3_600_000], "retry_backoff": backoff, "input": {"text": "x" * 80},
            "missed": 0, "progress": 0}  # fmt: skip
    assert event_details(data, plain=False) == (
        'ended retry_at="2030-01-01 05:32:15.250" error="timeout: running longer" retry_delays=2m15s,1h '
        'retry_backoff=10s*2^n<=1h input={"text":"' + "x" * 50 + "… progress=0"
    )
    assert event_details(data, plain=True).startswith("ended retry_at=2030-01-01T00:02:15.250000Z error=")

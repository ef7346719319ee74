"""``jobledger events export`` / ``import`` / ``tail`` from the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner, Result

from api.cli import build_app
from ledger.keys import Keys
from ledger.runner import Ledger
from replay.compare import compare
from tests.live_server import live_server
from tests.replay_support import stream_entries, stream_ids, workload
from tests.support import create, put_queue

REPO = Path(__file__).resolve().parent.parent
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
    assert set(first) == {"id", "type", "v", "at", "job", "queue", "data"} and isinstance(first["data"], str)
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


@pytest.fixture
def server(redis_url: str, namespace: str) -> Iterator[str]:
    with live_server(redis_url, namespace) as url:
        yield url


def test_tail_prints_each_event_as_it_happens_and_stops_cleanly(
    server: str, client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    put_queue(ledger, "q")
    first = create(ledger, "q", input="before")
    after = stream_ids(client, namespace)[0]  # the queue's creation
    env = {k: v for k, v in os.environ.items() if k not in PIPED}
    command = [sys.executable, "-m", "api.cli", "events", "tail", "--url", server, "--json", "--after", after,
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


def _read_lines(stream: object, n: int) -> list[str]:
    out: list[str] = []
    for line in stream:  # type: ignore[attr-defined]
        out.append(line)
        if len(out) == n:
            break
    return out

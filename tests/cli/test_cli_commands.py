"""The commands that talk to a server (``queues``, ``queue``, ``job``, ``history``, ``submit``, and
``worker``'s argument checks) against a real one, each in its three outputs: plain text when piped,
tables and colours on a terminal, and ``--json``."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from jobledger.cli.main import build_app
from jobledger.client import Client
from jobledger.ledger.requests import JOB_STATUSES, JobOptions
from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import tick
from tests.support.http import DEFAULT_SETTINGS
from tests.support.live_server import live_server

REPO = Path(__file__).resolve().parents[2]
ANSI = "\x1b["
PIPED = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "NO_COLOR": None, "JOBLEDGER_URL": None}
TERMINAL = {**PIPED, "TTY_COMPATIBLE": "1", "COLUMNS": "160"}


@dataclass(frozen=True)
class World:
    """A server with queue ``emails``: one job that failed once and then completed, one queued."""

    url: str
    done: int
    waiting: int


@pytest.fixture
def world(redis_url: str, namespace: str, ledger: Ledger) -> Iterator[World]:
    with live_server(redis_url, namespace) as url, Client(url) as api:
        api.put_queue("emails", timeout="10m", retries=2)
        done = api.submit("emails", {"to": "ada"}, tags=["welcome"])
        api.fetch("emails", worker="w1")
        api.fail(done, attempt=1)
        assert tick(ledger)["retries"] == [done]
        api.fetch("emails", worker="w2")
        api.complete(done, {"sent": True}, attempt=2)
        waiting = api.submit("emails", "later")
        yield World(url, done, waiting)


def run(world: World, *args: str, terminal: bool = False, code: int = 0) -> str:
    """Run ``jobledger ARGS --url URL``; its stdout (stderr when it must fail)."""
    result = CliRunner().invoke(build_app(), [*args, "--url", world.url], env=TERMINAL if terminal else PIPED)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result.stdout if code == 0 else result.stderr


def visible(text: str) -> str:
    """What a terminal shows: the text without its escape sequences."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def lines(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines()]


# queues


def test_queues(world: World) -> None:
    emails = ["emails", "1", "0", "0", "1", "0", "0", "0"]
    assert lines(run(world, "queues")) == [["queue", *JOB_STATUSES], emails]
    shown = run(world, "queues", terminal=True)
    assert ANSI in shown and "┃ queue  ┃ queued ┃" in visible(shown) and "│ emails │ 1" in visible(shown)
    counts = {"queued": 1, "running": 0, "failed": 0, "completed": 1, "cancelled": 0, "timed_out": 0,
              "scheduled": 0}  # fmt: skip
    assert json.loads(run(world, "queues", "--json")) == {"emails": counts}


# queue


def test_queue(world: World) -> None:
    assert lines(run(world, "queue", "emails")) == [
        ["timeout", "10m"], ["heartbeat_timeout", "0s"], ["expires_after", "5m"], ["retries", "2"],
        ["retry_delays", "[]"], ["retry_backoff", ""], ["priority", "0"], ["max_queued_time", "0s"],
        ["max_running", "0"], ["max_running_per_key", "0"], ["retry_on", "[]"], ["no_retry_on", "[]"],
        ["paused", "false"], ["max_file_size", "1073741824"], ["max_job_bytes", "4294967296"],
        ["queued", "1"], ["running", "0"], ["failed", "0"], ["completed", "1"],
        ["cancelled", "0"], ["timed_out", "0"], ["scheduled", "0"],
    ]  # fmt: skip
    shown = run(world, "queue", "emails", terminal=True)
    assert ANSI in shown and "queue emails" in shown and "10m" in shown
    data = json.loads(run(world, "queue", "emails", "--json"))
    assert data["name"] == "emails"
    assert data["settings"] == {**DEFAULT_SETTINGS, "timeout": "10m", "retries": 2}
    assert data["counts"]["completed"] == 1
    assert run(world, "queue", "nope", code=1) == "jobledger: not found: queue 'nope' does not exist\n"


# job


def test_job(world: World) -> None:
    fields = dict(lines(run(world, "job", str(world.done))))  # type: ignore[arg-type]
    assert (fields["id"], fields["status"], fields["attempt"], fields["worker"]) == (
        str(world.done),
        "completed",
        "2",
        "w2",
    )
    assert (fields["input"], fields["output"], fields["tags"]) == (
        '{"to":"ada"}',
        '{"sent":true}',
        '["welcome"]',
    )
    assert fields["ended_at"].endswith("Z") and fields["last_heartbeat"] == ""
    shown = run(world, "job", str(world.done), terminal=True)
    assert ANSI in shown and f"job {world.done}" in shown and "completed" in shown
    data = json.loads(run(world, "job", str(world.waiting), "--json"))
    assert (data["id"], data["status"], data["input"], data["started_at"]) == (
        world.waiting,
        "queued",
        "later",
        None,
    )
    assert run(world, "job", "999", code=1) == "jobledger: not found: job 999 does not exist\n"


# history


def test_history(world: World) -> None:
    rows = lines(run(world, "history", str(world.done)))
    assert rows[0] == ["time", "after", "event", "attempt", "worker", "error", "detail"]
    assert [r[2:] for r in rows[1:]] == [
        ["job_created", "", "", "", ""],
        ["job_started", "1", "w1", "", ""],
        ["job_failed", "1", "w1", "error", "will retry"],
        ["job_requeued", "1", "w1", "", "retry"],
        ["job_started", "2", "w2", "", ""],
        ["job_completed", "2", "w2", "", 'output {"sent":true}'],
    ]
    assert rows[1][1] == "" and all(float(r[1]) >= 0 for r in rows[2:])
    assert all(r[0].endswith("Z") for r in rows[1:])
    shown = run(world, "history", str(world.done), terminal=True)
    assert ANSI in shown and "job_requeued" in shown and "+" in shown and "will retry" in shown
    events = json.loads(run(world, "history", str(world.done), "--json"))
    assert [e["type"] for e in events] == [r[2] for r in rows[1:]]
    assert events[1]["data"] == {"attempt": 1, "worker": "w1"}


# submit


def test_submit(world: World) -> None:
    created = int(run(world, "submit", "emails", "--input", '{"to": "bob"}', "--tag", "a", "--tag", "b",
                      "--timeout", "1m", "--retries", "1", "--retry-delay", "5s"))  # fmt: skip
    with Client(world.url) as api:
        job = api.get(created)
    assert (job.input, job.tags, job.timeout, job.retries, job.retry_delays) == (
        {"to": "bob"},
        ["a", "b"],
        "1m",
        1,
        ["5s"],
    )
    shown = run(world, "submit", "emails", terminal=True)
    assert ANSI in shown and "created job" in shown and "emails" in shown
    data = json.loads(run(world, "submit", "emails", "--input", "[1]", "--json"))
    assert data == {"id": created + 2, "queue": "emails", "created": True}
    assert "--input is not valid JSON" in run(world, "submit", "emails", "--input", "{nope", code=2)
    assert run(world, "submit", "no such", code=1).startswith("jobledger: bad request: invalid queue name")


def test_submit_has_an_option_for_every_job_option_described_as_declared() -> None:
    """``--name`` (a list's in the singular, ``--tag``: repeatable), its help the option's description;
    but ``--input`` (JSON text) and ``--file`` (a path streamed up, not a stored blob's name)."""
    submit = typer.main.get_command(build_app()).commands["submit"]  # type: ignore[attr-defined]
    helps = {
        flag.removeprefix("--").replace("-", "_"): param.help
        for param in submit.params
        for flag in param.opts
    }
    for name, field in JobOptions.model_fields.items():
        option = name if name in helps else name.removesuffix("s")
        assert option in helps, f"submit has no option for {name}"
        if name not in ("input", "files"):
            assert helps[option].startswith(str(field.description).rstrip(".")), name


def test_an_unreachable_server_is_reported() -> None:
    result = CliRunner().invoke(build_app(), ["queues", "--url", "http://127.0.0.1:9"], env=PIPED)
    assert result.exit_code == 1
    assert result.stderr.startswith("jobledger: unavailable: cannot reach jobledger at http://127.0.0.1:9")


# worker


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        ("no_module_here:run", "cannot import 'no_module_here'"),
        ("tests.support.worker_handlers:nope", "has no 'nope'"),
        ("justaname", "module:function"),
    ],
)  # fmt: skip
def test_worker_refuses_a_handler_it_cannot_load(handler: str, message: str) -> None:
    result = CliRunner().invoke(build_app(), ["worker", handler, "--queue", "q"], env=PIPED)
    assert result.exit_code == 2
    assert message in result.stderr


@pytest.mark.parametrize("command", ["serve", "scheduler", "worker"])
def test_every_command_that_logs_takes_the_log_format_and_level(command: str) -> None:
    result = CliRunner().invoke(build_app(), [command, "--help"], env={**PIPED, "COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--log-format" in result.stdout and "--log-level" in result.stdout


def test_the_worker_refuses_a_log_format_it_does_not_know() -> None:
    args = ["worker", "--exec", "--queue", "q", "--log-format", "xml"]
    result = CliRunner().invoke(build_app(), args, env=PIPED)
    assert result.exit_code == 2
    assert "--log-format: 'xml' is not a log format" in result.stderr


# A real terminal


def test_a_real_terminal_gets_tables_and_colours(world: World) -> None:
    """Detection without any variable: stdout is a pseudo-terminal."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR", "NO_COLOR")}
    with subprocess.Popen([sys.executable, "-m", "jobledger.cli.main", "queues", "--url",
               world.url], cwd=REPO,
                          stdout=follower, stderr=subprocess.PIPE, env=env) as proc:  # fmt: skip
        os.close(follower)
        shown = _read_all(leader)
        assert proc.wait(timeout=30) == 0
    assert ANSI in shown and "emails" in shown and "━" in shown


def _read_all(fd: int) -> str:
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:  # EIO: the other side closed
        pass
    finally:
        os.close(fd)
    return b"".join(chunks).decode()

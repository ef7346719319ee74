"""``jobledger replay rebuild`` and ``replay verify`` from the command line, and a rebuilt view served
read-only."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
import redis
from typer.testing import CliRunner, Result

from jobledger.cli.main import build_app
from jobledger.cli.replay_commands import removed_unless_done
from jobledger.ledger import commands
from jobledger.ledger.durations import format_time
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger
from jobledger.projections.readers import job as readers_job
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from tests.support.ledger import START_MS, create, fetch, put_queue, update
from tests.support.live_server import eventually, live_server
from tests.support.replay import stream_ids

#: Nothing of the surroundings leaks in: no colours, and no ledger but the one on the command line.
REPO = Path(__file__).resolve().parents[2]
PIPED: dict[str, str | None] = dict.fromkeys(
    [
        "TTY_COMPATIBLE",
        "FORCE_COLOR",
        "NO_COLOR",
        "JOBLEDGER_REDIS_URL",
        "JOBLEDGER_NAMESPACE",
        "JOBLEDGER_CONFIG",
    ]
)


def jobledger(
    redis_url: str, namespace: str, *args: str, code: int = 0, env: dict[str, str | None] = PIPED
) -> Result:
    result = CliRunner().invoke(
        build_app(), [*args, "--redis-url", redis_url, "--namespace", namespace], env=env
    )
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result


@pytest.fixture
def history(client: redis.Redis, namespace: str) -> list[str]:
    """Three jobs queued at START, all started and two completed a minute later; the event ids."""
    clock = [START_MS]
    ledger = Ledger(client, namespace, clock=lambda: clock[0])
    put_queue(ledger, "mail")
    for n in range(3):
        create(ledger, "mail", input=n)
    clock[0] = START_MS + 60_000
    for started in fetch(ledger, "mail", count=3)[:2]:
        update(ledger, started.id, status="completed", attempt=started.attempt)
    return stream_ids(client, namespace)


def test_rebuild_until_a_time_serves_a_read_only_view_of_that_moment(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    view = namespace + "-then"
    until = format_time(START_MS + 30_000) or ""
    out = jobledger(redis_url, namespace, "replay", "rebuild", "--until", until, "--into", view).stdout
    assert re.search(r"^rebuilt 4 events in [0-9.]+ s \([0-9,]+ events/s\) from ledger", out, re.M), out
    assert f"as of event {history[3]} (at " in out
    assert f"jobledger serve --namespace {view} --read-only --port 8024 --redis-url {redis_url}" in out
    rebuild(client, namespace, namespace + "-expected", until=history[3])
    assert compare(client, namespace + "-expected", view) == []
    with live_server(redis_url, view, read_only=True) as url, httpx2.Client(base_url=url) as http:
        assert http.get("/queue/mail/size").json() == 3
        assert http.get("/job/1").json()["status"] == "queued"
        assert http.get("/info").json()["statistics"]["total_jobs_completed"] == 0
        for method, path in [("POST", "/queue/mail/job"), ("GET", "/queue/mail/job"),
                             ("PATCH", "/job/1"), ("DELETE", "/job/1"), ("PUT", "/queue/other")]:  # fmt: skip
            refused = http.request(method, path, json={})
            assert refused.status_code == 405 and "read-only" in refused.json()["error"], refused.text
        assert http.get("/queue/mail/size").json() == 3
    assert client.hget(Keys(namespace).job(1), "status") == b"completed"  # the live ledger is untouched


def test_rebuild_whole_ledger_into_a_default_namespace(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    out = jobledger(redis_url, namespace, "replay", "rebuild").stdout
    target = re.search(r"into namespace '([^']+)'", out)
    assert target and re.fullmatch(rf"{namespace}-rebuild-\d{{8}}T\d{{6}}Z(-\d+)?", target.group(1)), out
    assert f"rebuilt {len(history)} events" in out
    assert compare(client, namespace, target.group(1)) == []


def test_rebuild_refuses_a_namespace_in_use_and_a_bad_until(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    err = jobledger(
        redis_url, namespace, "replay", "rebuild", "--into", namespace + "-x", "--until", "soon", code=2
    )
    assert "--until must be an event id" in err.stderr
    client.set(Keys(namespace + "-x").prefix + "something", "1")
    err = jobledger(redis_url, namespace, "replay", "rebuild", "--into", namespace + "-x", code=3)
    assert "is not empty" in err.stderr
    assert client.get(Keys(namespace + "-x").prefix + "something") == b"1"
    err = jobledger(redis_url, namespace, "replay", "rebuild", "--until", "2000-01-01T00:00:00Z", code=3)
    assert "no event at or before" in err.stderr


def test_verify_passes_then_names_a_corrupted_key_and_exits_1(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    out = jobledger(redis_url, namespace, "replay", "verify").stdout
    assert re.search(
        rf"^verified ledger '{namespace}': \d+ keys compared as of .*: no difference$", out, re.M
    ), out
    client.hset(Keys(namespace).job(2), "status", "queued")
    out = jobledger(redis_url, namespace, "replay", "verify", code=1).stdout
    assert f"job:2 (as of event {history[-1]}):\n  field status: expected 'completed', found 'queued'" in out
    assert re.search(r"^1 of \d+ keys differ", out, re.M)
    assert list(client.scan_iter(match=f"{{{namespace}-verify-*")) == []


def test_progress_shows_on_a_terminal_only(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    piped = jobledger(redis_url, namespace, "replay", "rebuild", "--into", namespace + "-a")
    assert piped.stderr == ""
    terminal = {**PIPED, "TTY_COMPATIBLE": "1", "COLUMNS": "150"}
    shown = jobledger(redis_url, namespace, "replay", "rebuild", "--into", namespace + "-b", env=terminal)
    assert "rebuild" in shown.stderr and "events/s" in shown.stderr and f"{len(history)}/" in shown.stderr


def test_an_interrupted_rebuild_exits_130_and_leaves_nothing(
    client: redis.Redis, redis_url: str, namespace: str
) -> None:
    ledger = Ledger(client, namespace)
    put_queue(ledger, "mail")
    ledger.run_many(commands.create_job("mail", JobOptions(input=n)) for n in range(3000))
    target = namespace + "-partial"
    command = [sys.executable, "-m", "jobledger.cli.main", "replay", "rebuild", "--into", target,
               "--batch", "1",
               "--redis-url", redis_url, "--namespace", namespace]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in PIPED}
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:  # fmt: skip
        eventually(lambda: proc.poll() is not None or client.exists(Keys(target).job(1)), timeout=20)
        proc.send_signal(signal.SIGINT)
        _, errors = proc.communicate(timeout=20)
    assert proc.returncode == 130, errors
    assert "interrupted; the partial rebuild was removed" in errors
    assert list(client.scan_iter(match=Keys(target).pattern())) == []


def test_rebuild_swap_replaces_the_live_projections_online(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    ledger = Ledger(client, namespace)
    before = ledger.read(readers_job(3))
    out = jobledger(redis_url, namespace, "replay", "rebuild", "--swap").stdout
    assert re.search(rf"generation 1 of ledger '{namespace}' is live \(was 0\)", out), out
    assert re.search(r"\d+ keys of the old generation removed", out), out
    assert client.get(Keys(namespace).build("generation")) == b"1"
    assert ledger.read(readers_job(3)) == before
    assert jobledger(redis_url, namespace, "replay", "verify").exit_code == 0
    err = jobledger(redis_url, namespace, "replay", "rebuild", "--swap", "--into", "x", code=2).stderr
    assert "--swap rebuilds the live projections" in err


def test_verify_names_keys_of_the_old_layout_and_rebuild_swap_moves_them(
    client: redis.Redis, redis_url: str, namespace: str, history: list[str]
) -> None:
    create(Ledger(client, namespace), "mail", input="waiting")  # a queued job, in queue:mail:queued
    keys = Keys(namespace)
    client.rename(keys.queued_ids("mail"), keys.prefix + "queue:mail:jobs")  # as an earlier version named it
    out = jobledger(redis_url, namespace, "replay", "verify", code=1).stdout
    assert "queue:mail:jobs (as of event" in out and "queue:mail:queued (as of event" in out, out
    assert "named as an earlier jobledger named them (e.g. queue:mail:jobs, now queue:{name}:queued)" in out
    assert "`jobledger replay rebuild --swap` rebuilds them under the new layout" in out
    jobledger(redis_url, namespace, "replay", "rebuild", "--swap")
    out = jobledger(redis_url, namespace, "replay", "verify").stdout
    assert "no difference" in out and "earlier jobledger" not in out, out
    assert not list(client.scan_iter(match=keys.prefix + "*queue:mail:jobs"))


def test_a_removal_after_an_interrupt_mid_command_reads_no_answer_meant_for_it(redis_url: str) -> None:
    """An interrupt can come between a command's sending and its answer: the removal of what was
    half made must not read that answer as its own (a SCAN once read a fold's four values)."""
    client = redis.Redis.from_url(redis_url)
    namespace = "interrupted-" + os.urandom(4).hex()
    keys = Keys(namespace)
    client.set(keys.build("events"), "x")
    pool = client.connection_pool
    with pytest.raises(KeyboardInterrupt), removed_unless_done(client, namespace):
        try:  # redis-py 5 names the command; later versions take none
            conn = pool.get_connection()
        except TypeError:
            conn = pool.get_connection("EVAL")  # type: ignore[call-arg]
        conn.send_command("EVAL", "return {1, 2, 3, 4}", 0)  # its answer left unread
        pool.release(conn)
        raise KeyboardInterrupt
    assert list(client.scan_iter(match=keys.pattern())) == []
    client.close()

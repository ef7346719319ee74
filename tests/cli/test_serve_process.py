"""``jobledger serve`` and ``jobledger scheduler`` started and stopped as real processes (by PID):
a taken port ends serve at once, naming the address, with no embedded server left; SIGTERM with a
long-poll in flight stops it within shutdown_timeout; a second signal stops it at once; a killed
serve takes its embedded server with it; logs are JSON lines without the idle polls; a warning
repeated while Redis is down is written once."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest

from jobledger.runtime.embedded import RECORD_NAME, EmbeddedServer, free_port, pid_alive
from tests.cli.process_support import (
    jobledger,
    no_server_left,
    record_pid,
    serve_args,
    valkeys_in,
    wait_for,
    wait_serving,
)
from tests.support.private_redis import PrivateServer

#: Seconds a process may take beyond what it promises (the machine is shared and loaded).
SLACK = 2.0


@contextmanager
def in_flight(request: Callable[[], object]) -> Iterator[list[object]]:
    """``request`` running in a thread while the block runs (it has half a second to reach the server
    first); after the block, what it returned or the HTTP error that ended it."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(request())
        except httpx2.HTTPError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(0.5)  # the request is in the server, waiting
    try:
        yield outcome
    finally:
        thread.join(timeout=95)


def get(url: str) -> int:
    return httpx2.get(url, timeout=90).status_code


def follow(url: str) -> str:
    """Read a live feed to its end."""
    with httpx2.stream("GET", url, timeout=90) as response:
        for _ in response.iter_lines():
            pass
    return "ended"


def test_serve_on_a_taken_port_exits_at_once_naming_the_address(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with socket.socket() as taken, no_server_left(data_dir):
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with jobledger(serve_args(data_dir, port), tmp_path / "serve.log") as serve:
            started = time.monotonic()
            code = serve.wait(timeout=15)
            took = time.monotonic() - started
            assert code is not None, f"still running after 15 s:\n{serve.output()}"
            assert code != 0
            assert f"127.0.0.1:{port}" in serve.output() and "in use" in serve.output()
            # The time includes starting the interpreter and importing the command line, which on a
            # loaded two-core machine alone can take seconds; a server that hangs never ends.
            assert took < 10, f"took {took:.1f} s"
            assert not (data_dir / RECORD_NAME).exists()


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[Path, str, list[str]]]:
    data_dir, port = tmp_path / "data", free_port()
    yield data_dir, f"http://127.0.0.1:{port}", serve_args(data_dir, port)


def test_sigterm_ends_long_polls_and_feeds_at_once_and_stops(
    tmp_path: Path, serving: tuple[Path, str, list[str]]
) -> None:
    """Nothing of a long-poll or a live feed is owed to a stopping server: a long-poll answers 204
    and a feed ends (its client resumes elsewhere), so serve stops at once, not after the 30 s of
    shutdown_timeout."""
    data_dir, base, args = serving
    with no_server_left(data_dir), jobledger(args, tmp_path / "s.log") as serve:  # shutdown_timeout 30s
        wait_serving(serve, base)
        valkey = record_pid(data_dir)
        assert httpx2.put(f"{base}/queue/q").status_code == 201
        with (
            in_flight(lambda: get(f"{base}/queue/q/job?wait=60s")) as polled,
            in_flight(lambda: follow(f"{base}/events/stream")) as followed,
        ):
            serve.signal(signal.SIGTERM)
            started = time.monotonic()
            code = serve.wait(timeout=30 + 10)
            took = time.monotonic() - started
        assert code == 0, serve.output()
        assert took <= SLACK, f"stopped {took:.1f} s after SIGTERM"
        assert polled == [204]
        assert followed == ["ended"]
        assert not pid_alive(valkey)


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_second_signal_stops_serve_at_once(tmp_path: Path, second: int) -> None:
    """A request held up by a stopped Redis keeps serve stopping for up to shutdown_timeout; a second
    signal cuts it short."""
    redis_server = PrivateServer(tmp_path / "redis")
    redis_server.start()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args = ["serve", "--redis-url", redis_server.url, "--host", "127.0.0.1", "--port", str(port)]
    try:
        with jobledger(args, tmp_path / "s.log") as serve:  # shutdown_timeout 30s
            wait_serving(serve, base)
            assert httpx2.put(f"{base}/queue/q").status_code == 201
            redis_server.pause()
            with in_flight(lambda: get(f"{base}/queue/q")) as outcome:
                serve.signal(signal.SIGTERM)
                time.sleep(1.0)
                assert serve.wait(timeout=0) is None  # still waiting for the request
                serve.signal(second)
                started = time.monotonic()
                code = serve.wait(timeout=15)
                took = time.monotonic() - started
            assert code is not None, serve.output()
            assert took <= SLACK, f"stopped {took:.1f} s after the second signal"
            assert outcome  # the request was answered or cut, not left hanging
    finally:
        redis_server.resume()
        redis_server.kill()


def test_a_killed_serve_takes_its_embedded_server_with_it(
    tmp_path: Path, serving: tuple[Path, str, list[str]]
) -> None:
    data_dir, base, args = serving
    with no_server_left(data_dir), jobledger(args, tmp_path / "s.log") as serve:
        wait_serving(serve, base)
        valkey = record_pid(data_dir)
        serve.signal(signal.SIGKILL)
        serve.wait(timeout=10)
        wait_for(lambda: not pid_alive(valkey), "the embedded server to stop with its owner", timeout=10)


def test_the_scheduler_command_stops_on_sigterm_and_stops_its_server(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedServer(data_dir):  # a ledger lives there
        pass
    with no_server_left(data_dir), jobledger(["scheduler", "--data-dir", str(data_dir)],
                                             tmp_path / "s.log") as scheduler:  # fmt: skip
        wait_for(lambda: valkeys_in(data_dir), "the scheduler's embedded server")
        running = "scheduler running on ledger 'jobledger'"
        wait_for(lambda: running in scheduler.output(), "the scheduler's start line", timeout=30)
        scheduler.signal(signal.SIGTERM)
        assert scheduler.wait(timeout=5) == 0, scheduler.output()


def test_a_redis_worker_stopped_by_sigterm_stops_its_embedded_server(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedServer(data_dir):  # a ledger lives there
        pass
    args = ["worker", "tests.support.worker_handlers:wait_for_release", "--queue", "q",
            "--transport", "redis", "--data-dir", str(data_dir)]  # fmt: skip
    with no_server_left(data_dir), jobledger(args, tmp_path / "w.log") as worker:
        wait_for(lambda: valkeys_in(data_dir), "the worker's embedded server")
        time.sleep(0.5)
        worker.signal(signal.SIGTERM)
        assert worker.wait(timeout=10) is not None, worker.output()
        wait_for(lambda: not valkeys_in(data_dir), "the embedded server to stop", timeout=5)


def test_serve_logs_json_lines_and_leaves_idle_polls_out(
    tmp_path: Path, serving: tuple[Path, str, list[str]]
) -> None:
    data_dir, base, args = serving
    with no_server_left(data_dir), jobledger([*args, "--log-format", "json"], tmp_path / "s.log") as serve:
        wait_serving(serve, base)
        assert httpx2.put(f"{base}/queue/q").status_code == 201
        assert httpx2.get(f"{base}/queue/q/job").status_code == 204
        assert httpx2.get(f"{base}/queue/q/job?wait=0.2s").status_code == 204
        serve.signal(signal.SIGTERM)
        assert serve.wait(timeout=10) == 0
    items = [json.loads(line) for line in serve.output().splitlines()]  # every line is one object
    messages = [item["message"] for item in items]
    assert all({"time", "level", "logger", "message"} <= set(item) for item in items)
    assert any("listening on http://127.0.0.1:" in m for m in messages)
    assert any('"PUT /queue/q HTTP/1.1" 201' in m for m in messages)
    assert not any("GET /queue/q/job" in m for m in messages)


def test_a_warning_repeated_while_redis_is_down_is_written_once(tmp_path: Path) -> None:
    nowhere = f"redis://127.0.0.1:{free_port()}"  # nothing listens there
    with jobledger(["scheduler", "--redis-url", nowhere], tmp_path / "s.log") as scheduler:
        time.sleep(5)  # the checks fail again and again
        scheduler.signal(signal.SIGTERM)
        assert scheduler.wait(timeout=5) == 0, scheduler.output()
    skipped = [line for line in scheduler.output().splitlines() if "skipped" in line]
    by_task = sorted(line.split(": ")[0].split(" ", 1)[1] for line in skipped)
    assert by_task == ["WARNING jobledger.blobs", "WARNING jobledger.scheduler"], scheduler.output()


@pytest.mark.parametrize(
    ("section", "said"),
    [
        ('[queue.q]\ntimeout = "nonsense"\n', "[queue.q] timeout:"),
        ('[launcher.nightly]\ntype = "@cron"\narguments = "bad cron"\nqueue = "q"\n', "[launcher.nightly]"),
    ],
)
def test_a_section_its_model_refuses_stops_serve_with_exit_2_and_no_traceback(
    tmp_path: Path, section: str, said: str
) -> None:
    data_dir = tmp_path / "data"
    (tmp_path / "bad.toml").write_text(section)
    args = serve_args(data_dir, free_port(), "--config", str(tmp_path / "bad.toml"))
    with no_server_left(data_dir), jobledger(args, tmp_path / "s.log") as serve:
        assert serve.wait(timeout=30) == 2, serve.output()
        assert f"configuration: {said}" in serve.output()
        assert "Traceback" not in serve.output() and "╭" not in serve.output()

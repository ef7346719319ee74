"""Ours from a cold start: ``jobledger serve`` as a new process, timed from its spawn to the first
200 from ``/ready`` (the server answering, the scheduler running), beside a bare Starlette app under
uvicorn, timed from its spawn to its first 200.  And, with no bar, ``serve`` timed from its spawn to
the first 201 of ``POST /queue/q/job``: the outage a restart makes ends when a create is answered,
and the server defers loading what a create needs to its warm-up, past ``/ready``.

``serve`` is started against the measurement's server (already running: a restart's case), and on
an embedded server of its own in a new data directory (the server started too).  Each figure is the
median of several starts, after one start not counted; the processes run with their bytecode cache
written and read, as an installed package's is, whatever ``PYTHONDONTWRITEBYTECODE`` says here.
The four kinds of start are taken in turns, so that the machine's load falls on each alike.  The
ratio is ours / bare: how much more a start of ours costs than Python, Starlette and uvicorn's.

The starts are those of the default install, which has no OpenTelemetry (an extra, ``otel``).
Where its SDK is installed (the ``test`` extra has it), redis-py imports its metrics SDK with
``import redis``, tracing on or not: so these starts run with a package ``opentelemetry`` first on
their path that fails to import, as where it is not installed, and a fifth kind of start, with no
bar, times ``serve`` (Redis running) to ``/ready`` with the SDK found: what the ``otel`` extra costs.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

from jobledger.ledger import commands
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitioned import open_ledger
from jobledger.ledger.requests import QueueSettings

from . import figures as F
from .figures import Figure, Results, Settings
from .ours_http import stop
from .ours_process import drop
from .server import Servers

#: Starts timed per figure (after one not counted).
RUNS = 11
QUICK_RUNS = 3
#: Seconds a start may take before the part fails.
START_TIMEOUT = 60.0
#: Seconds between two probes of a starting process.
PROBE_EVERY = 0.005
NAMESPACE = "bench-start"
#: The queue the creates go to (made before the starts).
QUEUE = "q"
#: A create, as a client's first request to a restarted server.
CREATE = (
    f"POST /queue/{QUEUE}/job HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    'Content-Length: 12\r\nConnection: close\r\n\r\n{"input": 1}'
).encode()
#: The bare app: Starlette and uvicorn only, run as a script (no package of ours imported).
BARE_APP = """
import sys
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def ready(request):
    return JSONResponse({"ready": True})

app = Starlette(routes=[Route("/ready", ready)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", loop="asyncio")
"""

Spawn = Callable[[int], list[str]]
#: A start's seconds, and the CPU seconds its process had used by then.
Start = tuple[float, float | None]
#: A command to start, what its start waits for (see :func:`time_start`), and its environment.
Timed = tuple[Spawn, Callable[[int], bool], dict[str, str]]
#: What a start without OpenTelemetry finds first on its path (see the module).
NO_OTEL = 'raise ImportError("not installed: the start is measured as the default install runs")\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(hidden: Path | None = None) -> dict[str, str]:
    """The environment of a started process: ours, without a setting of jobledger's (the command
    line says where the ledger is) and with the bytecode cache on; with ``hidden`` (a folder) first
    on its path."""
    drop_names = ("PYTHONDONTWRITEBYTECODE",)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBLEDGER_") and k not in drop_names}
    if hidden is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hidden), env.get("PYTHONPATH")) if p)
    return env


def otel_installed() -> bool:
    """Whether OpenTelemetry's SDK is installed here (recent redis-py then imports it at ``import redis``)."""
    return importlib.util.find_spec("opentelemetry") is not None


def _without_otel(tmp: Path) -> Path:
    """A folder whose package ``opentelemetry`` fails to import, as it does where it is not installed."""
    package = tmp / "without-otel" / "opentelemetry"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(NO_OTEL)
    return package.parent


def _answers(port: int, request: bytes, status: bytes, timeout: float) -> bool:
    """Whether ``request`` sent to ``port`` now is answered with ``status`` within ``timeout`` s."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(request)
            return s.recv(16).startswith(b"HTTP/1.1 " + status)
    except OSError:
        return False


def _ready(port: int) -> bool:
    """Whether ``GET /ready`` on ``port`` answers 200 now."""
    return _answers(port, b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", b"200", 1)


def _created(port: int) -> bool:
    """Whether a create on ``port`` is answered 201 now: once the server listens, its answer is
    waited for however long the modules it needs take to load."""
    return _answers(port, CREATE, b"201", START_TIMEOUT)


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process ``pid`` has used so far; None where /proc has no say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_start(
    command: list[str], port: int, answered: Callable[[int], bool] = _ready, env: dict[str, str] | None = None
) -> Start:
    """Seconds from spawning ``command`` (in ``env``, by default :func:`_env`'s) to the first time
    ``answered`` (by default: the first 200 from ``/ready``) on ``port``, and the CPU seconds the
    process used by then (on a busy machine the first counts the waits for a core too); the process
    is stopped after (SIGTERM, then SIGKILL)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=_env() if env is None else env, stdin=subprocess.DEVNULL)
    try:
        while not answered(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{command[2:4]} exited with {proc.returncode} before it was ready")
            if time.perf_counter() - started > START_TIMEOUT:
                raise RuntimeError(f"{command[2:4]} not ready within {START_TIMEOUT:g}s")
            time.sleep(PROBE_EVERY)
        return time.perf_counter() - started, _cpu_seconds(proc.pid)
    finally:
        stop(proc)


def interleaved_starts(spawns: list[Timed], runs: int) -> list[list[Start]]:
    """``runs`` starts of each command, taken in turns (one of each per round, after a round not
    counted), so that a load that comes and goes on the machine falls on all of them alike; each
    command's starts, as (seconds, CPU seconds)."""
    times: list[list[Start]] = [[] for _ in spawns]
    for round_ in range(runs + 1):
        for (spawn, answered, env), kept in zip(spawns, times, strict=True):
            measured = time_start(spawn(port := _free_port()), port, answered, env)
            if round_:
                kept.append(measured)
    return times


def _median(starts: list[Start]) -> float:
    return statistics.median(t for t, _ in starts)


def _make_queue(url: str) -> None:
    """The queue the creates go to, on the ledger ``serve`` opens (its partitions settled alike)."""
    ledger = open_ledger(url, NAMESPACE)
    try:
        ledger.run(commands.put_queue(QUEUE, QueueSettings()))
    finally:
        for runner in ledger.runners:
            runner.client.close()


def serve_command(port: int, *where: str) -> list[str]:
    return [sys.executable, "-m", "jobledger.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--log-level", "warning", *where]  # fmt: skip


def _figure(label: str, seconds: float, times: list[Start]) -> Figure:
    detail: dict[str, object] = {"runs_ms": [round(t * 1000, 1) for t, _ in times]}
    cpu = [c for _, c in times if c is not None]
    if cpu:
        detail["cpu_ms_median"] = round(statistics.median(cpu) * 1000, 1)
    return Figure(seconds * 1000, "ms", label, detail)


def measure(servers: Servers, settings: Settings, log: Callable[[str], None] = print) -> Results:
    """The start figures: ``serve`` on a running server and on an embedded one, the bare app, and
    the ratios; and ``serve`` on the running server to its first create answered."""
    runs = QUICK_RUNS if settings.quick else RUNS
    with tempfile.TemporaryDirectory(prefix="jobledger-start-") as tmp, servers.fresh() as url:
        bare_script = Path(tmp) / "bare_start.py"
        bare_script.write_text(BARE_APP)
        where = ("--redis-url", url, "--namespace", NAMESPACE)
        dirs = iter(range(runs + 1))
        with_otel = otel_installed()
        env = _env(_without_otel(Path(tmp)) if with_otel else None)

        def serve_in_new_dir(port: int) -> list[str]:
            return serve_command(port, "--data-dir", str(Path(tmp) / f"data-{next(dirs)}"))

        spawns: list[Timed] = [
            (lambda port: [sys.executable, str(bare_script), str(port)], _ready, env),
            (lambda port: serve_command(port, *where), _ready, env),
            (serve_in_new_dir, _ready, env),
            (lambda port: serve_command(port, *where), _created, env),
        ]
        if with_otel:
            spawns.append((lambda port: serve_command(port, *where), _ready, _env()))
        try:
            _make_queue(url)
            bare_times, ours_times, embedded_times, create_times, *otel_times = interleaved_starts(
                spawns, runs
            )
        finally:
            with redis.Redis.from_url(url) as client:
                drop(client, Keys(NAMESPACE))
    bare, ours, embedded = _median(bare_times), _median(ours_times), _median(embedded_times)
    create = _median(create_times)
    otel = f", {_median(otel_times[0]) * 1000:.0f} ms with OpenTelemetry's SDK" if otel_times else ""
    log(f"  bare Starlette {bare * 1000:.0f} ms, serve {ours * 1000:.0f} ms (Redis running), "
        f"{embedded * 1000:.0f} ms (embedded), {create * 1000:.0f} ms to the first create{otel}")  # fmt: skip
    note = f"median of {runs} starts, spawn to the first 200 from /ready"
    new_dir = f"{note}; the embedded server started in a new data directory"
    first_create = f"median of {runs} starts, spawn to the first 201 from POST /queue/{QUEUE}/job"
    figures = {
        F.START_OURS: _figure(f"{note}; Redis already running", ours, ours_times),
        F.START_EMBEDDED: _figure(new_dir, embedded, embedded_times),
        F.START_CREATE: _figure(f"{first_create}; Redis already running", create, create_times),
        F.START_BARE: _figure(f"{note}; Starlette + uvicorn, one route", bare, bare_times),
        F.START_RATIO: Figure(ours / bare, "x", "serve (Redis running) / bare Starlette"),
        F.START_EMBEDDED_RATIO: Figure(embedded / bare, "x", "serve (embedded Redis) / bare Starlette"),
    }
    for times in otel_times:
        label = f"{note}; Redis already running; OpenTelemetry's SDK installed"
        figures[F.START_OTEL] = _figure(label, _median(times), times)
    return figures

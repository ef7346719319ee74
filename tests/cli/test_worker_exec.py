"""The orchestrator's flow end to end with real processes: ``jobledger serve`` (its scheduler on),
a job created with a ``run.sh`` and a data file, ``jobledger worker --exec`` running it; a script
that fails, one that runs past its timeout, one cancelled, and a worker killed mid-job.  Process
groups are checked gone by PID."""

from __future__ import annotations

import hashlib
import signal

import httpx2
import pytest

from tests.cli.exec_support import Flow, group_gone, stopped
from tests.cli.process_support import wait_for
from tests.support.files import blob_path


@pytest.mark.parametrize("transport", ["http", "redis"])
def test_a_script_runs_and_its_results_go_up(
    flow: Flow, transport: str, redis_url: str, namespace: str
) -> None:
    """Over Redis the worker reads and writes the blob store ``[blobs]`` names (here: the data
    directory's, the server's own)."""
    job_id = flow.job(
        "sort data.csv > sorted.csv\nmkdir out && echo x > out/x.txt\necho sorted $JOBLEDGER_JOB_ID\n"
    )
    over = ["--transport", "redis", "--redis-url", redis_url, "--namespace", namespace,
            "--data-dir", str(flow.blobs.parent.parent)] if transport == "redis" else []  # fmt: skip
    worker = flow.worker("worker", *over)
    try:
        job = flow.ended(job_id)
    finally:
        stopped(worker)
    assert job.status == "completed", (job, worker.output())
    assert job.output == {"exit_code": 0, "output_tail": f"sorted {job_id}\n"}
    results = {r.name: r for r in job.results}
    assert sorted(results) == ["out__x.txt", "sorted.csv"]  # not run.sh, not data.csv: unchanged
    assert blob_path(flow.blobs, results["sorted.csv"].sha256).read_bytes() == b"a,1\nb,2\nc,3\n"
    assert results["sorted.csv"].sha256 == hashlib.sha256(b"a,1\nb,2\nc,3\n").hexdigest()
    assert blob_path(flow.blobs, results["out__x.txt"].sha256).read_bytes() == b"x\n"
    assert not list((flow.tmp / "work").iterdir())  # the directory and the log are gone


def test_a_failing_script_fails_the_job_with_its_exit_code_and_output(flow: Flow) -> None:
    job_id = flow.job("echo reading data.csv\necho 'no such column' >&2\nexit 3\n")
    worker = flow.worker("worker")
    try:
        job = flow.ended(job_id)
    finally:
        stopped(worker)
    assert job.status == "failed" and job.results == []
    (error,) = flow.api.get_fields(job_id, "errors")["errors"]
    assert error["kind"] == "exit:3"
    assert error["message"] == "bash run.sh exited with 3: no such column"
    assert error["traceback"] == "reading data.csv\nno such column\n"


def test_a_script_past_its_timeout_is_killed_with_its_group(flow: Flow) -> None:
    pid_file = flow.pid_file("script")
    job_id = flow.job(f"echo $$ > {pid_file}\nsleep 60 & wait\n", timeout="2s")
    worker = flow.worker("worker")
    try:
        pgid = flow.wait_pid("script")
        job = flow.ended(job_id)
        wait_for(lambda: group_gone(pgid), "the script's process group to be gone", timeout=10)
    finally:
        stopped(worker)
    assert job.status in ("failed", "timed_out"), job
    (error,) = flow.api.get_fields(job_id, "errors")["errors"]
    assert error["kind"] == "timeout", error  # the executor's kill, or the scheduler's, whichever came first


def test_a_cancelled_job_kills_its_script(flow: Flow) -> None:
    pid_file = flow.pid_file("script")
    job_id = flow.job(f"echo $$ > {pid_file}\nsleep 60 & wait\n")
    worker = flow.worker("worker")
    try:
        pgid = flow.wait_pid("script")
        flow.api.cancel(job_id)
        wait_for(lambda: group_gone(pgid), "the script's process group to be gone", timeout=10)
        assert flow.api.get(job_id).status == "cancelled"
        assert worker.process.poll() is None  # the worker goes on
    finally:
        stopped(worker)
    assert "cancelled" in worker.output()


def test_a_worker_killed_mid_job_loses_nothing(flow: Flow) -> None:
    """Attempt 1's worker is SIGKILLed: its script dies with it, the job times out and is retried by
    another worker, and a result of the stale attempt is refused."""
    flow.api.put_queue("q", timeout="3s", retries=1, retry_delays=["0s"])
    pid_file = flow.pid_file("script")
    script = f'if [ "$JOBLEDGER_JOB_ATTEMPT" = 1 ]; then echo $$ > {pid_file}; exec sleep 60; fi\n'
    script += "echo ok > ok.txt\n"
    job_id = flow.job(script)
    first = flow.worker("first")
    try:
        pgid = flow.wait_pid("script")
        first.signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
    finally:
        first.close()
    wait_for(lambda: group_gone(pgid), "the script to die with its worker", timeout=10)
    second = flow.worker("second")
    try:
        job = flow.ended(job_id, timeout=30)
    finally:
        stopped(second)
    assert (job.status, job.attempt) == ("completed", 2), (job, second.output())
    assert [(r.name, r.attempt) for r in job.results] == [("ok.txt", 2)]
    types = [e.type for e in flow.api.history(job_id) if e.type != "job_heartbeat"]
    assert "job_timed_out" in types or "job_failed" in types
    late = httpx2.put(f"{flow.base}/job/{job_id}/results/late.txt?attempt=1", content=b"late")
    assert late.status_code == 409, late.text

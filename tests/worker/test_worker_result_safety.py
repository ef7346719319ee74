"""Results read safely: a result swapped for a symlink or a FIFO after the handler named it is
refused (the job fails with kind ``result_upload``), never read through the link, never hung on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobledger.client import Client
from jobledger.worker.worker import JobContext
from tests.worker.worker_support import make_worker, working


def swapped(make: str) -> object:
    def handler(job: JobContext) -> None:
        path = job.dir / "out.txt"
        path.write_text("mine")
        job.add_result("out.txt")
        path.unlink()
        if make == "symlink":
            path.symlink_to("/etc/passwd")
        else:
            os.mkfifo(path)

    return handler


@pytest.mark.parametrize("make", ["symlink", "fifo"])
def test_a_result_swapped_for_a_symlink_or_fifo_is_refused(
    make: str, api: Client, server: str, redis_url: str, namespace: str, tmp_path: Path
) -> None:
    api.put_queue("q", retries=0)
    job_id = api.submit("q")
    worker = make_worker("http", swapped(make), "q", server, redis_url, namespace, files_dir=tmp_path)
    with working(worker):
        job = api.wait(job_id, timeout=15)
    assert (job.status, job.results) == ("failed", [])
    (error,) = api.get_fields(job_id, "errors")["errors"]
    assert error["kind"] == "result_upload" and "out.txt" in error["message"], error

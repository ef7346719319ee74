"""The Worker with files, over both transports (HTTP; Redis with the blob store): input files in the
job's directory, checked before the handler runs; results named by the handler, or every file it
wrote, uploaded before the job completes; the directory removed after."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from jobledger.blobs import LocalBlobStore
from jobledger.client import Client
from jobledger.ledger.runner import Ledger
from jobledger.worker.worker import JobContext
from tests.support.files import blob_path, create_with_files
from tests.worker.worker_support import TRANSPORTS, make_worker, types, working

DATA = b"a,b\n1,2\n"
RUN = b"echo hi\n"


def files_worker(transport: str, handler: Any, server: str, redis_url: str, namespace: str,
                 blobs: Path, **options: Any) -> Any:  # fmt: skip
    """A worker whose job directories are beside ``blobs``, in ``work``."""
    if transport == "redis":
        options["blobs"] = LocalBlobStore(blobs)
    options.setdefault("files_dir", blobs.parent / "work")
    return make_worker(transport, handler, "q", server, redis_url, namespace, **options)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_handler_reads_its_files_and_adds_results(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    blobs = tmp_path / "blobs"
    seen: dict[str, Any] = {}

    def handler(job: JobContext) -> dict[str, int]:
        seen["dir"] = job.dir
        seen["names"] = sorted(p.name for p in job.dir.iterdir())
        rows = (job.dir / "data.csv").read_text().splitlines()
        (job.dir / "count.txt").write_text(str(len(rows)))
        (job.dir / "scratch.txt").write_text("not a result")
        job.add_result("count.txt")
        job.add_result(job.dir / "count.txt", name="copy.txt", media_type="text/x-count")
        return {"rows": len(rows)}

    api.put_queue("q")
    job_id, _ = create_with_files(ledger, blobs, "q", {"data.csv": DATA, "run.sh": RUN})
    worker = files_worker(
        transport, handler, server, redis_url, namespace, blobs, files_dir=tmp_path / "work"
    )
    with working(worker):
        job = api.wait(job_id, timeout=15)
    assert (job.status, job.output) == ("completed", {"rows": 2})
    assert seen["names"] == ["data.csv", "run.sh"]
    results = {r.name: r for r in job.results}
    assert sorted(results) == ["copy.txt", "count.txt"]
    assert results["copy.txt"].media_type == "text/x-count"
    assert results["count.txt"].media_type == "text/plain" and results["count.txt"].attempt == 1
    assert blob_path(blobs, results["count.txt"].sha256).read_bytes() == b"2"
    assert types(api, job_id) == ["job_created", "job_started", "job_result_added", "job_result_added",
                                  "job_completed"]  # fmt: skip
    assert not seen["dir"].exists()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_file_written_is_a_result_with_upload_written(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    blobs = tmp_path / "blobs"

    def handler(job: JobContext) -> None:
        (job.dir / "data.csv").write_bytes(DATA + b"3,4\n")  # changed: a result
        (job.dir / "out").mkdir()
        (job.dir / "out" / "a.txt").write_text("a")

    api.put_queue("q")
    job_id, _ = create_with_files(ledger, blobs, "q", {"data.csv": DATA, "run.sh": RUN})
    worker = files_worker(transport, handler, server, redis_url, namespace, blobs, upload_written=True,
                          keep_files=True)  # fmt: skip
    with working(worker):
        job = api.wait(job_id, timeout=15)
    assert job.status == "completed"
    assert sorted(r.name for r in job.results) == ["data.csv", "out__a.txt"]
    changed = next(r for r in job.results if r.name == "data.csv")
    assert changed.sha256 == hashlib.sha256(DATA + b"3,4\n").hexdigest()
    (kept,) = (tmp_path / "work").iterdir()
    assert (kept / "run.sh").read_bytes() == RUN


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_file_that_arrives_wrong_fails_the_job_before_the_handler(
    transport: str, api: Client, server: str, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    blobs = tmp_path / "blobs"
    ran: list[JobContext] = []
    api.put_queue("q")
    job_id, refs = create_with_files(ledger, blobs, "q", {"data.csv": DATA})
    blob_path(blobs, refs[0].sha256).write_bytes(b"tampered")
    worker = files_worker(
        transport, ran.append, server, redis_url, namespace, blobs, files_dir=tmp_path / "work"
    )
    with working(worker):
        job = api.wait(job_id, timeout=30)
    assert job.status == "failed" and not ran
    (error,) = api.get(job_id).model_dump()["errors"]
    # over HTTP the server never sends whole bytes that do not hash to their name: it cuts the
    # download off; over Redis the worker reads the store itself and finds them wrong
    kind = "file_download" if transport == "http" else "file_digest"
    assert error["kind"] == kind and "'data.csv'" in error["message"], error
    assert not list((tmp_path / "work").iterdir())

"""A job's files and results in a real browser, auth on: signed in with a read token, the job page shows
the Files and Results sections (name, size, SHA-256 with the full one in its title, media type, who
stored it), and a click on a result downloads its bytes through the session cookie."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobledger.blobs import LocalBlobStore
from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions, QueueSettings
from jobledger.ledger.runner import Ledger
from tests.support.blobs import stored
from tests.support.ledger import fetch_one, update
from tests.support.live_server import live_server
from tests.ui.browser import expect
from tests.ui.conftest import OpenTab, Token
from tests.ui.test_signin import sign_in

SCRIPT = b"#!/bin/sh\nsort data.csv > sorted.csv\n"
SORTED = b"a,1\nb,2\nc,3\n"


@pytest.fixture
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


@pytest.fixture
def files_server(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[str]:
    with live_server(redis_url, namespace, blobs=store, auth=True) as url:
        yield url


def test_the_job_page_shows_files_and_results_and_downloads_one(
    files_server: str, tab: OpenTab, token: Token, ledger: Ledger, store: LocalBlobStore, tmp_path: Path
) -> None:
    ledger.run(commands.put_queue("sort", QueueSettings()))
    files = [
        stored(store, "run.sh", SCRIPT, "text/x-sh"),
        stored(store, "data.csv", SORTED[::-1], "text/csv"),
    ]
    options = JobOptions().with_files(files)
    job_id = ledger.as_actor("orchestrator").run(commands.create_job("sort", options)).id
    worker = ledger.as_actor("sorter")
    fetched = fetch_one(worker, "sort")
    result = stored(store, "sorted.csv", SORTED, "text/csv")
    worker.run(commands.add_result(job_id, result, attempt=fetched.attempt))
    update(worker, job_id, status="completed", attempt=fetched.attempt)

    dash = tab(files_server)
    sign_in(dash, token("auditor", "read"))
    page = dash.open(f"/ui/job/{job_id}", "job with files")
    expect(page.locator("#files tbody tr")).to_have_count(2)
    run = page.locator('#files tr[data-name="run.sh"]')
    expect(run.locator("td.actor")).to_have_text("orchestrator")
    expect(run.locator("td.media-type")).to_have_text("text/x-sh")
    expect(run.locator("td.size")).to_have_text(f"{len(SCRIPT)} B")
    full = hashlib.sha256(SCRIPT).hexdigest()
    expect(run.locator("code.sha256")).to_have_attribute("title", full)
    expect(run.locator("code.sha256")).to_have_text(full[:12] + "…")
    sorted_row = page.locator('#results tr[data-name="sorted.csv"]')
    expect(sorted_row.locator("td.actor")).to_have_text("sorter")
    expect(sorted_row.locator("td.attempt")).to_have_text("1")
    page.locator("#results").scroll_into_view_if_needed()
    dash.shot("files and results")

    with page.expect_download() as waiting:
        sorted_row.locator("a.download").click()
    download = waiting.value
    assert download.suggested_filename == "sorted.csv"
    saved = tmp_path / "downloaded.csv"
    download.save_as(saved)
    assert saved.read_bytes() == SORTED

"""The job page's Files and Results: each listed with its name, size, SHA-256, media type and who
stored it, and downloaded through the dashboard's session with the API's headers and scope rules."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.ledger import commands
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger
from tests.server.ui.conftest import Secured
from tests.server.ui.html import parse
from tests.support.blobs import stored
from tests.support.http import app_client, put_queue
from tests.support.ledger import fetch_one

RUN = b"echo hi > out.txt\n"
OUT = "h\u00e9llo\n".encode()


def job_with_files(ledger: Ledger, store: LocalBlobStore) -> int:
    """A job ``producer`` created with run.sh and data.csv, and ``worker``'s result ``résumé.txt``."""
    files = [stored(store, "run.sh", RUN, "text/x-sh"), stored(store, "data.csv", b"a" * 3000, "text/csv")]
    producer, worker = ledger.as_actor("producer"), ledger.as_actor("worker")
    job_id = producer.run(commands.create_job("q", JobOptions().with_files(files))).id
    fetched = fetch_one(worker)
    result = stored(store, "résumé.txt", OUT, "text/plain")
    worker.run(commands.add_result(job_id, result, attempt=fetched.attempt))
    return job_id


@pytest.fixture
def store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


@pytest.fixture
def ui(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=store) as client:
        put_queue(client, "q")
        yield client


def test_the_job_page_lists_files_and_results_with_who_stored_them(
    ui: TestClient, ledger: Ledger, store: LocalBlobStore
) -> None:
    job_id = job_with_files(ledger, store)
    doc = parse(ui.get(f"/ui/job/{job_id}").text)
    files = doc.one("table", id="files").all("tr")[1:]
    assert [r.attrs["data-name"] for r in files] == ["run.sh", "data.csv"]
    run_sha = hashlib.sha256(RUN).hexdigest()
    run = files[0]
    assert run.one("a").attrs["href"] == f"/ui/job/{job_id}/files/run.sh"
    assert run.one("td", class_="size").text() == "18 B"
    assert files[1].one("td", class_="size").text() == "2.9 KiB"
    sha = run.one("code", class_="sha256")
    assert sha.attrs["title"] == run_sha and sha.text() == run_sha[:12] + "…"
    assert run.one("td", class_="media-type").text() == "text/x-sh"
    assert run.one("td", class_="actor").text() == "producer"
    (result,) = doc.one("table", id="results").all("tr")[1:]
    assert result.one("a").attrs["href"] == f"/ui/job/{job_id}/results/r%C3%A9sum%C3%A9.txt"
    assert result.one("td", class_="actor").text() == "worker"
    assert result.one("td", class_="attempt").text() == "1"
    state = parse(ui.get(f"/ui/job/{job_id}/state").text)
    assert state.one("table", id="results").one("td", class_="actor").text() == "worker"
    assert "files" not in [d.attrs.get("data-field") for d in doc.one("dl", id="fields").all("dd")]
    added = doc.one("li", data_type="job_result_added").one("span", class_="stored")
    assert added.text().startswith("résumé.txt · 7 B · ")
    created = doc.one("li", data_type="job_created").one("span", class_="stored")
    assert created.text() == "run.sh, data.csv"


def test_a_job_without_files_says_so(ui: TestClient) -> None:
    job_id = ui.post("/queue/q/job", json={}).json()
    doc = parse(ui.get(f"/ui/job/{job_id}").text)
    assert doc.one("p", id="files").text() == "No files."
    assert doc.one("p", id="results").text() == "No results."


def test_a_download_streams_the_blob_with_the_apis_headers(
    ui: TestClient, ledger: Ledger, store: LocalBlobStore
) -> None:
    job_id = job_with_files(ledger, store)
    response = ui.get(f"/ui/job/{job_id}/results/résumé.txt")
    assert response.status_code == 200 and response.content == OUT
    sha = hashlib.sha256(OUT).hexdigest()
    assert response.headers["etag"] == f'"{sha}"'
    digest = base64.b64encode(hashlib.sha256(OUT).digest()).decode()
    assert response.headers["repr-digest"] == f"sha-256=:{digest}:"
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["content-length"] == str(len(OUT))
    assert response.headers["content-disposition"] == (
        "attachment; filename=\"r_sum_.txt\"; filename*=UTF-8''r%C3%A9sum%C3%A9.txt"
    )
    again = ui.get(f"/ui/job/{job_id}/results/résumé.txt", headers={"if-none-match": f'"{sha}"'})
    assert again.status_code == 304 and again.content == b""
    assert ui.get(f"/ui/job/{job_id}/files/run.sh").content == RUN


def test_a_name_the_job_lacks_or_a_blob_the_store_lacks_is_a_404_page(
    ui: TestClient, ledger: Ledger, store: LocalBlobStore
) -> None:
    job_id = job_with_files(ledger, store)
    response = ui.get(f"/ui/job/{job_id}/files/out.txt")
    assert response.status_code == 404 and "has no file named 'out.txt'" in unescape(response.text)
    assert ui.get(f"/ui/job/{job_id}/results/run.sh").status_code == 404, "a file is not a result"
    store.path(hashlib.sha256(RUN).hexdigest()).unlink()
    response = ui.get(f"/ui/job/{job_id}/files/run.sh")
    assert response.status_code == 404 and "is not in the store" in response.text
    assert ui.get(f"/ui/job/{job_id + 1}/files/run.sh").status_code == 404


@pytest.fixture
def secured(redis_url: str, namespace: str, ledger: Ledger, store: LocalBlobStore) -> Iterator[Secured]:
    with app_client(redis_url, namespace, blobs=store, auth=True) as client:
        yield Secured(client, ledger)


@pytest.mark.parametrize(("role", "status"), [("reader", 200), ("producer", 200), ("worker", 200),
                                              ("stranger", 403)])  # fmt: skip
def test_downloads_take_the_scopes_of_reading_the_job(
    secured: Secured, ledger: Ledger, store: LocalBlobStore, role: str, status: int
) -> None:
    job_id = job_with_files(ledger, store)
    path = f"/ui/job/{job_id}/files/run.sh"
    response = secured.client.get(path, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/ui/signin?next=")
    secured.sign_in(role)
    response = secured.client.get(path)
    assert response.status_code == status, response.text
    assert (response.content == RUN) == (status == 200)

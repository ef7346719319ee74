"""The dashboard on a sealed ledger: the ledger page shows each log's latest checkpoint and seal lag,
a job's page says whether its events are sealed and offers its receipt, and a verify run also checks
the events against the signed checkpoints."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.ledger.keys import Keys
from jobledger.ledger.seal.receipts import verify_receipt
from jobledger.server.app import create_app
from tests.server.test_ledger_proofs import Sealed, config, jobs, sealed_app
from tests.server.ui.html import Element, parse
from tests.support.http import BASE_URL
from tests.support.replay import stream_entries


@pytest.fixture
def sealed(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[Sealed]:
    with sealed_app(redis_url, namespace, tmp_path) as found:
        yield found


def test_the_ledger_page_shows_the_latest_checkpoint_and_the_seal_lag(sealed: Sealed) -> None:
    jobs(sealed.api)
    row = (
        parse(sealed.api.get("/ui/ledger").text).one("table", id="checkpoints").one("tr", data_partition="0")
    )
    assert row.attrs["data-size"] == "0" and "no checkpoint yet" in row.text()
    sealed.seal()
    checkpoint = sealed.checkpoint()
    doc = parse(sealed.api.get("/ui/ledger").text)
    assert doc.one(id="sealing").attrs["data-sealed"] == "true"
    row = doc.one("table", id="checkpoints").one("tr", data_partition="0")
    assert row.attrs["data-size"] == str(checkpoint.size) and row.attrs["data-lag"] == "0.000"
    assert " ".join(sealed.api.get("/ledger/checkpoint").text.split()) == row.one("pre").text()


def test_a_ledger_not_sealed_says_so(redis_url: str, namespace: str, tmp_path: Path) -> None:
    app = create_app(config(namespace, tmp_path, seal=False), redis_url, run_scheduler=False)
    with TestClient(app, base_url=BASE_URL) as ui:
        doc = parse(ui.get("/ui/ledger").text)
        assert doc.one(id="sealing").attrs["data-sealed"] == "false" and not doc.all(id="checkpoints")
        job = jobs(ui)[0]
        assert not parse(ui.get(f"/ui/job/{job}").text).all(id="sealed")


def test_a_jobs_page_says_whether_its_events_are_sealed_and_offers_its_receipt(sealed: Sealed) -> None:
    job = jobs(sealed.api)[0]
    shown = parse(sealed.api.get(f"/ui/job/{job}").text).one(id="sealed")
    assert (shown.attrs["data-sealed"], shown.attrs["data-count"], shown.attrs["data-events"]) == (
        "false",
        "0",
        "3",
    )
    assert not shown.all(id="receipt")
    assert sealed.api.get(f"/ui/job/{job}/receipt").status_code == 409
    sealed.seal()
    shown = parse(sealed.api.get(f"/ui/job/{job}").text).one(id="sealed")
    assert shown.attrs["data-sealed"] == "true" and shown.attrs["data-count"] == "3"
    download = sealed.api.get(shown.one("a", id="receipt").attrs["href"])
    assert download.headers["content-disposition"] == f'attachment; filename="job-{job}-receipt.json"'
    assert len(verify_receipt(download.json(), [sealed.settings.signer.verifier]).events) == 3


def verified(ui: TestClient) -> Element:
    run = parse(ui.post("/ui/ledger/verify", data={}, headers={"hx-request": "true"}).text).one(data_run=True)
    deadline = time.monotonic() + 30
    while "data-ok" not in run.attrs and time.monotonic() < deadline:
        time.sleep(0.05)
        run = parse(ui.get(f"/ui/ledger/verify/{run.attrs['data-run']}").text).one(data_run=True)
    return run


def test_verify_checks_the_events_against_the_signed_checkpoints(
    sealed: Sealed, client: redis.Redis, namespace: str
) -> None:
    jobs(sealed.api)
    sealed.seal()
    run = verified(sealed.api)
    assert run.attrs["data-ok"] == "true" and "the events are the ones sealed" in run.text()
    [line] = run.one(id="verify-sealed").all("li")
    assert line.attrs["data-ok"] == "true" and "verified" in line.text()
    stream = Keys(namespace).events
    entries = [(i, dict(fields)) for i, fields in stream_entries(client, namespace)]
    changed_id = entries[-1][0]
    client.delete(stream)  # the stream rewritten under the same ids, its last event's actor changed
    for entry_id, fields in entries:
        written = {**fields, b"actor": b"mallory"} if entry_id == changed_id else fields
        client.xadd(stream, dict(written.items()), id=entry_id)  # type: ignore[arg-type]
    run = verified(sealed.api)
    assert run.attrs["data-ok"] == "false"
    [line] = run.one(id="verify-sealed").all("li")
    assert (
        line.attrs["data-ok"] == "false" and "altered" in line.text() and changed_id.decode() in line.text()
    )

"""Names of a job's files and results: control characters and bidirectional marks refused, names
kept NFC-normalised, and two names of one job that differ only in case or normalisation refused,
each a 400 that appends nothing."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

import pytest
import redis
from starlette.testclient import TestClient

from jobledger.blobs import LocalBlobStore
from jobledger.contract.files import checked_name, duplicate_name
from tests.support.http import app_client, error_of, fetch, job_field, put_queue, unchanged

NFD = unicodedata.normalize("NFD", "café.txt")
NFC = unicodedata.normalize("NFC", "café.txt")
BAD = {
    "c1": "a\x85b",
    "csi": "a\x9bb",
    "rlo": "invoice\u202etxt.exe",
    "lri": "a\u2066b",
    "rlm": "a\u200fb",
    "alm": "a\u061cb",
    "del": "a\x7fb",
}


@pytest.fixture
def api(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[TestClient]:
    with app_client(redis_url, namespace, blobs=store) as client:
        put_queue(client, "q")
        yield client


@pytest.mark.parametrize("name", BAD.values(), ids=BAD.keys())
def test_control_and_bidi_characters_are_refused(
    api: TestClient, client: redis.Redis, namespace: str, name: str
) -> None:
    stored = api.put("/blob", content=b"x").json()
    with unchanged(client, namespace):
        assert "cannot hold" in error_of(api.post("/queue/q/job", files=[("f", (name, b"x"))]), 400)
        body = {"files": [{"name": name, "sha256": stored["sha256"]}]}
        assert "cannot hold" in error_of(api.post("/queue/q/job", json=body), 400)


@pytest.mark.parametrize(
    "names",
    [("Data.csv", "data.csv"), (NFC, NFD), ("STRASSE", "straße"), (NFD, "CAFÉ.TXT")],
    ids=["case", "normalisation", "casefold", "both"],
)
def test_names_differing_only_in_case_or_normalisation_are_refused(
    api: TestClient, client: redis.Redis, namespace: str, names: tuple[str, str]
) -> None:
    stored = api.put("/blob", content=b"x").json()
    with unchanged(client, namespace):
        parts = [("f", (names[0], b"1")), ("g", (names[1], b"2"))]
        assert "a job's file names differ" in error_of(api.post("/queue/q/job", files=parts), 400)
        body = {"files": [{"name": n, "sha256": stored["sha256"]} for n in names]}
        assert "a job's file names differ" in error_of(api.post("/queue/q/job", json=body), 400)


def test_names_are_kept_nfc(api: TestClient) -> None:
    created = api.post("/queue/q/job", files=[("f", (NFD, b"x"))])
    assert created.status_code == 201, created.text
    assert [f["name"] for f in job_field(api, created.json(), "files")] == [NFC]
    assert api.get(f"/job/{created.json()}/files/{NFD}").content == b"x"  # asked for either way
    job = fetch(api)
    put = api.put(f"/job/{job['id']}/results/{NFD}?attempt={job['attempt']}", content=b"r")
    assert put.status_code == 200, put.text
    assert [r["name"] for r in job_field(api, job["id"], "results")] == [NFC]


def test_a_result_differing_from_another_only_in_case_is_refused(
    api: TestClient, client: redis.Redis, namespace: str
) -> None:
    api.post("/queue/q/job", json={})
    job = fetch(api)
    where = f"/job/{job['id']}/results/{{}}?attempt={job['attempt']}"
    assert api.put(where.format("Out.txt"), content=b"1").status_code == 200
    with unchanged(client, namespace):
        message = error_of(api.put(where.format("out.TXT"), content=b"2"), 400)
        assert "differs from the job's result 'out.txt' only in case" in message
        assert "cannot hold" in error_of(api.put(where.format("a\u202eb"), content=b"2"), 400)
    assert api.put(where.format("Out.txt"), content=b"3").status_code == 200  # the same name replaces


def test_the_one_check() -> None:
    assert checked_name(NFD) == NFC
    assert (
        duplicate_name(["a", "b", "A"])
        == "'a' and 'A' differ only in case or normalisation: a job's file names differ more"
    )
    assert duplicate_name(["a", "b"]) is None
    with pytest.raises(ValueError, match="control"):
        checked_name("a\x9fb")

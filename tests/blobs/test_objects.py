"""The object store's own choices: its options, its copy "if absent" where a backend has one, and the
radosgw fixture's skip when Ceph is not installed."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import obstore
import pytest

from jobledger.blobs import LocalBlobStore, open_store
from jobledger.blobs.objects import ObjectBlobStore, split_options
from jobledger.runtime.config import BlobsConfig

ROOT = Path(__file__).resolve().parents[2]


def test_options_go_to_the_store_or_its_http_client() -> None:
    config, client = split_options(
        {"endpoint": "http://127.0.0.1:9000", "Allow_HTTP": "true", "timeout": "30s", "region": "x"}
    )
    assert config == {"endpoint": "http://127.0.0.1:9000", "region": "x"}
    assert client == {"allow_http": True, "timeout": "30s"}


def test_an_s3_url_opens_an_object_store_that_names_no_credential() -> None:
    options = {"endpoint": "http://127.0.0.1:1", "access_key_id": "AK", "secret_access_key": "SECRET"}
    store = open_store(
        BlobsConfig(url="s3://bucket/some/prefix", options=options), Path("/nonexistent"), "jobs"
    )
    assert isinstance(store, ObjectBlobStore)
    assert store.description == "object store at s3://bucket/some/prefix/jobs", "the namespace's own part"


def test_a_bucket_without_the_s3_extra_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "obstore", None)  # as where `jobledger[s3]` was not installed
    monkeypatch.delitem(sys.modules, "jobledger.blobs.objects")
    with pytest.raises(ValueError, match=r"pip install 'jobledger\[s3\]'"):
        open_store(BlobsConfig(url="s3://bucket/p"), Path("/nonexistent"), "ns")
    assert isinstance(open_store(BlobsConfig(), Path("/nonexistent"), "ns"), LocalBlobStore)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"endpointt": "http://127.0.0.1:1"}, "'endpointt' is not valid for store 'S3'"),
        ({"allow_http": "maybe"}, 'failed to parse "maybe" as boolean'),
        ({"default_headers": "x-a: b"}, "'default_headers' is not valid"),  # a table, not a string
    ],
)
def test_options_obstore_does_not_take_are_a_clear_error(options: dict[str, str], said: str) -> None:
    with pytest.raises(ValueError, match="object store at s3://bucket/p/ns") as refused:
        open_store(BlobsConfig(url="s3://bucket/p", options=options), Path("/nonexistent"), "ns")
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    yield data


def test_a_backend_that_copies_if_absent_keeps_the_first_copy_and_marks_the_second() -> None:
    """obstore's in-memory store copies "if absent" natively, as GCS and Azure do."""

    async def scenario() -> None:
        store = ObjectBlobStore("memory:///")
        sha = hashlib.sha256(b"abc").hexdigest()
        first = await store.put(_chunks(b"abc"))
        held = await obstore.head_async(store._store, store.key(sha))
        await asyncio.sleep(0.01)
        second = await store.put(_chunks(b"abc"))
        assert first.sha256 == second.sha256 == sha
        assert await obstore.head_async(store._store, store.key(sha)) == held  # not rewritten
        assert await obstore.head_async(store._store, f"touched/{sha}")
        stat = await store.stat(sha)
        assert stat is not None and stat.modified >= second.modified > first.modified
        assert store._copy_if_absent  # the native copy was used, not a HEAD and a copy
        assert await store.delete(sha)
        assert [m async for batch in obstore.list(store._store) for m in batch] == []

    asyncio.run(scenario())


def _contract_test_without_ceph(require: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "REQUIRE_S3"}
    env["PATH"] = str(Path(sys.executable).parent)  # python, and no Ceph
    if require:
        env["REQUIRE_S3"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/blobs/test_store_contract.py::test_a_blob_never_held_is_missing"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_without_ceph_the_s3_half_skips_saying_why_and_require_s3_fails_it() -> None:
    skipped = _contract_test_without_ceph(require=False)
    assert skipped.returncode == 0, skipped.stdout
    assert "1 passed, 1 skipped" in skipped.stdout
    assert "no S3 to test against: ceph-mon" in skipped.stdout

    required = _contract_test_without_ceph(require=True)
    assert required.returncode == 1, required.stdout
    assert "REQUIRE_S3=1 requires them" in required.stdout


@pytest.mark.parametrize(
    ("url", "namespace", "root"),
    [
        ("", "jobledger", "DATA/blobs/jobledger"),
        ("", "a/../b", "DATA/blobs/a%2F..%2Fb"),
        ("", "..", "DATA/blobs/%2E."),
        ("/srv/blobs", "prod", "/srv/blobs/prod"),
        ("file:///srv/blobs", "prod", "/srv/blobs/prod"),
    ],
)
def test_each_namespace_has_a_local_store_of_its_own(
    url: str, namespace: str, root: str, tmp_path: Path
) -> None:
    """A ledger's collector deletes what its ledger no longer names: two ledgers never share blobs."""
    store = open_store(BlobsConfig(url=url), tmp_path, namespace)
    assert isinstance(store, LocalBlobStore)
    assert store.root == Path(root.replace("DATA", str(tmp_path)))

"""``jobledger submit --file`` and ``jobledger results get``, against a live server."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jobledger.blobs import LocalBlobStore
from jobledger.cli.main import build_app
from jobledger.client import Client
from jobledger.ledger import commands
from jobledger.ledger.runner import Ledger
from tests.cli.test_cli_commands import PIPED
from tests.support.blobs import add_result
from tests.support.live_server import live_server


@pytest.fixture
def url(redis_url: str, namespace: str, store: LocalBlobStore) -> Iterator[str]:
    with live_server(redis_url, namespace, blobs=store) as base, Client(base) as client:
        client.put_queue("q")
        yield base


def run(url: str, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(build_app(), [*args, "--url", url], env=PIPED)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result.stdout if code == 0 else result.stderr


def test_submit_with_files_then_get_results(
    url: str, ledger: Ledger, store: LocalBlobStore, tmp_path: Path
) -> None:
    (tmp_path / "run.sh").write_text("echo hi > out.txt\n")
    (tmp_path / "in.txt").write_text("input")
    created = json.loads(run(url, "submit", "q", "--file", str(tmp_path / "run.sh"),
                             "--file", str(tmp_path / "in.txt"), "--json"))  # fmt: skip
    job = created["id"]
    with Client(url) as client:
        assert [f["name"] for f in client.get_fields(job, "files")["files"]] == ["run.sh", "in.txt"]
    ledger.run(commands.fetch_jobs("q", 1, None))

    for name, data in {"out.txt": b"hi\n", "log.txt": b"log"}.items():
        add_result(ledger, store, job, name, data)
    got = json.loads(run(url, "results", "get", str(job), "--dir", str(tmp_path / "results"), "--json"))
    assert sorted(Path(p).name for p in got["files"]) == ["log.txt", "out.txt"]
    assert (tmp_path / "results" / "out.txt").read_bytes() == b"hi\n"
    run(url, "results", "get", str(job), "--zip", str(tmp_path / "all.zip"))
    with zipfile.ZipFile(tmp_path / "all.zip") as archive:
        assert sorted(archive.namelist()) == ["log.txt", "out.txt"]
    assert "not both" in run(url, "results", "get", str(job), "--dir", "x", "--zip", "y", code=2)
    assert "not found" in run(url, "results", "get", "999999", "--dir", str(tmp_path), code=1).lower()


def test_submit_with_a_missing_file_is_a_usage_error(url: str, tmp_path: Path) -> None:
    message = run(url, "submit", "q", "--file", str(tmp_path / "nope"), code=2)
    assert "--file" in message and "exist" in message

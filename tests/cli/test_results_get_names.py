"""``jobledger results get --dir`` against a server of the test's own that names results which would
leave the directory: refused with a clear error, nothing written anywhere."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jobledger.cli.main import build_app

BODY = b"evil"


def crafted(name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith("/results"):
                result = {"name": name, "sha256": hashlib.sha256(BODY).hexdigest(), "size": len(BODY),
                          "media_type": "text/plain", "attempt": 1}  # fmt: skip
                body = json.dumps({"id": 1, "status": "completed", "results": [result]}).encode()
            else:
                body = BODY
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@pytest.fixture
def serving(request: pytest.FixtureRequest) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), crafted(request.param))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "serving", ["../evil.txt", "/tmp/evil.txt", "sub/../../evil.txt", ".."], indirect=True
)
def test_a_name_leaving_the_directory_is_refused(serving: str, tmp_path: Path) -> None:
    target = tmp_path / "out"
    result = CliRunner().invoke(build_app(), ["results", "get", "1", "--dir", str(target), "--url", serving])
    assert result.exit_code == 1, result.output
    assert "refusing the file name" in result.output and "nothing was written" in result.output
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"]


@pytest.mark.parametrize("serving", ["link"], indirect=True)
def test_a_name_resolving_outside_through_a_symlink_is_refused(serving: str, tmp_path: Path) -> None:
    target, outside = tmp_path / "out", tmp_path / "elsewhere"
    target.mkdir()
    (target / "link").symlink_to(outside)
    result = CliRunner().invoke(build_app(), ["results", "get", "1", "--dir", str(target), "--url", serving])
    assert result.exit_code == 1, result.output
    assert "leads out of" in result.output
    assert not outside.exists()

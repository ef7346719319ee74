"""``jobledger serve`` seals by default: on a new data directory it makes the signing key (said in its
log), and its scheduler publishes checkpoints that ``jobledger ledger verify`` checks after it stops."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx

from jobledger.ledger.seal.checkpoints import parse_body
from jobledger.runtime.embedded import free_port
from jobledger.scheduler.sealer import default_key_file
from tests.cli.process_support import clean_env, jobledger, no_server_left, serve_args, wait_for, wait_serving


def test_serve_makes_a_key_on_first_start_and_seals_what_it_appends(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", free_port()
    base = f"http://127.0.0.1:{port}"
    checkpoint = data_dir / "blobs" / "jobledger" / "ledger" / "checkpoint"
    with no_server_left(data_dir), jobledger(serve_args(data_dir, port), tmp_path / "serve.log") as serve:
        wait_serving(serve, base)
        assert default_key_file(data_dir, "jobledger").stat().st_mode & 0o777 == 0o600
        assert "made the ledger's signing key" in serve.output()
        httpx.put(f"{base}/queue/q", json={}).raise_for_status()
        for n in range(5):
            httpx.post(f"{base}/queue/q/job", json={"input": n}).raise_for_status()

        def sealed() -> bool:
            return (
                checkpoint.exists() and parse_body(checkpoint.read_text().split("\n\n")[0] + "\n").size == 6
            )

        wait_for(sealed, "a checkpoint of the 6 events")
        serve.signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0, serve.output()
        command = [
            sys.executable,
            "-m",
            "jobledger.cli.main",
            "ledger",
            "verify",
            "--data-dir",
            str(data_dir),
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, env=clean_env(), timeout=60, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "verified 6 events against checkpoint 6" in done.stdout

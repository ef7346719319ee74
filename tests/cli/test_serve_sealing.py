"""``jobledger serve`` seals by default: on a new data directory it makes the signing key (said in its
log), and its scheduler publishes checkpoints that ``jobledger ledger verify`` checks after it stops;
a job's receipt fetched from it is checked by another process with only the verifier key."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx2

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
        # the key is made as the scheduler starts, in the warm-up once the server is ready
        wait_for(lambda: "made the ledger's signing key" in serve.output(), "the signing key made")
        assert default_key_file(data_dir, "jobledger").stat().st_mode & 0o777 == 0o600
        httpx2.put(f"{base}/queue/q", json={}).raise_for_status()
        for n in range(5):
            httpx2.post(f"{base}/queue/q/job", json={"input": n}).raise_for_status()

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


def ledger_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "jobledger.cli.main", "ledger", *args]
    return subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=60, check=False)


def test_a_receipt_fetched_from_serve_is_verified_offline_after_it_stopped(tmp_path: Path) -> None:
    """``jobledger ledger receipt`` asks a running ``serve`` (it waits until the job is sealed: exit 1
    with "not sealed yet" before); the server stops; ``verify-receipt`` checks the file with the
    verifier key alone, and a copy with one proof hash changed fails."""
    data_dir, port = tmp_path / "data", free_port()
    base = f"http://127.0.0.1:{port}"
    with no_server_left(data_dir), jobledger(serve_args(data_dir, port), tmp_path / "serve.log") as serve:
        wait_serving(serve, base)
        httpx2.put(f"{base}/queue/q", json={}).raise_for_status()
        job_id = httpx2.post(f"{base}/queue/q/job", json={"input": "ünïcode"}).json()
        httpx2.get(f"{base}/queue/q/job").raise_for_status()
        httpx2.patch(f"{base}/job/{job_id}", json={"status": "completed", "attempt": 1}).raise_for_status()
        key = httpx2.get(f"{base}/ledger/key").text.strip()
        fetched: list[subprocess.CompletedProcess[str]] = []

        def receipt() -> bool:
            fetched.append(ledger_cli("receipt", str(job_id), "--url", base))
            assert fetched[-1].returncode == 0 or "not sealed yet" in fetched[-1].stderr, fetched[-1].stderr
            return fetched[-1].returncode == 0

        wait_for(receipt, "the job's receipt")
        serve.signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0, serve.output()
    receipt_file = tmp_path / "receipt.json"
    receipt_file.write_text(fetched[-1].stdout)
    done = ledger_cli("verify-receipt", str(receipt_file), "--key", key)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"receipt holds: 3 events of job {job_id} in jobledger/jobledger" in done.stdout
    bundle = json.loads(fetched[-1].stdout)
    first = bundle["events"][1]["hashes"][0]
    bundle["events"][1]["hashes"][0] = ("0" if first[0] != "0" else "1") + first[1:]
    receipt_file.write_text(json.dumps(bundle))
    done = ledger_cli("verify-receipt", str(receipt_file), "--key", key)
    assert done.returncode == 1 and "receipt does not hold: proof" in done.stdout, done.stdout + done.stderr

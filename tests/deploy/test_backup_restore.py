"""Backup and restore as docs/operations.md says, on real ``jobledger serve`` processes: the append-only
files of a running server, copied while jobs are still being created (rewrites paused, as the docs
say, through the wheel's valkey-cli), restored into a new data directory and served; and ``events
export`` of a running server imported into a fresh data directory.  Each restored ledger passes
``replay verify`` and serves the jobs it had, each job exactly as it was."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from jobledger import Client
from jobledger.runtime.embedded import AOF_DIR, ServerRecord, free_port, valkey_executable
from tests.cli.process_support import (
    REPO,
    Command,
    clean_env,
    jobledger,
    no_server_left,
    serve_args,
    wait_for,
)

QUEUE = "mail"
#: The longest a command of these tests may take, a start included (the machine is shared and loaded).
TIMEOUT = 90.0


@dataclass
class Served:
    """A ``jobledger serve`` of a test: its base URL and a client of it."""

    url: str
    client: Client


@contextmanager
def serving(data_dir: Path, log: Path) -> Iterator[Served]:
    """``jobledger serve`` on ``data_dir`` (its embedded Valkey) until the block ends, then stopped by
    SIGTERM, which it must obey; yielded once ``/ready`` answers 200."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with no_server_left(data_dir), jobledger(serve_args(data_dir, port), log) as server:
        with Client(url) as client:
            wait_for(lambda: ready(url, server), f"serve on {data_dir} to be ready", TIMEOUT)
            yield Served(url, client)
        server.signal(signal.SIGTERM)
        assert server.wait(TIMEOUT) == 0, server.output()


def ready(url: str, server: Command) -> bool:
    assert server.process.poll() is None, server.output()
    try:
        return httpx2.get(f"{url}/ready", timeout=2.0).status_code == 200
    except httpx2.HTTPError:
        return False


def populate(client: Client) -> list[int]:
    """A queue and jobs in each state a backup must keep: completed, failed, running, queued, cancelled."""
    client.put_queue(QUEUE, retries=0)
    ids = [client.submit(QUEUE, {"n": n}, tags=["backup"]) for n in range(6)]
    done, failed, _running = client.fetch(QUEUE, count=3)
    client.complete(done.id, {"sent": True}, attempt=done.attempt)
    client.fail(failed.id, {"sent": False}, attempt=failed.attempt)
    client.cancel(ids[5])
    return ids


def records(client: Client, ids: list[int]) -> dict[int, dict[str, Any]]:
    return {job_id: client.get(job_id).model_dump(mode="json") for job_id in ids}


def on_queue(client: Client) -> set[int]:
    """The ids of every job of the queue, whatever its status."""
    return {job_id for ids in client.queue_job_ids(QUEUE).values() for job_id in ids}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """A ``jobledger`` command run to its end (exit code not checked)."""
    return subprocess.run(
        [sys.executable, "-m", "jobledger.cli.main", *args],
        cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip


def assert_verifies(data_dir: Path) -> None:
    verify = cli("replay", "verify", "--data-dir", str(data_dir))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def valkey_cli(data_dir: Path, *command: str) -> str:
    """``valkey-cli`` (the wheel's, beside its server) on the embedded server running on ``data_dir``,
    found through the address it records there; what it printed (an error reply fails)."""
    record = ServerRecord.read(data_dir)
    assert record is not None, f"no server record in {data_dir}"
    unix = record.url.startswith("unix://")
    where = ["-s", record.url.removeprefix("unix://")] if unix else ["-u", record.url]
    binary = Path(valkey_executable()).with_name("valkey-cli")
    out = subprocess.run([str(binary), *where, *command], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0 and not out.stdout.startswith("ERR"), out.stdout + out.stderr
    return out.stdout


def persistence(data_dir: Path) -> dict[str, str]:
    """``INFO persistence`` as a mapping."""
    lines = valkey_cli(data_dir, "INFO", "persistence").splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line)


def no_rewrite(data_dir: Path) -> bool:
    info = persistence(data_dir)
    return info["aof_rewrite_in_progress"] == "0" and info["aof_rewrite_scheduled"] == "0"


def back_up_append_only_files(data_dir: Path, backup: Path) -> None:
    """The backup of docs/operations.md: automatic rewrites paused, none running, the append-only
    directory copied whole (manifest, base, increments), the setting put back."""
    previous = valkey_cli(data_dir, "CONFIG", "GET", "auto-aof-rewrite-percentage").split()[1]
    valkey_cli(data_dir, "CONFIG", "SET", "auto-aof-rewrite-percentage", "0")
    try:
        wait_for(lambda: no_rewrite(data_dir), "no append-only rewrite in progress", TIMEOUT)
        shutil.copytree(data_dir / AOF_DIR, backup / AOF_DIR)
    finally:
        valkey_cli(data_dir, "CONFIG", "SET", "auto-aof-rewrite-percentage", previous)


class Producer:
    """Creates jobs on the queue, one after another, from a thread, until stopped."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.ids: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.ids) < 2000:
            self.ids.append(self.client.submit(QUEUE, {"during": len(self.ids)}))

    def __enter__(self) -> Producer:
        self._thread.start()
        wait_for(lambda: len(self.ids) >= 20, "jobs created while the server runs")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)


def test_append_only_files_copied_from_a_running_server_restore_into_a_new_data_directory(
    tmp_path: Path,
) -> None:
    live, backup, restored = tmp_path / "live", tmp_path / "backup", tmp_path / "restored"
    with serving(live, tmp_path / "live.log") as server:
        client = server.client
        ids = populate(client)
        valkey_cli(live, "BGREWRITEAOF")  # the jobs so far go into a base, what follows into increments
        wait_for(lambda: persistence(live)["aof_rewrites"] == "1" and no_rewrite(live), "the rewrite")
        ids += [client.submit(QUEUE, {"after": n}) for n in range(3)]
        wait_for(lambda: persistence(live)["aof_buffer_length"] == "0", "the append-only file written")
        before = records(client, ids)
        with Client(server.url) as other, Producer(other) as producer:
            back_up_append_only_files(live, backup)
        created_meanwhile = producer.ids
        manifest = (backup / AOF_DIR / "appendonly.aof.manifest").read_text()
        assert " type b" in manifest and " type i" in manifest, manifest

    restored.mkdir(mode=0o700)
    shutil.copytree(backup / AOF_DIR, restored / AOF_DIR)
    with serving(restored, tmp_path / "restored.log") as copy:
        assert records(copy.client, ids) == before
        there = on_queue(copy.client)
        kept = [job_id for job_id in created_meanwhile if job_id in there]
        assert kept == created_meanwhile[: len(kept)], "a copy holds a prefix of the ledger, no gaps"
        assert_verifies(restored)


def test_events_exported_from_a_running_server_import_into_a_fresh_data_directory(tmp_path: Path) -> None:
    live, fresh, exported = tmp_path / "live", tmp_path / "fresh", tmp_path / "ledger.jsonl"
    with serving(live, tmp_path / "live.log") as server:
        ids = populate(server.client)
        before = records(server.client, ids)
        export = cli("events", "export", "--data-dir", str(live), "--to", str(exported))
        assert export.returncode == 0, export.stdout + export.stderr

    imported = cli("events", "import", str(exported), "--data-dir", str(fresh))
    assert imported.returncode == 0, imported.stdout + imported.stderr
    with serving(fresh, tmp_path / "fresh.log") as copy:
        assert records(copy.client, ids) == before
        assert copy.client.queue(QUEUE).retries == 0
        assert_verifies(fresh)

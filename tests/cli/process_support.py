"""Real ``jobledger`` processes for the start-and-stop tests: started with ``python -m jobledger.cli.main``,
stopped by PID, and the valkey-server processes working in a data directory found through /proc
(so a test sees a server left behind even when no record of it was written)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

from jobledger.runtime.embedded import RECORD_NAME, ServerRecord, pid_alive

REPO = Path(__file__).resolve().parents[2]
#: The longest any process of these tests may run.
DEADLINE = 30.0


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without JOBLEDGER_* settings, the repository importable from anywhere."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBLEDGER_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return {**env, **extra}


def valkeys_in(data_dir: Path) -> list[int]:
    """PIDs of the valkey-server processes working in ``data_dir`` (Linux /proc)."""
    found = []
    target = os.path.realpath(data_dir)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if "valkey-server" in os.path.basename(exe) and os.path.realpath(cwd) == target:
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    stop = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > stop:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


class Command:
    """A ``jobledger`` process with its output in a file; stopped by PID when the test ends."""

    def __init__(self, args: list[str], log: Path, cwd: Path = REPO, **env: str) -> None:
        self.log = log
        self._out = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jobledger.cli.main", *args],
            cwd=cwd,
            env=clean_env(**env),
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        os.kill(self.process.pid, sig)

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if still running after ``timeout`` seconds."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._out.close()


@contextmanager
def jobledger(args: list[str], log: Path, cwd: Path = REPO, **env: str) -> Iterator[Command]:
    command = Command(args, log, cwd, **env)
    try:
        yield command
    finally:
        command.close()


@contextmanager
def no_server_left(data_dir: Path) -> Iterator[None]:
    """After the block, no valkey-server works in ``data_dir`` (any found is killed, and fails)."""
    try:
        yield
    finally:
        left = valkeys_in(data_dir) if data_dir.exists() else []
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"valkey-server left running in {data_dir}: {left}"


def serve_args(data_dir: Path, port: int, *more: str) -> list[str]:
    return ["serve", "--data-dir", str(data_dir), "--host", "127.0.0.1", "--port", str(port), *more]


def answering(base: str) -> bool:
    try:
        return httpx2.get(f"{base}/health", timeout=1.0).status_code == 200
    except httpx2.HTTPError:
        return False


def wait_serving(command: Command, base: str) -> None:
    def up() -> bool:
        assert command.process.poll() is None, command.output()
        return answering(base)

    wait_for(up, f"jobledger serve to answer at {base}")


def record_pid(data_dir: Path) -> int:
    record = ServerRecord.read(data_dir)
    assert record is not None, f"no {RECORD_NAME} in {data_dir}"
    assert pid_alive(record.pid)
    return record.pid

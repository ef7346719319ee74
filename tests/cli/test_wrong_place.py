"""Pointed at the wrong place: in a data directory that holds no ledger (no server has ever run
there), every command but ``serve`` and ``events import`` refuses with exit 2, naming the directory
and the options that point elsewhere, and creates nothing: no directory, no server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jobledger.runtime.embedded import AOF_DIR, EmbeddedServer
from tests.cli.process_support import DEADLINE, clean_env, no_server_left, valkeys_in

HANDLER = "tests.support.worker_handlers:wait_for_release"
#: One command of each kind that finds Redis through the data directory.
COMMANDS: dict[str, list[str]] = {
    "replay verify": ["replay", "verify"],
    "replay rebuild": ["replay", "rebuild"],
    "replay rebuild --swap": ["replay", "rebuild", "--swap"],
    "events export": ["events", "export", "--to", "out.jsonl"],
    "scheduler": ["scheduler"],
    "worker --transport redis": ["worker", HANDLER, "--queue", "q", "--transport", "redis"],
}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jobledger.cli.main", *args], cwd=cwd, env=clean_env(),
                          capture_output=True, text=True, timeout=DEADLINE)  # fmt: skip


def assert_refused(result: subprocess.CompletedProcess[str], data_dir: Path) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    message = result.stderr
    assert f"no ledger in {data_dir.absolute()}" in message, message
    for option in ("--data-dir", "--redis-url", "--config", "JOBLEDGER_DATA_DIR", "JOBLEDGER_REDIS_URL"):
        assert option in message, (option, message)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_in_a_directory_without_a_ledger_refuses_and_creates_nothing(
    tmp_path: Path, command: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with no_server_left(elsewhere / "jobledger-data"):  # the default: ./jobledger-data
        assert_refused(run(COMMANDS[command], elsewhere), elsewhere / "jobledger-data")
    assert sorted(p.name for p in elsewhere.iterdir()) == []


@pytest.mark.parametrize("command", ["replay verify", "scheduler"])
def test_an_empty_data_directory_named_on_the_command_line_is_refused(tmp_path: Path, command: str) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with no_server_left(empty):
        assert_refused(run([*COMMANDS[command], "--data-dir", str(empty)], tmp_path), empty)
    assert list(empty.iterdir()) == []


def test_events_import_creates_a_ledger_and_then_other_commands_find_it(tmp_path: Path) -> None:
    data_dir, export = tmp_path / "new", tmp_path / "empty.jsonl"
    export.write_text("")
    with no_server_left(data_dir):
        imported = run(["events", "import", str(export), "--data-dir", str(data_dir)], tmp_path)
        assert imported.returncode == 0, imported.stderr
        assert (data_dir / AOF_DIR).is_dir()
        verified = run(["replay", "verify", "--data-dir", str(data_dir)], tmp_path)
        assert verified.returncode == 0, verified.stderr
        assert "no difference" in verified.stdout


def test_a_directory_where_a_server_ran_holds_a_ledger(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedServer(data_dir):
        pass
    with no_server_left(data_dir):
        verified = run(["replay", "verify", "--data-dir", str(data_dir)], tmp_path)
    assert verified.returncode == 0, verified.stderr
    assert not valkeys_in(data_dir)

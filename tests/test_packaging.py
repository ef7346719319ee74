"""What ``pip install .`` puts in site-packages, and what a user's project sees of it.

The wheel holds one import name, ``jobledger`` (the repository's folders mapped under it), with its Lua
scripts, the dashboard's templates and assets, and ``py.typed``, and no benchmark (it runs from a
checkout: ``tests/benchmarks``); nothing named ``api``, ``ledger``, ``replay`` or ``projections`` lands
at the top of site-packages, where it would clash with a user's own packages. The second test runs the
installed jobledger (whatever this environment installed: editable in a checkout, a plain install in
CI) from a project that has packages of exactly those names.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobledger.client import Client
from tests.support.live_server import eventually, live_server

REPO = Path(__file__).resolve().parent.parent
#: Where each folder of the repository is installed, inside the wheel.
INSTALLED_AS = {"api": "jobledger", "ledger": "jobledger/ledger", "projections": "jobledger/projections",
                "replay": "jobledger/replay"}  # fmt: skip


#: The dashboard's templates and static assets (htmx and its licence among them): package data.
DASHBOARD = REPO / "api" / "server" / "ui"


def _dashboard_asset(path: Path) -> bool:
    return path.is_file() and path.parent in (DASHBOARD / "templates", DASHBOARD / "static")


def _source_files() -> Iterator[str]:
    """Every module, Lua script and py.typed of the repository's folders, as the wheel names it."""
    for folder, target in INSTALLED_AS.items():
        for path in (REPO / folder).rglob("*"):
            wanted = path.suffix in (".py", ".lua") or path.name == "py.typed" or _dashboard_asset(path)
            if wanted and "__pycache__" not in path.parts:
                yield f"{target}/{path.relative_to(REPO / folder).as_posix()}"


def test_the_wheel_holds_jobledger_only(tmp_path: Path) -> None:
    """Built from a copy of the sources (a build in place leaves build/ and *.egg-info behind)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in (*INSTALLED_AS, "pyproject.toml", "README.md", "LICENSE"):
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        copy(REPO / name, source / name)
    dist = tmp_path / "dist"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(source)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    (wheel,) = dist.glob("jobledger-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())

    outside = sorted(n for n in names if n.split("/")[0] != "jobledger" and not (
        n.split("/")[0].startswith("jobledger-") and n.split("/")[0].endswith(".dist-info")))  # fmt: skip
    assert outside == []
    benchmark = sorted(n for n in names if "bench" in n.split("/")[1].lower())
    assert benchmark == [], "the benchmark runs from a checkout (tests/benchmarks), never from the wheel"
    missing = sorted(set(_source_files()) - names)
    assert missing == [], "not in the wheel (a package missing from pyproject's list, or its package-data)"
    assert "jobledger/py.typed" in names
    (metadata,) = (n for n in names if n.endswith(".dist-info/METADATA"))
    assert "License-Expression: Apache-2.0" in zipfile.ZipFile(wheel).read(metadata).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for asset in ("static/htmx.min.js", "static/htmx-ext-sse.min.js", "static/LICENSE-htmx.txt",
                  "static/ui.css", "templates/base.html"):  # fmt: skip
        assert f"jobledger/server/ui/{asset}" in names, asset
    for layer in ("ledger", "projections", "replay"):
        assert any(n.startswith(f"jobledger/{layer}/lua/") and n.endswith(".lua") for n in names), layer


#: A user's project: packages named like the repository's folders, each saying whose it is.
USER_PROJECT = {
    "api/__init__.py": "OWNER = 'user'\n",
    "api/client.py": "OWNER = 'user'\n",
    "ledger/__init__.py": "OWNER = 'user'\n",
    "replay/__init__.py": "OWNER = 'user'\n",
    "projections/__init__.py": "OWNER = 'user'\n",
    "tasks.py": (
        "import api.client, ledger, projections, replay\n\n\n"
        "def handle(job):\n"
        "    mods = (api.client, ledger, projections, replay)\n"
        "    return {'owners': sorted({m.OWNER for m in mods}), 'input': job.input}\n"
    ),
}

#: Imports every part of jobledger, then checks that none of them loaded a top-level package of
#: the user's names (jobledger's own modules import only ``jobledger.*``).
IMPORT_ALL = """
import sys
from jobledger import AsyncClient, Client, Worker
import jobledger.cli.main, jobledger.replay.rebuild, jobledger.scheduler.loop
import jobledger.server.app
taken = sorted(n for n in ("api", "ledger", "projections", "replay") if n in sys.modules)
assert taken == [], taken
import api.client, ledger, projections, replay
assert {m.OWNER for m in (api.client, ledger, projections, replay)} == {"user"}
print(Client.__module__, AsyncClient.__module__, Worker.__module__)
"""


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    for name, text in USER_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


def _env() -> dict[str, str]:
    """This environment without PYTHONPATH or JOBLEDGER_* settings: the installed jobledger only."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("JOBLEDGER_")}


def _jobledger_script() -> str:
    """The ``jobledger`` console script installed beside this Python (else the one on PATH)."""
    script = Path(sys.executable).with_name("jobledger")
    found = str(script) if script.exists() else shutil.which("jobledger")
    assert found, "no jobledger console script: is jobledger installed in this environment?"
    return found


def test_a_project_with_packages_named_like_ours_imports_jobledger(user_project: Path) -> None:
    out = subprocess.run([sys.executable, "-c", IMPORT_ALL], cwd=user_project, env=_env(),
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.split() == ["jobledger.client.sync", "jobledger.client.aio", "jobledger.worker.worker"]


def test_the_installed_worker_runs_a_handler_of_that_project(
    user_project: Path, redis_url: str, namespace: str
) -> None:
    with live_server(redis_url, namespace) as server, Client(server) as api:
        api.put_queue("q")
        job_id = api.submit("q", {"n": 1})
        worker = subprocess.Popen(
            [_jobledger_script(), "worker", "tasks:handle", "--queue", "q", "--url", server],
            cwd=user_project, env=_env(), stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            eventually(lambda: api.get(job_id).status == "completed", timeout=15)
            worker.send_signal(signal.SIGTERM)
            _, log = worker.communicate(timeout=15)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        assert worker.returncode == 0, log
        assert "stopped:" in log
        assert api.output(job_id) == {"owners": ["user"], "input": {"n": 1}}

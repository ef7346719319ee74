"""The deployment files agree with each other and with systemd: the units pass ``systemd-analyze
verify`` and stay hardened (``systemd-analyze security --offline``, exposure at most 2.0), the sample
configuration puts the data directory in the unit's state directory, and the compose set's
configuration defines the queue its worker works on.  (.ci/container runs the units under systemd and
the compose set under podman; this is the quick check any run of the suite makes.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from jobledger.runtime.config import load_config

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNITS = ("jobledger.service", "jobledger-worker@.service")
#: Where the units expect jobledger (a venv in /opt/jobledger).
INSTALLED = "/opt/jobledger/bin/jobledger"
#: The most exposure ``systemd-analyze security`` may find, on its scale of 0-100 (2.0 as printed).
MOST_EXPOSURE = 20

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="no systemd-analyze here (apt-get install systemd)"
)


def setting(unit: str, name: str) -> str:
    """The value of ``name=`` in a unit file of deploy/ (its last assignment)."""
    values = re.findall(rf"^{name}=(.*)$", (DEPLOY / unit).read_text(), re.M)
    assert values, f"{unit} sets no {name}="
    return values[-1]


def installable(tmp_path: Path, unit: str) -> Path:
    """The unit as ``systemd-analyze`` can check it on this machine: jobledger where this test runs it
    from, and a template given an instance."""
    here = Path(sys.executable).with_name("jobledger")
    assert here.exists(), f"no jobledger beside {sys.executable}"
    text = (DEPLOY / unit).read_text()
    assert INSTALLED in text
    path = tmp_path / unit.replace("@.", "@demo.")
    path.write_text(text.replace(INSTALLED, str(here)))
    return path


@needs_systemd_analyze
@pytest.mark.parametrize("unit", UNITS)
def test_units_pass_systemd_analyze_verify(tmp_path: Path, unit: str) -> None:
    unit_file = installable(tmp_path, unit)
    checked = subprocess.run(
        ["systemd-analyze", "verify", str(unit_file)], capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr


@needs_systemd_analyze
@pytest.mark.parametrize("unit", UNITS)
def test_units_are_hardened(tmp_path: Path, unit: str) -> None:
    analysed = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", f"--threshold={MOST_EXPOSURE}",
         str(installable(tmp_path, unit))],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert analysed.returncode == 0, analysed.stdout[-2000:] + analysed.stderr


def test_the_sample_configuration_keeps_the_ledger_in_the_units_state_directory() -> None:
    config = load_config(DEPLOY / "jobledger.toml", environ={})
    serve = [INSTALLED, "serve", "--config", "/etc/jobledger/jobledger.toml"]
    assert setting("jobledger.service", "ExecStart").split() == serve
    assert config.embedded.data_dir == Path("/var/lib") / setting("jobledger.service", "StateDirectory")
    assert setting("jobledger.service", "WorkingDirectory") == str(config.embedded.data_dir)
    assert config.redis.url is None and config.server.host == "127.0.0.1" and not config.server.auth


def test_the_compose_sets_worker_works_on_a_queue_its_server_creates() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    worker = services["worker"]["command"]
    queue = worker[worker.index("--queue") + 1]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in services["server"]["volumes"]}
    config_path = services["server"]["environment"]["JOBLEDGER_CONFIG"]
    config = load_config(DEPLOY / mounted[config_path].removeprefix("./"), environ={})
    assert queue in config.queue
    assert services["server"]["depends_on"]["valkey"]["condition"] == "service_healthy"
    assert services["worker"]["depends_on"]["worker-token"]["condition"] == "service_completed_successfully"

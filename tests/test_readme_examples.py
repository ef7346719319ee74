"""The README's producer and worker examples, run exactly as written against a real server, so they
cannot rot: the worker as a script in a subprocess, the producer as another, ``$JOBLEDGER_URL``
pointing both at the test server."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = re.compile(r"<!-- example: (\w+) -->\s*```python\n(.*?)```", re.DOTALL)


def examples() -> dict[str, str]:
    """The code blocks marked ``<!-- example: NAME -->`` in README.md, by name."""
    return dict(EXAMPLE.findall((REPO / "README.md").read_text()))


def test_the_readme_has_both_examples() -> None:
    found = examples()
    assert set(found) == {"producer", "worker"}
    assert "Client()" in found["producer"] and "Worker(" in found["worker"]


def test_the_producer_and_worker_examples_run_as_written(server: str, tmp_path: Path) -> None:
    code = examples()
    for name, text in code.items():
        (tmp_path / f"{name}.py").write_text(text)
    env = {**os.environ, "JOBLEDGER_URL": server, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, tmp_path / "worker.py"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as worker:
        try:
            producer = subprocess.run(
                [sys.executable, tmp_path / "producer.py"],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert producer.returncode == 0, producer.stderr
            assert producer.stdout == "completed {'sent': True}\n"
            worker.send_signal(signal.SIGTERM)
            out, err = worker.communicate(timeout=30)
        finally:
            worker.kill()
    assert worker.returncode == 0, err
    assert out == "sending to ada@example.com\n"

"""What the trace tests' subprocesses add to their environment: a directory on ``PYTHONPATH`` that
registers :class:`tests.traces.span_file.SpanFile` as the exporter ``span_file`` (a distribution's
entry point, as an installed exporter registers itself) and, with ``JOBLEDGER_TEST_NO_OTEL=1``, makes
OpenTelemetry impossible to import (a ``sitecustomize`` putting a finder first that refuses it), as on
a machine without the extra."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.cli.process_support import REPO

BLOCKER = '''
import os, sys

class _NoOpenTelemetry:
    """Refuses to import OpenTelemetry, as if it were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

if os.environ.get("JOBLEDGER_TEST_NO_OTEL") == "1":
    sys.meta_path.insert(0, _NoOpenTelemetry())
'''


def site(folder: Path) -> Path:
    """Write the directory (see the module's docstring) into ``folder``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(BLOCKER)
    dist = folder / "jobledger_test_spans-0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: jobledger-test-spans\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        "[opentelemetry_traces_exporter]\nspan_file = tests.traces.span_file:SpanFile\n"
    )
    return folder


def traced_env(folder: Path, spans: Path, **more: str) -> dict[str, str]:
    """The variables of a subprocess that exports its spans to ``spans`` (JSON lines), quickly."""
    path = os.pathsep.join([str(site(folder)), str(REPO)])
    return {"PYTHONPATH": path, "OTEL_TRACES_EXPORTER": "span_file", "OTEL_BSP_SCHEDULE_DELAY": "50",
            "JOBLEDGER_TEST_SPANS": str(spans), **more}  # fmt: skip


def spans_in(path: Path) -> list[dict[str, Any]]:
    """The spans exported to ``path`` so far."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

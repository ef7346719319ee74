"""A smoke run of the benchmark harness (``python -m tests.benchmarks --quick --only ours``).

Not a timed test: it checks that every figure of ours is measured and printed as a number, in
JSON and in the table.  The harness starts its own bundled servers, whatever server the suite uses.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.ours import figures as F
from tests.benchmarks.ours import ours_start, report
from tests.benchmarks.ours.figures import Figure

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def quick_run() -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "JOBLEDGER_TEST_REDIS_URL"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks", "--quick", "--only", "ours", "--jobs", "150", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    run: dict[str, Any] = json.loads(out.stdout)
    return run


def test_every_row_of_ours_has_a_number(quick_run: dict[str, Any]) -> None:
    ours = quick_run["systems"]["ours"]
    for key, label, _ in report.ROWS:
        assert key in ours, f"row missing: {label}"
        value = ours[key]["value"]
        assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, (label, value)
    assert quick_run["errors"] == {}


def test_the_table_prints_every_row(quick_run: dict[str, Any]) -> None:
    systems = {
        name: {k: Figure(**f) for k, f in figures.items()} for name, figures in quick_run["systems"].items()
    }
    text = report.render({**quick_run, "systems": systems})
    for _, label, _ in report.ROWS:
        line = next(line for line in text.splitlines() if line.startswith(f"| {label}"))
        assert any(ch.isdigit() for ch in line.split("|")[2]), line
    assert "jobledger's bars:" in text


def test_only_names_the_peers_it_was_given() -> None:
    from tests.benchmarks.ours.figures import OURS_PARTS
    from tests.benchmarks.ours.run import parts

    assert parts("ours") == set(OURS_PARTS)
    assert parts("ours,saq", ["saq", "bullmq"]) == {*OURS_PARTS, "saq"}
    assert parts("peers", ["saq", "bullmq"]) == {"saq", "bullmq"}
    with pytest.raises(ValueError, match="unknown part 'saq'"):
        parts("saq")
    with pytest.raises(ValueError, match="unknown part 'peers'"):
        parts("peers")


def test_the_start_part_times_serve_beside_a_bare_app() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JOBLEDGER_TEST_REDIS_URL"}
    out = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks", "--quick", "--only", "start", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    ours = json.loads(out.stdout)["systems"]["ours"]
    starts = [F.START_OURS, F.START_EMBEDDED, F.START_BARE, F.START_CREATE]
    assert (F.START_OTEL in ours) == ours_start.otel_installed()
    for key in starts + ([F.START_OTEL] if ours_start.otel_installed() else []):
        assert ours[key]["unit"] == "ms" and len(ours[key]["detail"]["runs_ms"]) == 3, ours[key]
        assert 0 < ours[key]["value"] < 60_000
        assert 0 < ours[key]["detail"]["cpu_ms_median"] < 60_000
    for key, start in ((F.START_RATIO, F.START_OURS), (F.START_EMBEDDED_RATIO, F.START_EMBEDDED)):
        assert ours[key]["value"] == pytest.approx(ours[start]["value"] / ours[F.START_BARE]["value"])


def test_the_starts_with_a_bar_run_as_the_default_install_without_opentelemetry(tmp_path: Path) -> None:
    """Recent redis-py imports OpenTelemetry's SDK with ``import redis`` wherever it is installed;
    the default install has none, and the start part's processes find none either: ``import redis``
    loads no ``opentelemetry`` module there and ``import opentelemetry`` fails, where beside it, in
    this environment, it succeeds exactly when the SDK is installed (the oldest redis-py we support
    does not import it at all, so what ``import redis`` loads unhidden depends on the version)."""
    probe = (
        "import sys, redis\n"
        "loaded = any(m.startswith('opentelemetry') for m in sys.modules)\n"
        "try:\n    import opentelemetry\nexcept ImportError:\n    print(loaded, False)\n"
        "else:\n    print(loaded, True)\n"
    )
    hidden = ours_start._env(ours_start._without_otel(tmp_path))
    seen = [
        subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for env in (hidden, ours_start._env())
    ]
    assert seen[0] == ["False", "False"]
    assert seen[1][1] == str(ours_start.otel_installed())

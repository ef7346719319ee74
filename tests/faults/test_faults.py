"""The fault suite's short run: each fault kind done for a few seconds to real processes, then the
ledger checked (docs/faults.md; the long run is ``python -m tests.faults --fault all --seconds 120``).

Asserted: no acknowledged create lost, every history on the transition table, the projections well
placed, ``jobledger replay verify`` clean, no attempt completed twice, every job run again explained
by a recorded fault (tests/faults/test_explain.py tries the explanation), no keyed create applied
twice, no step back in ``at`` along the stream, and no completion resent by its own attempt refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.checks import Figures, table
from tests.faults.harness import FAULTS, Harness, Settings

#: Seconds each fault kind is done for in the short run.
SECONDS = 4.0


@pytest.mark.timeout(150)
@pytest.mark.parametrize("fault", FAULTS)
def test_fault(fault: str, tmp_path: Path) -> None:
    harness = Harness(Settings(fault, SECONDS, seed=7, longest_pause=4.0, settle=20.0), tmp_path / fault)
    got = harness.run()
    features = harness.features
    print(f"{fault}: {got.features}\n{table([got])}")
    detail = f"\n{table([got])}\n" + "\n".join(got.problems[:20]) + f"\n(logs in {harness.workdir})"

    assert got.acknowledged > 0, detail
    assert got.lost == 0, detail
    assert got.invalid_histories == 0, detail
    assert got.misplaced == 0, detail
    assert got.verify == 0, detail
    assert got.completed_twice == 0, detail

    assert features.idempotency and features.monotonic_at and features.resent_completion_ok, got.features
    assert got.unexplained == 0, f"jobs run again with no recorded fault to explain it{detail}"
    assert got.duplicated_creates == 0, f"duplicated creates{detail}"
    assert got.steps_back == 0, f"steps back in at{detail}"
    assert got.resent_refused == 0, f"completions resent and refused{detail}"


def test_table_lines_up() -> None:
    lines = table([Figures("kill-worker", 1, 2, ""), Figures("drop-replies", 1, 0, "")]).splitlines()
    assert len({len(line) for line in lines}) == 1
    assert len(lines) == 2 + len(Figures.ROWS)

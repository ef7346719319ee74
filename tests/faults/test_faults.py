"""The fault suite's short run: each fault kind done for a few seconds to real processes, then the
ledger checked (docs/faults.md; the long run is ``python -m tests.faults --fault all --seconds 120``).

Asserted always: no acknowledged create lost, every history on the transition table, the
projections well placed, ``jobledger replay verify`` clean, no attempt completed twice, and a job run
twice only where a worker holding it was killed (for the kinds where a worker's outcome cannot be
lost on the way: with a Valkey or a server killed under it, only once a completion is resent until
the attempt's deadline).  The checks of what a feature brings are asserted once the feature is found
by trying it; until then the test ends skipped, saying which checks were left and what they measured.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.checks import Figures, table
from tests.faults.harness import FAULTS, Harness, Settings

#: Seconds each fault kind is done for in the short run.
SECONDS = 4.0
#: Kinds where a worker may lose an outcome it reports (its Valkey or its server killed under it).
OUTCOME_AT_RISK = {"kill-valkey", "kill-server"}


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

    left: list[str] = []

    def check(supported: bool, what: str, value: int, feature: str) -> None:
        if supported:
            assert value == 0, f"{what}: {value}{detail}"
        else:
            left.append(f"{what}={value} ({feature} not supported)")

    unexplained = got.run_twice - got.run_twice_after_kill
    if fault in OUTCOME_AT_RISK:
        check(features.resent_completion_ok, "jobs run twice with no worker killed", unexplained, "resend")
    else:
        assert unexplained == 0, detail
    check(features.idempotency, "duplicated creates", got.duplicated_creates, "Idempotency-Key")
    check(features.monotonic_at, "steps back in at", got.steps_back, "monotonic at")
    check(features.resent_completion_ok, "completions resent and refused", got.resent_refused, "resend")
    if left:
        pytest.skip("the other checks hold; not asserted until the feature is found: " + "; ".join(left))


def test_table_lines_up() -> None:
    lines = table([Figures("kill-worker", 1, 2, ""), Figures("drop-replies", 1, 0, "")]).splitlines()
    assert len({len(line) for line in lines}) == 1
    assert len(lines) == 2 + len(Figures.ROWS)

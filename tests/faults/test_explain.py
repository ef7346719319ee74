"""The fault suite's explanation of reruns, tried on hand-made records: a job run twice is put down to
a recorded fault during its first attempt (its worker killed, an outage longer than its timeout, a
dropped answer to a command naming it), and is listed as unexplained when no recorded fault fits."""

from __future__ import annotations

from tests.faults.checks import (
    DROPPED,
    KILLED,
    OUTAGE,
    Drop,
    Entry,
    Faults,
    Figures,
    Kill,
    Outage,
    Run,
    by_job,
    explain,
    figures,
)

JOB, PID, OTHER_PID = 41, 5000, 5001
#: Wall time (seconds) the first attempt starts; it times out 5 s later, the job's heartbeat_timeout.
T0 = 1_800_000_000.0
TIMEOUT_MS = 5000


def entry(seq: int, at: float, kind: str, **data: object) -> Entry:
    ms = int(at * 1000)
    return Entry(f"{ms}-{seq}", kind, ms, JOB, dict(data))


def ledger() -> list[Entry]:
    """Created, started (attempt 1 by worker PID), timed out 5 s later, requeued, started again
    (attempt 2), completed."""
    return [
        entry(0, T0 - 1, "job_created", heartbeat_timeout=TIMEOUT_MS, timeout=60_000, input='{"key": "k"}'),
        entry(1, T0, "job_started", attempt=1, worker=f"host-{PID}-abcdef"),
        entry(2, T0 + 5.5, "job_timed_out", error={"kind": "heartbeat_timeout"}, ended=False),
        entry(3, T0 + 5.5, "job_requeued", retry=True),
        entry(4, T0 + 6, "job_started", attempt=2, worker=f"host-{OTHER_PID}-fedcba"),
        entry(5, T0 + 6.2, "job_completed"),
    ]


RUNS = [Run(JOB, 1, PID, T0 + 0.01), Run(JOB, 2, OTHER_PID, T0 + 6.01)]


def why(faults: Faults) -> str:
    (rerun,) = explain(by_job(ledger()), RUNS, faults)
    return rerun.cause


def test_a_rerun_after_its_worker_was_killed_is_explained() -> None:
    assert why(Faults(kills=[Kill(T0 + 0.1, PID, "worker1")])) == KILLED


def test_a_rerun_with_no_fault_recorded_is_unexplained() -> None:
    assert why(Faults()) == ""


def test_a_kill_explains_only_the_worker_that_ran_the_attempt_while_it_ran() -> None:
    other_worker = Kill(T0 + 0.1, OTHER_PID, "worker2")
    before_the_run = Kill(T0 - 0.5, PID, "worker1")
    after_the_attempt = Kill(T0 + 5.8, PID, "worker1")
    the_server = Kill(T0 + 0.1, PID, "serve")
    assert why(Faults(kills=[other_worker, before_the_run, after_the_attempt, the_server])) == ""


def test_an_outage_longer_than_the_timeout_during_the_attempt_explains_it() -> None:
    assert why(Faults(outages=[Outage(T0 - 0.5, T0 + 5.1, "valkey paused")])) == OUTAGE
    shorter = Outage(T0 + 1, T0 + 4.9, "valkey paused")
    elsewhere = Outage(T0 + 10, T0 + 20, "serve killed")
    assert why(Faults(outages=[shorter, elsewhere])) == ""


def test_an_answer_dropped_during_the_attempt_to_a_command_naming_the_job_explains_it() -> None:
    naming = ("EVALSHA", "ab12", "1", "faults", "1800000000100", str(JOB), "completed")
    assert why(Faults(drops=[Drop(T0 + 0.2, T0 + 0.19, naming)])) == DROPPED
    another_job = Drop(T0 + 0.2, T0 + 0.19, ("EVALSHA", "ab12", "1", "faults", "1800000000100", "42"))
    too_late = Drop(T0 + 5.6, T0 + 5.59, naming)
    assert why(Faults(drops=[another_job, too_late])) == ""


def test_the_same_attempt_run_twice_is_unexplained_even_with_a_kill() -> None:
    runs = [Run(JOB, 1, PID, T0 + 0.01), Run(JOB, 1, OTHER_PID, T0 + 0.02)]
    (rerun,) = explain(by_job(ledger()), runs, Faults(kills=[Kill(T0 + 0.1, PID, "worker1")]))
    assert rerun.cause == "" and "handed out twice" in rerun.detail


def test_the_figures_count_reruns_by_cause_and_list_the_unexplained() -> None:
    def run(faults: Faults) -> Figures:
        return figures(
            fault="kill-worker", seconds=1, faults=1, features="", entries=ledger(), creates=[], runs=RUNS,
            kills=faults.kills, worker_logs="", outages=faults.outages, drops=faults.drops, misplaced=[],
            verify=0,
        )  # fmt: skip

    explained = run(Faults(kills=[Kill(T0 + 0.1, PID, "worker1")]))
    assert (explained.run_twice, explained.reruns, explained.by_kill, explained.unexplained) == (1, 1, 1, 0)
    assert explained.problems == []

    unexplained = run(Faults(outages=[Outage(T0 + 1, T0 + 3, "valkey paused")]))
    assert (unexplained.reruns, unexplained.by_kill, unexplained.by_outage, unexplained.unexplained) == (
        1,
        0,
        0,
        1,
    )
    (problem,) = unexplained.problems
    assert f"job {JOB} ran again unexplained" in problem
    assert "attempt 1 by pid 5000" in problem and "attempt 2 by pid 5001" in problem
    assert "ended by job_timed_out" in problem and "timeout 5.0 s" in problem
    assert "valkey paused" in problem  # the faults around it
    assert "job_started@" in problem  # and its events

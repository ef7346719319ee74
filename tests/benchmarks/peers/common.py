"""What the peer modules share: picking the best configuration from a grid, and the figures of a
processing run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.benchmarks.ours import figures as F
from tests.benchmarks.ours.figures import Figure, Results, Settings
from tests.benchmarks.ours.runs import RunFailed
from tests.benchmarks.ours.sampling import Usage, script_calls


@dataclass(frozen=True)
class PeerRun:
    """One processing run of a peer: its rate and the server's spending."""

    jobs: int
    rate: float
    enqueue: Usage
    process: Usage


Config = tuple[int, int]
RunOnce = Callable[[int, int, int], PeerRun]  # (jobs, procs, concurrency) -> run


def best_of_grid(
    run_once: RunOnce, grid: Sequence[Config], settings: Settings, name: str, log: Any
) -> tuple[Config, list[PeerRun], dict[str, int]]:
    """Try each (procs, concurrency) on ``grid_jobs``; re-run the best on ``jobs``, ``repeats`` times.
    A full run's grid has as many configurations as ours (:data:`tests.benchmarks.ours.figures.GRID_SIZE`)."""
    if not settings.quick and len(grid) != F.GRID_SIZE:
        raise ValueError(f"{name}: a grid of {len(grid)} configurations, not {F.GRID_SIZE} as every system's")
    tried: dict[Config, float] = {}
    for procs, conc in grid:
        try:
            tried[(procs, conc)] = run_once(settings.grid_jobs, procs, conc).rate
            log(f"  {name} grid {F.config_note(procs, conc)}: {tried[(procs, conc)]:,.0f} jobs/s")
        except RunFailed as exc:
            log(f"  {name} grid {F.config_note(procs, conc)}: failed: {exc}")
    if not tried:
        raise RunFailed(f"{name} failed in every configuration")
    best = max(tried, key=lambda c: tried[c])
    runs = [run_once(settings.jobs, *best) for _ in range(settings.repeats)]
    return best, runs, {F.config_note(*c): round(r) for c, r in tried.items()}


def process_figures(best: Config, runs: list[PeerRun], tried: dict[str, int]) -> Results:
    """The processing figures from the runs at the best configuration (the median run)."""
    run = sorted(runs, key=lambda r: r.rate)[len(runs) // 2]
    note = F.config_note(*best)
    total = run.enqueue + run.process
    detail = {
        "grid": tried,
        "runs": [round(r.rate) for r in runs],
        "cpu_us_enqueue": round(run.enqueue.cpu_us_per(run.jobs), 2),
        "calls_process": round(run.process.calls_per(run.jobs), 2),
        "script_round_trips_per_job": round(script_calls(total, run.jobs), 3),
        "commands_process": run.process.breakdown(run.jobs),
    }
    return {
        F.PROCESS_BEST: Figure(run.rate, "jobs/s", note, detail),
        F.CPU_PROCESS: Figure(run.process.cpu_us_per(run.jobs), "us/job", note),
        F.CPU_LIFECYCLE: Figure(total.cpu_us_per(run.jobs), "us/job", note),
        F.CALLS_LIFECYCLE: Figure(total.calls_per(run.jobs), "cmds/job", note),
    }


def one_by_one_figure(runs: list[tuple[float, float]], note: str) -> Figure:
    """The median of (jobs/s, server µs per job) runs of enqueues."""
    rate, cpu = sorted(runs)[len(runs) // 2]
    return Figure(rate, "jobs/s", note, {"cpu_us_per_job": cpu})


def enqueue_one_figures(runs: list[tuple[float, float]], note: str) -> Results:
    """The one-by-one enqueue rate and its server CPU per job, from the median run."""
    rate = one_by_one_figure(runs, note)
    return {F.ENQUEUE_ONE: rate, F.ENQUEUE_ONE_CPU: Figure(rate.detail["cpu_us_per_job"], "us/job", note)}


def latency_figures(latencies: list[float], note: str) -> Results:
    return {
        F.LATENCY_P50: Figure(F.percentile(latencies, 50), "ms", note),
        F.LATENCY_P99: Figure(F.percentile(latencies, 99), "ms", note, {"max": max(latencies)}),
    }

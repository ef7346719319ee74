"""The report: every figure of ours beside each peer's, as a ratio, and the bars jobledger sets itself.

A ratio is always ours / theirs, so read it with the row's direction: for "higher is better" rows
a ratio above 1 means ours leads, for "lower is better" rows a ratio below 1 does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import calibration
from . import figures as F
from .figures import Figure, Results

#: (key, label, better): better is "higher", "lower" or "" (no direction: context only).
ROWS: list[tuple[str, str, str]] = [
    (F.PROCESS_BEST, "processing with each one's worker, best configuration (jobs/s)", "higher"),
    (F.PROCESS_1X1, "processing, 1 worker x concurrency 1 (jobs/s)", "higher"),
    (F.PROCESS_OFF, "processing, the same with timeouts and expiry off (jobs/s)", "higher"),
    (F.PROCESS_LOOP, "processing, a bare fetch/update loop, benchmark only (jobs/s)", "higher"),
    (F.CPU_PROCESS, "server CPU per job, processing (us)", "lower"),
    (F.CPU_LIFECYCLE, "server CPU per job, enqueue + processing (us)", "lower"),
    (F.CALLS_LIFECYCLE, "Redis commands per job, enqueue + processing", "lower"),
    (F.ENQUEUE_BULK, "bulk enqueue (jobs/s)", "higher"),
    (F.ENQUEUE_ONE, "one-by-one enqueue (jobs/s)", "higher"),
    (F.ENQUEUE_ONE_CPU, "server CPU per job, one-by-one enqueue (us)", "lower"),
    (F.LATENCY_P50, "latency one job at a time, p50 (ms)", "lower"),
    (F.LATENCY_P99, "latency one job at a time, p99 (ms)", "lower"),
    (F.IDLE_COMMANDS, "an idle worker's commands per second", "lower"),
    (F.MEMORY, "retained bytes per ended job, events included", "lower"),
    (F.PROCESS_HTTP, "processing with the Worker over HTTP, best configuration (jobs/s)", "higher"),
    (F.HTTP_OURS, "HTTP lifecycle: create+fetch+complete (jobs/s)", "higher"),
    (F.HTTP_BARE, "bare Starlette, 3 requests x 1 Redis call (jobs/s)", ""),
    (F.HTTP_RATIO, "HTTP cost ratio, ours / bare", "lower"),
    (F.HTTP_AUTH, "HTTP lifecycle with auth, admin token (jobs/s)", "higher"),
    (F.HTTP_AUTH_RATIO, "HTTP cost of auth, with / without", "lower"),
    (F.REPLAY, "replay rebuild (events/s)", "higher"),
    (F.SCHED_SMALL, "scheduler check, 10 running, none due (us)", "lower"),
    (F.SCHED_LARGE, "scheduler check, 100k running, none due (us)", "lower"),
    (F.SCHED_RATIO, "scheduler check ratio, 100k / 10", "lower"),
    (F.QUOTA_SMALL, "fetch past 10 jobs held by quota (us)", "lower"),
    (F.QUOTA_LARGE, "fetch past 100k jobs held by quota (us)", "lower"),
    (F.QUOTA_RATIO, "quota fetch ratio, 100k / 10", "lower"),
    (F.DASH_QUEUES, "dashboard: queues overview, median (ms)", "lower"),
    (F.DASH_QUEUE, "dashboard: a queue's first page, median (ms)", "lower"),
    (F.DASH_QUEUE_DEEP, "dashboard: a deep page of completed jobs, median (ms)", "lower"),
    (F.DASH_QUEUE_STATUS, "dashboard: a queue's failed jobs, median (ms)", "lower"),
    (F.DASH_QUEUE_TAG, "dashboard: a queue's jobs by tag, median (ms)", "lower"),
    (F.DASH_JOB, "dashboard: a job and its timeline, median (ms)", "lower"),
    (F.DASH_FAILED, "dashboard: failed jobs, median (ms)", "lower"),
    (F.DASH_LEDGER, "dashboard: the ledger page, median (ms)", "lower"),
    (F.DASH_EVENTS, "dashboard: the live ledger page, median (ms)", "lower"),
    (F.DASH_RATIO, "dashboard: worst page time ratio, large / small ledger", "lower"),
    (F.DASH_RSS, "dashboard: app resident memory, large ledger (MiB)", ""),
    (F.START_OURS, "start: serve, spawn to /ready 200, Redis running (ms)", "lower"),
    (F.START_EMBEDDED, "start: serve, spawn to /ready 200, embedded Redis (ms)", "lower"),
    (F.START_CREATE, "start: serve, spawn to the first create's 201, Redis running (ms)", "lower"),
    (F.START_OTEL, "start: serve, spawn to /ready 200, OpenTelemetry's SDK installed (ms)", "lower"),
    (F.START_BARE, "start: bare Starlette under uvicorn, spawn to 200 (ms)", ""),
    (F.START_RATIO, "start: ratio, serve (Redis running) / bare", "lower"),
    (F.START_EMBEDDED_RATIO, "start: ratio, serve (embedded Redis) / bare", "lower"),
    (F.CLUSTER_CPU_SINGLE, "cluster: server CPU per job, one node (us)", ""),
    (F.CLUSTER_CPU, "cluster: server CPU per job, 3-node Cluster, summed (us)", "lower"),
    (F.CLUSTER_CPU_RATIO, "cluster: CPU per job, Cluster / one node", "lower"),
    (F.CLUSTER_SPREAD, "cluster: 30 queues' commands, a node's largest distance from the mean", "lower"),
]
#: Rows of the parts only ``--only`` names; shown when measured.
NAMED_ROWS: list[tuple[str, str, str]] = [
    (F.FILES_CP, "files: cp + sync of the file, same disk (MB/s)", ""),
    (F.FILES_STORE_PUT, "files: local store put, in process (MB/s)", "higher"),
    (F.FILES_STORE_READ, "files: local store read, in process (MB/s)", "higher"),
    (F.FILES_UP, "files: PUT /blob (MB/s)", "higher"),
    (F.FILES_UP_RSS, "files: server RSS growth, PUT /blob (MiB)", "lower"),
    (F.FILES_JOB_UP, "files: multipart job create (MB/s)", "higher"),
    (F.FILES_JOB_UP_RSS, "files: server RSS growth, multipart create (MiB)", "lower"),
    (F.FILES_DOWN, "files: GET /job/{id}/files/{name} (MB/s)", "higher"),
    (F.FILES_DOWN_RSS, "files: server RSS growth, download (MiB)", "lower"),
    (F.SEAL_CREATE_OFF, "seal: bulk create, sealing off (jobs/s)", ""),
    (F.SEAL_CREATE_ON, "seal: bulk create, a sealer running (jobs/s)", "higher"),
    (F.SEAL_PROCESS_OFF, "seal: processing, sealing off (jobs/s)", ""),
    (F.SEAL_PROCESS_ON, "seal: processing, a sealer running (jobs/s)", "higher"),
    (F.SEAL_APPEND_PEAK, "seal: the ledger's peak append rate (events/s)", ""),
    (F.SEAL_SEALER_RATE, "seal: the sealer on one core (events/s)", "higher"),
    (F.SEAL_LAG_P50, "seal: seal lag at that load, p50 (s)", "lower"),
    (F.SEAL_LAG_P99, "seal: seal lag at that load, p99 (s)", "lower"),
    (F.SEAL_INCLUSION_READS, "seal: files read for an inclusion proof", "lower"),
    (F.SEAL_RECEIPT_READS, "seal: files read for a job's receipt", "lower"),
    (F.SOAK_MEMORY, "soak: Redis used_memory at the end, retention on (MiB)", "lower"),
    (F.SOAK_GROWTH, "soak: Redis used_memory growth after the first rounds (KiB/s)", "lower"),
    (F.SOAK_WHOLE, "soak: job histories whole at the end (ratio)", "higher"),
]


@dataclass(frozen=True)
class Target:
    """One bar jobledger sets itself: a ratio measured in the run against a limit."""

    name: str
    ratio: float | None
    limit: float
    at_least: bool  # True: ratio >= limit is met; False: ratio <= limit is met
    basis: str

    @property
    def met(self) -> bool | None:
        if self.ratio is None:
            return None
        return self.ratio >= self.limit if self.at_least else self.ratio <= self.limit

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "ratio": self.ratio, "limit": self.limit,
                "at_least": self.at_least, "basis": self.basis, "met": self.met}  # fmt: skip


def _value(systems: dict[str, Results], system: str, key: str) -> float | None:
    figure = systems.get(system, {}).get(key)
    return figure.value if figure is not None else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _peer_extreme(
    systems: dict[str, Results], key: str, pick: Callable[..., Any]
) -> tuple[str, float | None]:
    values = {s: _value(systems, s, key) for s in systems if s != "ours"}
    present = {s: v for s, v in values.items() if v is not None}
    if not present:
        return "no peer", None
    name = pick(present, key=lambda s: present[s])
    return str(name), present[name]


def targets(systems: dict[str, Results]) -> list[Target]:
    """The bars, each as a ratio measured in this run (a bar against a peer not measured: None)."""

    def ours(key: str) -> float | None:
        return _value(systems, "ours", key)

    def vs(key: str, peer: str) -> float | None:
        return _ratio(ours(key), _value(systems, peer, key))

    top, top_rate = _peer_extreme(systems, F.PROCESS_BEST, max)
    low, low_cpu = _peer_extreme(systems, F.CPU_LIFECYCLE, min)
    lowp, lowp_cpu = _peer_extreme(systems, F.CPU_PROCESS, min)
    p50, p50_value = _peer_extreme({s: r for s, r in systems.items() if s in ("ours", "saq", "bullmq")},
                                   F.LATENCY_P50, min)  # fmt: skip
    return [
        Target("lifecycle throughput with the Worker >= 1.5x every peer's",
               _ratio(ours(F.PROCESS_BEST), top_rate), 1.5, True,
               f"ours / {top} (the fastest peer), each at its best configuration"),
        Target("one worker at concurrency 1 >= BullMQ's at 1", vs(F.PROCESS_1X1, "bullmq"), 1, True,
               "ours / bullmq, 1 process x concurrency 1"),
        Target("server CPU per job <= the lowest peer's", _ratio(ours(F.CPU_LIFECYCLE), low_cpu), 1, False,
               f"ours / {low}, enqueue + processing"),
        Target("  (the same, processing only)", _ratio(ours(F.CPU_PROCESS), lowp_cpu), 1, False,
               f"ours / {lowp}, processing only"),
        Target("bulk enqueue >= BullMQ addBulk", vs(F.ENQUEUE_BULK, "bullmq"), 1, True, "ours / bullmq"),
        Target("one-by-one create <= BullMQ's server CPU per job", vs(F.ENQUEUE_ONE_CPU, "bullmq"), 1, False,
               "ours / bullmq, server CPU per job created one by one"),
        Target("latency p50 <= saq's and BullMQ's", _ratio(ours(F.LATENCY_P50), p50_value), 1, False,
               f"ours / {p50} (the lower of the two)"),
        Target("latency p99 <= BullMQ's", vs(F.LATENCY_P99, "bullmq"), 1, False, "ours / bullmq"),
        Target("an idle worker <= 1 command/s", ours(F.IDLE_COMMANDS), 1, False,
               "commands per second an idle Worker costs the server"),
        Target("HTTP lifecycle within 2x bare Starlette", ours(F.HTTP_RATIO), 2, False,
               "time per job over HTTP / time per 3 bare requests"),
        Target("serve's cold start to /ready within 2x bare Starlette", ours(F.START_RATIO), 2, False,
               "spawn to the first 200 from /ready, Redis running / bare Starlette under uvicorn"),
        Target("  (the same, the embedded server started)", ours(F.START_EMBEDDED_RATIO), 2, False,
               "spawn to the first 200 from /ready, embedded Redis / bare Starlette under uvicorn"),
        Target("HTTP lifecycle with auth within 1.15x without", ours(F.HTTP_AUTH_RATIO), 1.15, False,
               "time per job with an admin token / without auth"),
        Target("sealing: bulk create with a sealer within noise (0.9x) of without",
               _ratio(ours(F.SEAL_CREATE_ON), ours(F.SEAL_CREATE_OFF)), 0.9, True, "on / off, medians"),
        Target("sealing: processing with a sealer within noise (0.9x) of without",
               _ratio(ours(F.SEAL_PROCESS_ON), ours(F.SEAL_PROCESS_OFF)), 0.9, True, "on / off, medians"),
        Target("sealing: seal lag p99 <= 2 s at the peak append rate", ours(F.SEAL_LAG_P99), 2, False,
               "seconds, read every 50 ms while jobs are created and worked"),
        Target("Cluster: server CPU per job within 1.2x one node's", ours(F.CLUSTER_CPU_RATIO), 1.2, False,
               "summed over three nodes / one node, the same work"),
        Target("Cluster: 30 queues within 20% of the mean per node", ours(F.CLUSTER_SPREAD), 0.2, False,
               "largest distance of a node's commands from the mean"),
        Target("replay >= 100,000 events/s", _ratio(ours(F.REPLAY), 100_000), 1, True, "ours / 100,000"),
        Target("scheduler check, 100k running within 2x of 10", ours(F.SCHED_RATIO), 2, False, "100k / 10"),
        Target("memory per ended job <= 1.5x BullMQ's", vs(F.MEMORY, "bullmq"), 1.5, False,
               "ours / bullmq (BullMQ's events capped at 10,000)"),
    ]  # fmt: skip


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _cell(ours: Figure | None, theirs: Figure | None) -> str:
    if theirs is None:
        return ""
    if theirs.value is None:
        return "n/a"
    ratio = _ratio(ours.value if ours else None, theirs.value)
    return _num(theirs.value) + (f" ({ratio:.2f}x)" if ratio is not None else "")


def table(systems: dict[str, Results]) -> str:
    """The figures as an aligned text table (a Markdown table, so the README can hold it as is)."""
    names = list(systems)
    header = ["figure", *[n if n == "ours" else f"{n} (ours/{n})" for n in names]]
    lines = [header]
    for key, label, better in (*ROWS, *NAMED_ROWS):
        if not any(key in systems[n] for n in names):
            continue
        ours = systems.get("ours", {}).get(key)
        mark = {"higher": " ^", "lower": " v"}.get(better, "")
        cells = [label + mark, _num(ours.value) if ours else ""]
        cells += [_cell(ours, systems[n].get(key)) for n in names[1:]]
        lines.append(cells)
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in lines]
    out.insert(1, "| " + " | ".join("-" * w for w in widths) + " |")
    return "\n".join(out)


def notes(systems: dict[str, Results]) -> list[str]:
    """How each figure was reached (configuration, method), system by system."""
    out = []
    for name, results in systems.items():
        for key, label, _ in (*ROWS, *NAMED_ROWS):
            figure = results.get(key)
            if figure is not None and figure.note:
                out.append(f"{name}: {label.split(' (')[0]}: {figure.note}")
    return out


def target_lines(found: list[Target]) -> list[str]:
    out = []
    for t in found:
        sign = ">=" if t.at_least else "<="
        status = {True: "MET", False: "NOT MET", None: "not measured"}[t.met]
        ratio = "-" if t.ratio is None else f"{t.ratio:.2f}"
        out.append(f"{status:<12} {t.name}: {ratio} (needs {sign} {t.limit:g}; {t.basis})")
    return out


def render(run: dict[str, Any]) -> str:
    """The whole report as text."""
    meta = run["meta"]
    systems = run["systems"]
    head = [
        f"jobledger benchmark, {meta['date']}: {meta['machine']}",
        f"server: {meta['server']}; jobs per run: {meta['jobs']:,}; revision: {meta['revision']}",
        f"command: {meta['command']}",
        f"load average before / after: {meta['load_before']} / {meta['load_after']}",
        f"raw server: {calibration.describe(meta.get('raw_server'))}",
        "ratios are ours / theirs: ^ higher is better, v lower is better",
        "",
        table(systems),
        "",
        "jobledger's bars:",
        *target_lines(targets(systems)),
    ]
    if run.get("unavailable"):
        head += ["", "not measured:", *[f"  {k}: {v}" for k, v in run["unavailable"].items()]]
    head += ["", "how each figure was reached:", *[f"  {n}" for n in notes(systems)]]
    return "\n".join(head)


def as_json(run: dict[str, Any]) -> str:
    systems = {s: {k: f.as_json() for k, f in r.items()} for s, r in run["systems"].items()}
    out = {**run, "systems": systems, "targets": [t.as_json() for t in targets(run["systems"])]}
    return json.dumps(out, indent=2, default=str)

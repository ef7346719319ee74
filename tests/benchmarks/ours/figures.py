"""What a benchmark run produces: figures by system, the settings of a run, and small statistics.

A :class:`Figure` is one measured number with its unit and a note (the configuration it was measured
at).  Every system (ours, each peer) fills a :data:`Results` dict under the same keys, so the report
can put them side by side.  ``None`` as a value means "measured, but this system has no such
thing" (e.g. a peer without bulk enqueue); the note then says why.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

#: The parts of ours a run can measure, the raw-server calibration, and the peers (``--only``
#: names; "ours" and "peers" name each group whole).
OURS_PARTS = (
    "process",
    "enqueue",
    "http",
    "memory",
    "scheduler",
    "quotas",
    "replay",
    "dashboard",
    "start",
    "seal",
    "cluster",
)
#: Parts of ours run only when ``--only`` names them ("ours" leaves them out: they write gigabytes).
NAMED_PARTS = ("files", "bulk", "search", "soak")
CALIBRATION = "raw"
PEER_NAMES = ("dramatiq", "saq", "bullmq")

# The keys every system may fill.  The processing figures are each system's own worker as its
# users run it: for ours, the Worker class over Redis on a queue at its default settings.
PROCESS_BEST = "process_best"
PROCESS_1X1 = "process_1x1"
CPU_PROCESS = "cpu_us_process"
CPU_LIFECYCLE = "cpu_us_lifecycle"
CALLS_LIFECYCLE = "calls_lifecycle"
ENQUEUE_BULK = "enqueue_bulk"
ENQUEUE_ONE = "enqueue_one"
ENQUEUE_ONE_CPU = "enqueue_one_cpu_us"
LATENCY_P50 = "latency_p50_ms"
LATENCY_P99 = "latency_p99_ms"
MEMORY = "bytes_per_ended_job"
# Ours only.
PROCESS_OFF = "process_timeouts_off"
PROCESS_LOOP = "process_bare_loop"
PROCESS_HTTP = "process_http_worker"
IDLE_COMMANDS = "idle_worker_commands_per_s"
HTTP_OURS = "http_jobs"
HTTP_BARE = "http_bare_jobs"
HTTP_RATIO = "http_cost_ratio"
HTTP_AUTH = "http_auth_jobs"
HTTP_AUTH_RATIO = "http_auth_cost_ratio"
REPLAY = "replay_events"
SCHED_SMALL = "sched_check_10_us"
SCHED_LARGE = "sched_check_100k_us"
SCHED_RATIO = "sched_ratio"
QUOTA_SMALL = "quota_fetch_10_us"
QUOTA_LARGE = "quota_fetch_100k_us"
QUOTA_RATIO = "quota_ratio"
DASH_QUEUES = "dash_queues_ms"
DASH_QUEUE = "dash_queue_ms"
DASH_QUEUE_DEEP = "dash_queue_deep_ms"
DASH_QUEUE_STATUS = "dash_queue_status_ms"
DASH_QUEUE_TAG = "dash_queue_tag_ms"
DASH_JOB = "dash_job_ms"
DASH_FAILED = "dash_failed_ms"
DASH_LEDGER = "dash_ledger_ms"
DASH_EVENTS = "dash_events_ms"
DASH_RATIO = "dash_worst_ratio"
DASH_RSS = "dash_app_rss_mib"
START_OURS = "start_ready_ms"
START_EMBEDDED = "start_ready_embedded_ms"
START_CREATE = "start_first_create_ms"
START_OTEL = "start_ready_otel_ms"
START_BARE = "start_bare_ms"
START_RATIO = "start_ratio"
START_EMBEDDED_RATIO = "start_embedded_ratio"
FILES_CP = "files_cp_mbps"
FILES_STORE_PUT = "files_store_put_mbps"
FILES_STORE_READ = "files_store_read_mbps"
FILES_UP = "files_put_blob_mbps"
FILES_UP_RSS = "files_put_blob_rss_mib"
FILES_JOB_UP = "files_job_create_mbps"
FILES_JOB_UP_RSS = "files_job_create_rss_mib"
FILES_DOWN = "files_download_mbps"
FILES_DOWN_RSS = "files_download_rss_mib"
SEAL_CREATE_OFF = "seal_create_off"
SEAL_CREATE_ON = "seal_create_on"
SEAL_PROCESS_OFF = "seal_process_off"
SEAL_PROCESS_ON = "seal_process_on"
SEAL_APPEND_PEAK = "seal_append_peak"
SEAL_SEALER_RATE = "seal_sealer_events"
SEAL_LAG_P50 = "seal_lag_p50_s"
SEAL_LAG_P99 = "seal_lag_p99_s"
SEAL_INCLUSION_READS = "seal_inclusion_reads"
SEAL_RECEIPT_READS = "seal_receipt_reads"
CLUSTER_CPU_SINGLE = "cluster_cpu_single_us"
CLUSTER_CPU = "cluster_cpu_us"
CLUSTER_CPU_RATIO = "cluster_cpu_ratio"
CLUSTER_SPREAD = "cluster_spread"
SOAK_MEMORY = "soak_used_memory_mib"
SOAK_GROWTH = "soak_growth_kib_s"
SOAK_WHOLE = "soak_histories_whole"


@dataclass
class Figure:
    """One measured number (``None``: not applicable to this system, see ``note``)."""

    value: float | None
    unit: str
    note: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


Results = dict[str, Figure]

#: The (processes, concurrency) grid of the Worker class in a full run; each peer's grid has as many.
GRID = ((1, 32), (1, 128), (2, 64), (2, 256))
GRID_SIZE = len(GRID)


@dataclass(frozen=True)
class Settings:
    """How big and how repeated a run is.  :meth:`full` is the reference run, :meth:`quick` a smoke run."""

    jobs: int
    repeats: int
    grid_jobs: int
    #: (processes, concurrency) of the Worker class; every peer tries a grid of this size.
    grid: tuple[tuple[int, int], ...]
    #: (processes, threads, batch) of the bare fetch / update loop, shown beside, never the headline.
    loop_grid: tuple[tuple[int, int, int], ...]
    latency_samples: int
    enqueue_one_jobs: int
    http_jobs: int
    http_connections: int
    replay_events: int
    scale_jobs: int
    check_runs: int
    idle_seconds: float
    dashboard_jobs: int
    dashboard_small_jobs: int
    page_requests: int
    quick: bool = False
    #: The size of the file the ``files`` part moves.
    file_bytes: int = 1 << 30

    @classmethod
    def full(cls, jobs: int = 20_000) -> Settings:
        return cls(
            jobs=jobs, repeats=3, grid_jobs=max(jobs // 4, 1000), grid=GRID,
            loop_grid=((1, 4, 50), (1, 4, 200), (2, 4, 50), (2, 4, 200)),
            latency_samples=2000, enqueue_one_jobs=min(jobs, 10_000), http_jobs=min(jobs, 3000),
            http_connections=32, replay_events=1_000_000, scale_jobs=100_000, check_runs=2000,
            idle_seconds=10.0, dashboard_jobs=1_000_000, dashboard_small_jobs=10_000, page_requests=50,
        )  # fmt: skip

    @classmethod
    def quick_run(cls, jobs: int = 200) -> Settings:
        return cls(
            jobs=jobs, repeats=1, grid_jobs=jobs, grid=((1, 8),), loop_grid=((1, 2, 20),),
            latency_samples=30, enqueue_one_jobs=jobs, http_jobs=jobs, http_connections=4,
            replay_events=3000, scale_jobs=500, check_runs=50, idle_seconds=2.0,
            dashboard_jobs=10_000, dashboard_small_jobs=1000, page_requests=10, quick=True,
            file_bytes=64 << 20,
        )  # fmt: skip


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return float(ordered[rank])


def config_note(procs: int, conc: int, batch: int | None = None) -> str:
    """``"2 proc x 4 conc x batch 50"``: how a processing figure was reached."""
    text = f"{procs} proc x {conc} conc"
    return text + (f" x batch {batch}" if batch is not None else "")

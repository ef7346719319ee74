"""A worker's own metrics, for ``jobledger worker --metrics-port``: the jobs it has in hand, how long
its handler ran for each job and how each ended, the completions and failures it had to send again.

What the ledger knows (every worker's jobs by queue and outcome, their wait and run times) is the
server's ``/metrics``; these say what one worker process does, to find the one that is stuck, slow or
failing.  Served on a small HTTP endpoint of the process's own (:meth:`WorkerMetrics.serve`), from a
registry of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

#: Handlers run from milliseconds to hours: buckets from 10 ms to 4 h.
HANDLER_BUCKETS = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0,
)  # fmt: skip
#: How a job in hand ended, as the worker's log line says (``outcome``).
OUTCOMES = ("completed", "failed", "cancelled", "timed_out", "returned", "not_recorded")


class WorkerMetrics:
    """One worker's registry and the metrics the worker records into it."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.in_hand = Gauge(
            "jobledger_worker_jobs_in_hand",
            "Jobs this worker has fetched and not finished (running, or their outcome on its way).",
            registry=self.registry,
        )
        self.handler = Histogram(
            "jobledger_worker_handler_seconds",
            "How long the handler ran for a job (with its files' download and upload), by queue.",
            labelnames=["queue"],
            buckets=HANDLER_BUCKETS,
            registry=self.registry,
        )
        self.jobs = Counter(
            "jobledger_worker_jobs",
            "Jobs this worker ran, by queue and how they ended.",
            labelnames=["queue", "outcome"],
            registry=self.registry,
        )
        self.resends = Counter(
            "jobledger_worker_resends",
            "Completions and failures sent again because the ledger could not be reached, by queue.",
            labelnames=["queue"],
            registry=self.registry,
        )

    def count_in_hand(self, how_many: Callable[[], int]) -> None:
        """Read the jobs in hand from the worker at each scrape."""
        self.in_hand.set_function(lambda: float(how_many()))

    def ended(self, queue: str, outcome: str, seconds: float) -> None:
        """A job of ``queue`` ended ``outcome`` after its handler ran ``seconds``."""
        self.handler.labels(queue).observe(seconds)
        self.jobs.labels(queue, outcome).inc()

    def resent(self, queue: str) -> None:
        self.resends.labels(queue).inc()

    def serve(self, port: int, host: str = "127.0.0.1") -> WSGIServer:
        """Serve ``/metrics`` on ``host:port`` in a thread of its own; shut it down when done."""
        server, _thread = start_http_server(port, host, registry=self.registry)
        return server

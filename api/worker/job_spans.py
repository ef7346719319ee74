"""The worker's span around each job it runs, made only when the worker traces (this module
imports OpenTelemetry; :class:`jobledger.worker.worker.Worker` imports it only then).

The span is the child of the traceparent the job was created with (the producer's span, recorded in
its ``job_created``), so one trace runs from the request that created the job to the handler that ran
it, over HTTP and over Redis alike.  A job created without one starts a trace of its own (the fetch
that handed it out is one call for many jobs, no parent of any one).  The handler runs inside the
span, so the spans it makes are its children.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from jobledger.runtime.spans import remote_parent
from jobledger.worker.transports import Assignment, Failure

#: Records how a run ended: its outcome (completed, failed, cancelled, returned), and its failure.
Ended = Callable[[str, Failure | None], None]


class JobSpans:
    """Makes the span of each job a worker runs (see the module's docstring)."""

    def __init__(self) -> None:
        self.tracer = trace.get_tracer("jobledger.worker")

    @contextmanager
    def handling(self, job: Assignment) -> Iterator[Ended]:
        """The span of one run of ``job``, current while the block runs; yields what records how
        the run ended (a failure makes the span's status an error)."""
        attributes: dict[str, str | int] = {
            "messaging.system": "jobledger",
            "messaging.operation.type": "process",
            "messaging.destination.name": job.queue,
            "messaging.message.id": str(job.id),
            "jobledger.attempt": job.attempt,
        }
        with self.tracer.start_as_current_span(
            f"process {job.queue}",
            context=remote_parent(job.traceparent),
            kind=SpanKind.CONSUMER,
            attributes=attributes,
        ) as span:

            def ended(outcome: str, failure: Failure | None) -> None:
                span.set_attribute("jobledger.outcome", outcome)
                if failure is not None:
                    span.set_status(Status(StatusCode.ERROR, f"{failure.kind}: {failure.message}"[:1000]))

            yield ended

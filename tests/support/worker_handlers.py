"""Handlers that the worker tests run in a ``jobledger worker`` subprocess (importable as
``tests.support.worker_handlers:NAME`` from the repository root)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from jobledger.worker.worker import JobContext

#: No handler here blocks longer than this, so a stray subprocess always ends.
LONGEST = 30.0


def wait_for_release(job: JobContext) -> dict[str, Any]:
    """Run until the file named by ``input["release"]`` exists, then complete; first create the file
    named by ``input["started"]``, if any, to say the handler runs."""
    if "started" in job.input:
        Path(job.input["started"]).touch()
    path = Path(job.input["release"])
    deadline = time.monotonic() + LONGEST
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.02)
    return {"released": True}


def traced_echo(job: JobContext) -> dict[str, Any]:
    """Complete with the input, inside a span of the handler's own (for the trace tests: it must be
    a child of the worker's span of the job)."""
    from opentelemetry import trace

    with trace.get_tracer("tests").start_as_current_span("inside the handler"):
        return {"echo": job.input}

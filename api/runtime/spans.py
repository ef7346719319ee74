"""A traceparent as OpenTelemetry's context: what the server's request spans and the worker's
handler spans start under.  Imports OpenTelemetry: only a process that traces imports this module
(:mod:`jobledger.runtime.tracing`)."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from jobledger.contract import traceparent


def remote_parent(value: str | None) -> Context | None:
    """The context of the remote span a traceparent names (a span's child starts under it), or None
    for no traceparent or one that is not :func:`jobledger.contract.traceparent.valid`."""
    if value is None or not traceparent.valid(value):
        return None
    trace_id, span_id, flags = traceparent.parts(value)
    remote = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(flags))
    return trace.set_span_in_context(NonRecordingSpan(remote))

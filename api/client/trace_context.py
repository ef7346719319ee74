"""The traceparent a create sends: the W3C traceparent of the caller's current OpenTelemetry span,
which the server records in the job so that the handler's span is that span's child.

OpenTelemetry is never imported here: a process that has made a span has imported it already, and
one that has not has no span to send.
"""

from __future__ import annotations

import sys

from jobledger.contract.traceparent import formatted


def current_traceparent() -> str | None:
    """The current span's traceparent, or None (no OpenTelemetry in the process, or no valid span)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return formatted(context.trace_id, context.span_id, context.trace_flags)

"""A span exporter for the trace tests' subprocesses: each span ended, one JSON line appended to the
file ``$JOBLEDGER_TEST_SPANS`` names.  Found by OpenTelemetry's exporter entry points as
``OTEL_TRACES_EXPORTER=span_file`` through the distribution :func:`tests.traces.process_support.site`
writes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


def line(span: ReadableSpan) -> str:
    context, parent = span.context, span.parent
    assert context is not None
    return json.dumps({
        "name": span.name, "kind": span.kind.name, "trace": f"{context.trace_id:032x}",
        "span": f"{context.span_id:016x}", "parent": None if parent is None else f"{parent.span_id:016x}",
        "attributes": dict(span.attributes or {}), "status": span.status.status_code.name,
    })  # fmt: skip


class SpanFile(SpanExporter):
    def __init__(self) -> None:
        self.path = os.environ["JOBLEDGER_TEST_SPANS"]

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a") as out:
            out.writelines(line(span) + "\n" for span in spans)
        return SpanExportResult.SUCCESS

"""The tests of traces: the OpenTelemetry SDK of the test process, its spans kept in memory."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@cache
def _exporter() -> InMemorySpanExporter:
    """The process's one in-memory exporter (a process sets its tracer provider once)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans the test process ends during the test."""
    exporter = _exporter()
    exporter.clear()
    yield exporter
    exporter.clear()

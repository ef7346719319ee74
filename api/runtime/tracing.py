"""Whether a process traces, and setting up the OpenTelemetry SDK when it does.

Tracing is the ``otel`` extra's (``pip install 'jobledger[otel]'``).  It is on when ``[tracing]
enabled`` says so, or, left unset, when the standard ``OTEL_TRACES_EXPORTER`` names an exporter
(``OTEL_SDK_DISABLED=true`` turns it off whatever the rest says).  Nothing here imports
OpenTelemetry until :func:`start` is called: a process that does not trace never loads it.

:func:`start` configures the SDK from the standard environment, as the SDK's own auto-configuration
does: the exporters of ``OTEL_TRACES_EXPORTER`` (default ``otlp``: OTLP over HTTP, to
``OTEL_EXPORTER_OTLP_ENDPOINT``; ``console``; any installed under the SDK's entry point group), the
resource of ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``, the batch processor's
``OTEL_BSP_*``.  A process whose tracer provider someone else set up (``opentelemetry-instrument``, an
application embedding jobledger) keeps it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger("jobledger.tracing")

#: The entry point group where OpenTelemetry's span exporters name themselves.
EXPORTERS = "opentelemetry_traces_exporter"


class TracingUnavailable(RuntimeError):
    """Tracing was asked for but cannot be had: the extra is not installed, or an exporter named
    is not."""


def wanted(enabled: bool | None, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to trace: ``enabled`` (``[tracing] enabled``) if set, else whether
    ``OTEL_TRACES_EXPORTER`` names an exporter; never with ``OTEL_SDK_DISABLED=true``."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if enabled is not None:
        return enabled
    return bool(exporter_names(environ, default=""))


def exporter_names(environ: Mapping[str, str], default: str = "otlp") -> list[str]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names (comma-separated; ``none`` for none)."""
    raw = environ.get("OTEL_TRACES_EXPORTER", default)
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    return [] if names == ["none"] else names


def _entry_point_name(name: str, environ: Mapping[str, str]) -> str:
    """``otlp`` is the OTLP exporter of the protocol the environment names (http/protobuf unless
    ``grpc``), as the SDK resolves it; other names are their own."""
    if name != "otlp":
        return name
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return "otlp_proto_grpc" if (protocol or "").strip() == "grpc" else "otlp_proto_http"


def _exporter(name: str, environ: Mapping[str, str]) -> Any:
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group=EXPORTERS)}
    wanted_name = _entry_point_name(name, environ)
    if wanted_name not in found:
        known = ", ".join(sorted(found)) or "none"
        raise TracingUnavailable(
            f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed (installed: {known})"
        )
    return found[wanted_name].load()()


def start(service: str, environ: Mapping[str, str] = os.environ) -> Callable[[], None]:
    """Set up the SDK's tracer provider for this process (see the module's docstring), its service
    named ``service`` unless the environment names it; the function that flushes and ends it, to
    call as the process ends.  TracingUnavailable without the ``otel`` extra."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        extra = "pip install 'jobledger[otel]'"
        raise TracingUnavailable(f"tracing needs the otel extra: {extra} ({exc})") from exc
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):  # set up by whoever runs this process: theirs is kept
        return lambda: None
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service}))
    provider = TracerProvider(resource=resource)
    for name in exporter_names(environ):
        provider.add_span_processor(BatchSpanProcessor(_exporter(name, environ)))
    trace.set_tracer_provider(provider)
    log.info("tracing on: spans to %s", ", ".join(exporter_names(environ)) or "no exporter")
    return provider.shutdown

"""The W3C ``traceparent`` header that carries a producer's trace into a job: what the client sends
on a create, what the server records in ``job_created`` and hands out with the fetched job, and what
a worker starts its handler's span under.

Only version ``00`` is taken, exactly as the Trace Context recommendation writes it: 55 characters,
``00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>``, lowercase, neither id all zeros.  Anything
else is no traceparent (ignored, as the recommendation says of a header it cannot parse), so what a
job records is always 55 characters of that shape.
"""

from __future__ import annotations

import re

#: The header's name (lowercase, as HTTP/2 sends it and ASGI hands it over).
HEADER = "traceparent"
LENGTH = 55
#: A version-00 traceparent, as a job's record and its ``job_created`` event hold it.
PATTERN = r"^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
_TRACEPARENT = re.compile(PATTERN)
_NO_TRACE = "0" * 32
_NO_SPAN = "0" * 16


def valid(value: str) -> bool:
    """Whether ``value`` is a version-00 traceparent naming a trace and a span."""
    return (
        len(value) == LENGTH
        and _TRACEPARENT.fullmatch(value) is not None
        and value[3:35] != _NO_TRACE
        and value[36:52] != _NO_SPAN
    )


def taken(value: str | None) -> str | None:
    """``value`` if it is a traceparent (:func:`valid`), else None: a bad header is no header."""
    return value if value is not None and valid(value) else None


def formatted(trace_id: int, span_id: int, flags: int) -> str:
    """The traceparent of a span: its trace id, its own id (the parent of what it causes), its flags."""
    return f"00-{trace_id:032x}-{span_id:016x}-{flags & 0xFF:02x}"


def parts(value: str) -> tuple[int, int, int]:
    """The trace id, the parent span id and the flags of a :func:`valid` traceparent."""
    return int(value[3:35], 16), int(value[36:52], 16), int(value[53:55], 16)

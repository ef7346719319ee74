"""Typed views of stored projections: a job hash as Ocypod's job fields, a queue hash as settings."""

from __future__ import annotations

import json
from typing import Any

from ledger.durations import format_ms, format_time
from ledger.requests import QueueSettings

#: Ocypod's job fields in Ocypod's order, then jobledger's.
JOB_FIELDS = (
    "id", "queue", "status", "tags", "created_at", "started_at", "ended_at", "last_heartbeat",
    "input", "output", "timeout", "heartbeat_timeout", "expires_after", "retries",
    "retries_attempted", "retry_delays", "ended", "attempt", "worker",
)  # fmt: skip

JOB_STATUSES = ("queued", "running", "failed", "completed", "cancelled", "timed_out")

_TIMES = {"created_at", "started_at", "ended_at", "last_heartbeat"}
_DURATIONS = {"timeout", "heartbeat_timeout", "expires_after"}
_JSON = {"input", "output", "tags"}


def decode_hash(raw: dict[Any, Any]) -> dict[str, str]:
    return {_s(k): _s(v) for k, v in raw.items()}


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _job_field(name: str, job_id: int, h: dict[str, str]) -> Any:
    raw = h.get(name)
    if name == "id":
        return job_id
    if name in _TIMES:
        return format_time(int(raw)) if raw is not None else None
    if name in _DURATIONS:
        return format_ms(int(raw or 0))
    if name in _JSON:
        return json.loads(raw) if raw is not None else None
    if name == "retry_delays":
        return [format_ms(d) for d in json.loads(raw)] if raw else []
    if name in ("retries", "retries_attempted", "attempt"):
        return int(raw or 0)
    if name == "ended":
        return raw == "1"
    return raw


def job_view(job_id: int, h: dict[str, str], fields: tuple[str, ...] = JOB_FIELDS) -> dict[str, Any]:
    """The job as the API shows it: datetimes RFC 3339, durations compact, JSON decoded."""
    return {name: _job_field(name, job_id, h) for name in fields}


def queue_settings(h: dict[str, str]) -> QueueSettings:
    """A stored queue hash -> its settings (durations already in ms, so not parsed again)."""
    return QueueSettings.model_construct(
        timeout=int(h["timeout"]),
        heartbeat_timeout=int(h["heartbeat_timeout"]),
        expires_after=int(h["expires_after"]),
        retries=int(h["retries"]),
        retry_delays=json.loads(h["retry_delays"]) if h.get("retry_delays") else [],
    )

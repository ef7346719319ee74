"""Typed views of stored projections: a job hash as Ocypod's job fields, a queue hash as settings."""

from __future__ import annotations

import json
from typing import Any

from jobledger.ledger.durations import format_ms, format_time
from jobledger.ledger.requests import Backoff, QueueSettings

#: Ocypod's job fields in Ocypod's order, then jobledger's.
JOB_FIELDS = (
    "id", "queue", "status", "tags", "created_at", "started_at", "ended_at", "last_heartbeat",
    "input", "output", "timeout", "heartbeat_timeout", "expires_after", "retries",
    "retries_attempted", "retry_delays", "ended",
    "priority", "run_at", "retry_at", "unique_key", "quota_key", "worker", "attempt", "progress",
    "message", "errors", "max_queued_time", "retry_backoff", "retry_on", "no_retry_on", "launcher",
    "files", "results",
)  # fmt: skip


_TIMES = {"created_at", "started_at", "ended_at", "last_heartbeat", "run_at", "retry_at"}
_DURATIONS = {"timeout", "heartbeat_timeout", "expires_after", "max_queued_time"}
_JSON = {"input", "output", "tags"}
_LISTS = {"retry_on", "no_retry_on", "files"}
_COUNTS = {"retries", "retries_attempted", "attempt", "priority"}


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
    if name == "retry_delays":  # null when the job has none, as in Ocypod
        return [format_ms(d) for d in json.loads(raw)] if raw else None
    if name in _COUNTS:
        return int(raw or 0)
    if name in _LISTS:
        return json.loads(raw) if raw else []
    if name == "ended":
        return raw == "1"
    if name in ("progress", "launcher"):
        return int(raw) if raw is not None else None
    if name == "errors":
        return [_error_view(e) for e in json.loads(raw)] if raw else []
    if name == "retry_backoff":
        return _backoff_view(json.loads(raw)) if raw else None
    if name == "results":
        return [_result_view(r) for r in json.loads(raw)] if raw else []
    return raw


def _result_view(result: dict[str, Any]) -> dict[str, Any]:
    """A result as the job's record holds it, its time RFC 3339."""
    at = format_time(int(result["at"]))
    return {**result, "attempt": int(result["attempt"]), "size": int(result["size"]), "at": at}


def _error_view(err: dict[str, Any]) -> dict[str, Any]:
    view = {"at": format_time(int(err["at"])), "attempt": int(err["attempt"]), "kind": err["kind"],
            "message": err.get("message", "")}  # fmt: skip
    if "traceback" in err:
        view["traceback"] = err["traceback"]
    return view


def _backoff_view(b: dict[str, Any]) -> dict[str, Any]:
    return {"base": format_ms(int(b["base"])), "factor": b["factor"], "max": format_ms(int(b["max"]))}


def job_view(job_id: int, h: dict[str, str], fields: tuple[str, ...] = JOB_FIELDS) -> dict[str, Any]:
    """The job as the API shows it: datetimes RFC 3339, durations compact, JSON decoded."""
    return {name: _job_field(name, job_id, h) for name in fields}


_QUEUE_INTS = ("timeout", "heartbeat_timeout", "expires_after", "retries", "priority", "max_queued_time",
               "max_running", "max_running_per_key", "max_file_size", "max_job_bytes")  # fmt: skip


_FILE_LIMITS = ("max_file_size", "max_job_bytes")
_QUEUE_DEFAULTS = {name: QueueSettings.model_fields[name].default for name in _FILE_LIMITS}


def queue_settings(h: dict[str, str]) -> QueueSettings:
    """A stored queue hash -> its settings (durations already in ms, so not parsed again)."""
    backoff = json.loads(h["retry_backoff"]) if h.get("retry_backoff") else None
    # a limit a queue created before it existed does not hold reads as its default
    ints: dict[str, Any] = {name: int(h.get(name, _QUEUE_DEFAULTS.get(name, 0))) for name in _QUEUE_INTS}
    return QueueSettings.model_construct(
        **ints,
        retry_delays=json.loads(h["retry_delays"]) if h.get("retry_delays") else [],
        retry_on=json.loads(h["retry_on"]) if h.get("retry_on") else [],
        no_retry_on=json.loads(h["no_retry_on"]) if h.get("no_retry_on") else [],
        retry_backoff=Backoff.model_construct(**backoff) if backoff else None,
        paused=h.get("paused") == "1",
    )

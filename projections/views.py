"""Typed views of stored projections: a job hash as Ocypod's job fields, a queue hash as settings."""

from __future__ import annotations

import json
from typing import Any

from jobledger.ledger.durations import format_ms, format_time
from jobledger.ledger.option_kinds import NUMBERS, kind, named, nested
from jobledger.ledger.option_lists import job_numbers, job_recorded
from jobledger.ledger.requests import JobOptions, QueueSettings

#: Ocypod's job fields in Ocypod's order, then jobledger's.
_LISTED = (
    "id", "queue", "status", "tags", "created_at", "started_at", "ended_at", "last_heartbeat",
    "input", "output", "timeout", "heartbeat_timeout", "expires_after", "retries",
    "retries_attempted", "retry_delays", "ended",
    "priority", "run_at", "retry_at", "unique_key", "quota_key", "worker", "attempt", "progress",
    "message", "errors", "max_queued_time", "retry_backoff", "retry_on", "no_retry_on", "launcher",
    "files", "results",
)  # fmt: skip
#: Every field of a job: those, then any other its record copies from job_created (an option added
#: to the models shows without being listed here).
JOB_FIELDS = _LISTED + tuple(f for f in (*job_numbers(), *job_recorded()) if f not in _LISTED)


_TIMES = {"created_at", "started_at", "ended_at", "last_heartbeat", "retry_at", *named(JobOptions, "time")}
_DURATIONS = set(named(JobOptions, "duration"))
_JSON = {"input", "output", "tags"}
_LISTS = set(named(JobOptions, "list"))
_COUNTS = {"retries_attempted", "attempt", *named(JobOptions, "number")}


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


def queue_settings(h: dict[str, str]) -> QueueSettings:
    """A stored queue hash -> its settings (durations already in ms, so not parsed again).  A
    setting the hash does not hold reads as its default: a flag, list or model the queue has not set
    (set_fields.lua writes none of false, [] and null), or a setting added after the queue was made."""
    held = {name: _setting(name, h[name]) for name in QueueSettings.model_fields if h.get(name)}
    return QueueSettings.model_construct(**held)


def _setting(name: str, raw: str) -> Any:
    field = QueueSettings.model_fields[name]
    found = kind(field)
    if found in NUMBERS:
        return int(raw)
    if found == "flag":
        return raw == "1"
    if found == "model":
        return nested(field).model_construct(**json.loads(raw))
    return json.loads(raw)

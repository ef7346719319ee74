"""Logging of every jobledger command: one place that sets it up (:func:`configure`).

- Each line is timestamped (UTC, milliseconds) and levelled: ``2026-11-24T03:06:52.123Z INFO
  jobledger.scheduler: ...``, or with ``json`` one JSON object per line (``time``, ``level``,
  ``logger``, ``message``, and ``exception`` when there is one).
- uvicorn's loggers go through the same handler (uvicorn installs none of its own).
- Idle polls and long-polls are not logged at info: uvicorn's access line of a fetch answered 204,
  and of any fetch that waits (``wait=``), is logged at debug (:class:`QuietPolls`).
- A secret in a query string (``?token=``) is never written (:class:`HideSecrets`).
- A warning (or error) logged again and again is written once per minute, the next time it comes
  after the minute, with how many times it came meanwhile (:class:`RepeatFilter`): a warning that
  stops repeating within the minute is not written again.  A job's line (a record carrying
  :data:`JOB_FIELDS`, as the worker's line for each job does) is never held back: each says what
  happened to another job.  With ``json`` its fields are the object's own (``job``, ``queue``,
  ``attempt``, ``outcome``, ``duration_ms``, ...), beside the ``message``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any

FORMATS = ("text", "json")
#: uvicorn's TRACE level, below DEBUG.
TRACE = 5
LEVELS = {"critical": logging.CRITICAL, "error": logging.ERROR, "warning": logging.WARNING,
          "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG, "trace": TRACE}  # fmt: skip
#: The name of the handler :func:`configure` installs on the root logger (replaced when called again).
HANDLER_NAME = "jobledger"
#: How long (s) a repeated warning stays quiet after it was written.
REPEAT_WINDOW = 60.0
#: The attribute of a log record that makes it a job's line: a dict of the fields that say what
#: happened to the job (given as ``extra={JOB_FIELDS: {...}}``).
JOB_FIELDS = "job_fields"
_FETCH = re.compile(r"^/queue/[^/?]+/job(\?|$)")
#: A secret in a query string (``?token=...``, ``&access_token=...``): its value is never written.
_QUERY_SECRET = re.compile(r"([?&](?:access_)?token=)[^&#\s\"']+", re.IGNORECASE)


def level_number(level: str | int) -> int:
    """``"info"`` -> ``logging.INFO`` (names as in the ``log_level`` setting, ``trace`` included)."""
    if isinstance(level, int):
        return level
    try:
        return LEVELS[level.strip().lower()]
    except KeyError:
        raise ValueError(f"{level!r} is not a log level (one of {', '.join(LEVELS)})") from None


def _timestamp(created: float) -> str:
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger: message``, then the traceback if any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return _timestamp(record.created)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``time``, ``level``, ``logger``, a job's line's own fields (see
    :data:`JOB_FIELDS`), ``message`` [, ``exception``]."""

    def format(self, record: logging.LogRecord) -> str:
        item: dict[str, Any] = {
            "time": _timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, JOB_FIELDS, None)
        if isinstance(fields, dict):
            item.update(fields)
        item["message"] = record.getMessage()
        if record.exc_info:
            item["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            item["exception"] = record.exc_text
        return json.dumps(item, ensure_ascii=False, default=str)


class RepeatFilter(logging.Filter):
    """Writes a warning (or worse) at most once per ``window`` seconds, keyed by logger, level and
    message template (so the same warning with another detail counts as a repeat).  The first
    write after the window carries the count of those held back: ``… (repeated 57 times in the
    last minute)``.  A job's line (:data:`JOB_FIELDS`) always passes.  ``clock`` gives seconds
    (injectable for tests)."""

    MAX_KEYS = 1000

    def __init__(self, window: float = REPEAT_WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window = window
        self.clock = clock
        self._seen: dict[tuple[str, int, str], list[float]] = {}  # key -> [written at, held back]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or hasattr(record, JOB_FIELDS):
            return True
        key = (record.name, record.levelno, str(record.msg))
        now = self.clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen[0] < self.window:
                seen[1] += 1
                return False
            if len(self._seen) >= self.MAX_KEYS:
                self._forget(now)
            self._seen[key] = [now, 0]
        if seen is not None and seen[1]:
            record.msg = f"{record.getMessage()} (repeated {int(seen[1])} times {_since(now - seen[0])})"
            record.args = None
        return True

    def _forget(self, now: float) -> None:
        for key in [k for k, (at, _) in self._seen.items() if now - at >= self.window]:
            del self._seen[key]


def _since(elapsed: float) -> str:
    if elapsed < 2 * REPEAT_WINDOW:
        return "in the last minute"
    return f"in the last {int(elapsed)}s"


class HideSecrets(logging.Filter):
    """On the handler, so on every line: a query string's ``token=`` value written as ``[hidden]``
    (a client may put its bearer token there; access lines and errors quote the request's target)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "token=" in message.lower():
            hidden = _QUERY_SECRET.sub(r"\1[hidden]", message)
            if hidden != message:
                record.msg, record.args = hidden, None
        return True


class QuietPolls(logging.Filter):
    """On ``uvicorn.access``: the line of a fetch answered 204 (an idle poll) or of a long-poll
    (``wait=``) is logged at debug; every other request as usual."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not (isinstance(args, tuple) and len(args) == 5):
            return True
        _, method, path, _, status = args
        if method != "GET" or not _FETCH.match(str(path)):
            return True
        if status != 204 and "wait=" not in str(path):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def configure(level: str | int = "info", fmt: str | None = None, stream: IO[str] | None = None) -> None:
    """Set up logging for this process: one handler on the root logger writing to ``stream``
    (stderr) in ``fmt`` (``text`` or ``json``; None: ``$JOBLEDGER_LOG_FORMAT``, else text) at
    ``level``.  Called again, it replaces what it set up before."""
    chosen = (fmt or os.environ.get("JOBLEDGER_LOG_FORMAT") or "text").strip().lower()
    if chosen not in FORMATS:
        raise ValueError(f"{chosen!r} is not a log format (one of {', '.join(FORMATS)})")
    number = level_number(level)
    logging.addLevelName(TRACE, "TRACE")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    handler.addFilter(RepeatFilter())
    handler.addFilter(HideSecrets())
    root.addHandler(handler)
    root.setLevel(number)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logging.getLogger(name).setLevel(number)
    for name in ("httpx2", "httpcore2"):  # a request line each: every poll of an idle queue
        logging.getLogger(name).setLevel(logging.WARNING if number > logging.DEBUG else logging.NOTSET)
    access = logging.getLogger("uvicorn.access")
    for old_filter in [f for f in access.filters if isinstance(f, QuietPolls)]:
        access.removeFilter(old_filter)
    access.addFilter(QuietPolls())

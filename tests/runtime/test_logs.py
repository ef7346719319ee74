"""jobledger.runtime.logs: timestamped, levelled lines or JSON objects; a repeated warning written once
per minute
with its count (the clock injected); idle polls and long-polls moved to debug."""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from collections.abc import Iterator

import pytest

from jobledger.runtime.logs import JsonFormatter, QuietPolls, RepeatFilter, TextFormatter, configure

TIMESTAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def capture(formatter: logging.Formatter, *filters: logging.Filter) -> tuple[logging.Logger, io.StringIO]:
    """A logger of its own writing through one handler (with ``filters``) into a string."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    for f in filters:
        handler.addFilter(f)
    logger = logging.getLogger(f"test.logs.{uuid.uuid4().hex}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    return logger, out


def lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_a_repeated_warning_is_written_once_a_minute_with_its_count() -> None:
    clock = Clock()
    logger, out = capture(TextFormatter(), RepeatFilter(clock=clock))
    for second in range(58):  # once a second for 58 s, each with another detail
        clock.now = 1000.0 + second
        logger.warning("launcher checks skipped: %s", f"Error 111 at try {second}")
    assert len(lines(out)) == 1
    assert lines(out)[0].endswith("launcher checks skipped: Error 111 at try 0")
    clock.now = 1060.0  # a minute after the first was written
    logger.warning("launcher checks skipped: %s", "Error 111 at try 60")
    assert len(lines(out)) == 2
    assert lines(out)[1].endswith(
        "launcher checks skipped: Error 111 at try 60 (repeated 57 times in the last minute)"
    )
    clock.now = 1061.0
    logger.warning("launcher checks skipped: %s", "again")
    assert len(lines(out)) == 2  # quiet again for a minute


def test_other_warnings_and_lower_levels_are_not_held_back() -> None:
    clock = Clock()
    logger, out = capture(TextFormatter(), RepeatFilter(clock=clock))
    for _ in range(3):
        logger.warning("first kind")
        logger.warning("second kind")
        logger.info("an info line")
        logger.error("first kind")  # another level: another warning
    assert [line.split(": ", 1)[1] for line in lines(out)] == [
        "first kind", "second kind", "an info line", "first kind", "an info line", "an info line",
    ]  # fmt: skip


def test_a_warning_that_stops_repeating_is_written_again_without_a_count() -> None:
    clock = Clock()
    logger, out = capture(TextFormatter(), RepeatFilter(clock=clock))
    logger.warning("once")
    clock.now += 120
    logger.warning("once")
    assert [line.split(": ", 1)[1] for line in lines(out)] == ["once", "once"]


def test_text_lines_are_timestamped_and_levelled() -> None:
    logger, out = capture(TextFormatter())
    logger.warning("the %s", "detail")
    assert re.fullmatch(rf"{TIMESTAMP} WARNING {re.escape(logger.name)}: the detail", lines(out)[0])


def test_json_lines_are_one_object_each() -> None:
    logger, out = capture(JsonFormatter())
    logger.info("plain %d", 1)
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        logger.exception("it failed")
    first, second = (json.loads(line) for line in lines(out))  # two lines, though one has a traceback
    assert re.fullmatch(TIMESTAMP, first["time"])
    assert {k: v for k, v in first.items() if k != "time"} == {
        "level": "info", "logger": logger.name, "message": "plain 1",
    }  # fmt: skip
    assert second["level"] == "error" and second["message"] == "it failed"
    assert "ValueError: boom" in second["exception"]


def access(path: str, status: int, method: str = "GET") -> tuple[str, str, str, str, int]:
    return ("127.0.0.1:5000", method, path, "1.1", status)


@pytest.fixture
def access_logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    logger, out = capture(TextFormatter())
    logger.addFilter(QuietPolls())
    yield logger, out


@pytest.mark.parametrize(
    ("path", "status", "method", "quiet"),
    [
        ("/queue/emails/job", 204, "GET", True),  # an idle poll
        ("/queue/emails/job?worker=w1", 204, "GET", True),
        ("/queue/emails/job?wait=30s", 200, "GET", True),  # a long-poll, even when it got a job
        ("/queue/emails/job", 200, "GET", False),  # a job handed out
        ("/queue/emails/job", 201, "POST", False),
        ("/queue/emails/jobs", 204, "GET", False),
        ("/job/1", 204, "PATCH", False),
        ("/queue/emails/job", 404, "GET", False),
    ],
)
def test_idle_polls_and_long_polls_go_to_debug(
    access_logger: tuple[logging.Logger, io.StringIO], path: str, status: int, method: str, quiet: bool
) -> None:
    logger, out = access_logger
    logger.setLevel(logging.INFO)
    logger.info('%s - "%s %s HTTP/%s" %d', *access(path, status, method))
    assert (lines(out) == []) is quiet
    logger.setLevel(logging.DEBUG)
    logger.info('%s - "%s %s HTTP/%s" %d', *access(path, status, method))
    assert lines(out)[-1].split()[1] == ("DEBUG" if quiet else "INFO")


def test_configure_replaces_its_handler_and_takes_the_format_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        monkeypatch.setenv("JOBLEDGER_LOG_FORMAT", "json")
        first, second = io.StringIO(), io.StringIO()
        configure("info", stream=first)
        configure("warning", stream=second)
        logging.getLogger("jobledger.test").warning("hello")
        logging.getLogger("jobledger.test").info("not at warning")
        assert first.getvalue() == ""
        assert [json.loads(line)["message"] for line in second.getvalue().splitlines()] == ["hello"]
        with pytest.raises(ValueError, match="log format"):
            configure("info", "xml")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])

"""Durations and times: parsed from what clients send, written back compactly."""

from __future__ import annotations

import pytest

from ledger.durations import format_ms, format_time, parse_ms, parse_time


@pytest.mark.parametrize(
    ("given", "ms", "written"),
    [
        ("30s", 30_000, "30s"),
        ("1h15m5s", 4_505_000, "1h15m5s"),
        ("3w2d", 1_987_200_000, "3w2d"),
        ("1.5h", 5_400_000, "1h30m"),
        (90, 90_000, "1m30s"),
        (1.5, 1_500, "1.5s"),
        ("0s", 0, "0s"),
        (0, 0, "0s"),
    ],
)
def test_durations_round_trip(given: object, ms: int, written: str) -> None:
    assert parse_ms(given) == ms
    assert format_ms(ms) == written
    assert parse_ms(written) == ms


@pytest.mark.parametrize("bad", ["soon", "", "-5s", -1, True, None, [1], {"s": 1}])
def test_bad_durations_are_refused_with_a_reason(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_ms(bad)


def test_times_are_rfc3339_utc_with_microseconds() -> None:
    assert format_time(1_763_664_762_700) == "2025-11-20T18:52:42.700000Z"
    assert format_time(None) is None
    assert parse_time("2025-11-20T18:52:42.700000Z") == 1_763_664_762_700

"""Durations and times: parsed from what clients send, written back compactly."""

from __future__ import annotations

import pytest

from jobledger.ledger.durations import format_ms, format_time, parse_ms, parse_time


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


#: Durations as Ocypod reads them (humantime): "M" is a month and "m" a minute, a month 30.44 days and
#: a year 365.25 days; Ocypod's own written forms ("2m 15s", "14days 10h 17m 36s") read back.
@pytest.mark.parametrize(
    ("given", "ms"),
    [
        ("1M", 2_630_016_000),
        ("3months", 3 * 2_630_016_000),
        ("1month", 2_630_016_000),
        ("12M", 31_560_192_000),
        ("1y", 31_557_600_000),
        ("7years", 7 * 31_557_600_000),
        ("1year", 31_557_600_000),
        ("1m", 60_000),
        ("100m", 6_000_000),
        ("12min", 720_000),
        ("7hr", 25_200_000),
        ("2days", 172_800_000),
        ("52w", 31_449_600_000),
        ("1week", 604_800_000),
        ("500ms", 500),
        ("31msec", 31),
        ("1500us", 2),  # 1.5 ms: below a millisecond rounds up
        ("1us", 1),
        ("1ns", 1),
        ("0ms", 0),
        ("2h 37min", 9_420_000),
        ("20 min 17 nsec ", 1_200_001),
        ("2m 15s", 135_000),
        ("14days 10h 17m 36s", 1_246_656_000),
        ("1year 2months 3days 4h 5m 6s 7ms", 31_557_600_000 + 2 * 2_630_016_000 + 259_200_000 + 14_706_007),
        ("3h27m", 12_420_000),
    ],
)
def test_durations_mean_what_they_mean_in_ocypod(given: str, ms: int) -> None:
    assert parse_ms(given) == ms


@pytest.mark.parametrize(
    ("given", "ms"),
    [("1:30", 90_000), ("1 minute, 24 secs", 84_000), ("3 dys", 259_200_000), ("1H", 3_600_000),
     ("1.5 hrs", 5_400_000), ("4.1m", 246_000)],
)  # fmt: skip
def test_pytimeparse_forms_stay_accepted(given: str, ms: int) -> None:
    assert parse_ms(given) == ms


def test_month_is_refused_where_it_could_be_read_as_a_minute() -> None:
    with pytest.raises(ValueError, match=r"ambiguous.*month"):
        parse_ms("1M, 5s")  # humantime cannot read the comma; pytimeparse would read M as a minute

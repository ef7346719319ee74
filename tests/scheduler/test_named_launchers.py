"""Named launchers on the scheduler, on a frozen clock: a declared launcher fires, an update keeps or
moves its next firing, pause and resume, a cron expression in a time zone across both changes of
daylight saving time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from freezegun.api import FrozenDateTimeFactory

from jobledger.ledger import commands
from jobledger.ledger.durations import format_time
from jobledger.ledger.launcher_declarations import put
from jobledger.ledger.launchers import LauncherSpec, catch_up, first_at, parse_cron
from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import tick
from tests.scheduler.launcher_support import advance_to, data_of, launched, view
from tests.support.ledger import assert_well_placed, at, put_queue, unchanged


def declare(ledger: Ledger, name: str, **fields: Any) -> tuple[int, str]:
    spec = LauncherSpec.model_validate({"queue": "q", **fields})
    done = ledger.run(put(name, spec, ledger.clock()))
    return done.id, done.outcome


def test_a_declared_launcher_fires_and_an_update_keeps_or_moves_its_next_firing(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    lid, outcome = declare(ledger, "every10", type="@interval", arguments="10s")
    assert outcome == "created"
    advance_to(ledger, frozen, 5)
    assert declare(ledger, "every10", type="@interval", arguments="10s") == (lid, "unchanged")
    assert declare(ledger, "every10", type="@interval", arguments="10s", template={"input": 1}) == (
        lid,
        "updated",
    )
    assert view(ledger, lid)["next_at"] == format_time(at(10))  # same schedule: it goes on
    assert advance_to(ledger, frozen, 10)["launchers"] == [lid]
    [job] = launched(ledger, lid)
    assert view(ledger, lid)["template"] == {"input": 1}
    assert declare(ledger, "every10", type="@interval", arguments="1m") == (lid, "updated")
    assert view(ledger, lid)["next_at"] == format_time(at(70))  # a new schedule: from the update
    assert advance_to(ledger, frozen, 69)["launchers"] == []
    assert advance_to(ledger, frozen, 70)["launchers"] == [lid]
    assert len(launched(ledger, lid)) == 2 and launched(ledger, lid)[0] == job
    assert_well_placed(ledger)


def test_a_paused_launcher_does_not_fire_and_resumes_from_now(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger)
    lid, _ = declare(ledger, "every10", type="@interval", arguments="10s")
    event_lid, _ = declare(ledger, "on-done", type="@event", arguments={"type": "job_completed"})
    assert ledger.run(commands.pause_launcher(lid)) is True
    assert ledger.run(commands.pause_launcher(event_lid)) is True
    with unchanged(ledger):
        assert ledger.run(commands.pause_launcher(lid)) is False
        assert advance_to(ledger, frozen, 3600)["launchers"] == []
    assert_well_placed(ledger)
    next_at = first_at("@interval", "10s", ledger.clock())
    assert ledger.run(commands.resume_launcher(lid, next_at, ("@interval", "10s", None))) is True
    assert view(ledger, lid)["next_at"] == format_time(at(3610))
    assert advance_to(ledger, frozen, 3610)["launchers"] == [lid]
    assert [d["due_at"] for d in data_of(ledger, "launcher_fired")] == [at(3610)]


def test_cron_in_a_time_zone_fires_at_its_local_time_across_the_spring_change(
    ledger: Ledger, frozen: FrozenDateTimeFactory
) -> None:
    """02:30 does not exist on 2030-03-31 in Paris: it fires at 03:00 local (01:00 UTC), then at 02:30
    local again (00:30 UTC, summer time)."""
    frozen.move_to("2030-03-30T12:00:00Z")
    put_queue(ledger)
    lid, _ = declare(ledger, "paris", type="@cron", arguments="30 2 * * *", tz="Europe/Paris")
    fired = []
    for _ in range(2):
        due = view(ledger, lid)["next_at"]
        frozen.move_to(due)
        assert tick(ledger)["launchers"] == [lid]
        fired.append(due)
    assert fired == ["2030-03-31T01:00:00.000000Z", "2030-04-01T00:30:00.000000Z"]


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        ("2030-03-30T12:00:00", ["2030-03-31T01:00:00", "2030-04-01T00:30:00"]),
        # 02:30 comes twice on 2030-10-27 in Paris (summer time, then winter time): it fires at both
        ("2030-10-26T12:00:00", ["2030-10-27T00:30:00", "2030-10-27T01:30:00", "2030-10-28T01:30:00"]),
    ],
)
def test_cron_times_in_a_time_zone_across_both_changes(after: str, expected: list[str]) -> None:
    """The times themselves, one after the other as the scheduler moves a launcher on (catch_up from
    each due time), on the real clock: freezegun's datetimes drop ``fold``, which tells the two 02:30
    of the autumn apart, so a frozen clock cannot show the autumn change."""
    cron = parse_cron("30 2 * * *")
    first = first_at("@cron", cron, ms(after), "Europe/Paris")
    assert first is not None
    times = [first]
    while len(times) < len(expected):
        next_at, missed = catch_up("@cron", cron, times[-1], times[-1], "Europe/Paris")
        assert missed == 0 and next_at is not None
        times.append(next_at)
    assert times == [ms(t) for t in expected]

"""Deadlines kept when due, in real time, with the default check intervals (30 s, 1 m, 5 m): the
scheduler sleeps until the earliest deadline and is woken by the ledger when a nearer one comes, so
each kind of deadline set two seconds out is kept within about a second.  An idle scheduler sends
nothing between its reads, and a busy ledger wakes it at most every WAKE_THROTTLE."""

from __future__ import annotations

import time

import pytest
import redis

from jobledger.ledger.runner import Ledger
from jobledger.scheduler.loop import WAKE_THROTTLE
from tests.support.deadlines import SCENARIOS, lateness_ms, scheduler_running
from tests.support.ledger import create, put_queue
from tests.support.private_redis import PrivateServer

#: "About a second", with room for a loaded machine.
MARGIN_MS = 1500


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_deadline_is_kept_within_a_second_of_its_time(
    redis_url: str, namespace: str, ledger: Ledger, scenario: str
) -> None:
    with scheduler_running(redis_url, namespace):
        time.sleep(0.2)  # the scheduler has read the (empty) due sets and sleeps for the interval
        late = lateness_ms(ledger, SCENARIOS[scenario](ledger))
    assert 0 <= late <= MARGIN_MS, f"{scenario} kept {late} ms after its time"


def test_a_deadline_set_before_the_scheduler_starts_is_kept(
    redis_url: str, namespace: str, ledger: Ledger
) -> None:
    deadline = SCENARIOS["retry delay"](ledger)
    with scheduler_running(redis_url, namespace):
        late = lateness_ms(ledger, deadline)
    assert 0 <= late <= MARGIN_MS


def calls(client: redis.Redis, command: str | None = None) -> int:
    """Commands the server has run (of one kind, or all but INFO itself), from INFO commandstats."""
    stats = client.info("commandstats")
    if command is not None:
        return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))
    return sum(int(s["calls"]) for name, s in stats.items() if name != "cmdstat_info")


def settled(client: redis.Redis, quiet: float = 0.5, timeout: float = 15.0) -> int:
    """The command count once it has not moved for ``quiet`` seconds (the scheduler's start is over)."""
    stop = time.monotonic() + timeout
    count = calls(client)
    while time.monotonic() < stop:
        time.sleep(quiet)
        if (now := calls(client)) == count:
            return count
        count = now
    raise AssertionError(f"the server never went quiet within {timeout}s")


def test_an_idle_scheduler_sends_nothing_between_its_reads(private: PrivateServer) -> None:
    client = redis.Redis.from_url(private.url)
    put_queue(Ledger(client, "idle"), "q")
    with scheduler_running(private.url, "idle"):
        before = settled(client)  # after its first round
        time.sleep(3.0)
        sent = calls(client) - before
    client.close()
    assert sent <= 3, f"an idle scheduler sent {sent} commands in 3 s"


def test_a_busy_ledger_wakes_the_scheduler_at_most_every_throttle_period(private: PrivateServer) -> None:
    client = redis.Redis.from_url(private.url)
    ledger = Ledger(client, "busy")
    put_queue(ledger, "q")
    with scheduler_running(private.url, "busy"):
        time.sleep(1.0)
        before, started = calls(client, "exec"), time.monotonic()
        created = 0
        while time.monotonic() - started < 2.0:
            create(ledger)  # an event each: each wakes the scheduler's subscription
            created += 1
        rounds = (calls(client, "exec") - before) / 3  # a round: the heads and two launcher reads
        elapsed = time.monotonic() - started
    client.close()
    assert created > 100
    assert rounds <= elapsed / WAKE_THROTTLE + 5, f"{rounds} rounds for {created} events in {elapsed:.1f} s"

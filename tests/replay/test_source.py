"""``--until``: an event id or a time becomes the id of the last event it includes, in the stream or
the archive."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from jobledger.blobs.archive import BlobArchive
from jobledger.ledger.durations import format_time
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.replay.source import UntilError, ledger_length, resolve_until
from tests.support.ledger import START_MS
from tests.support.replay import archive, local_archive, stream_ids, workload

STEP = 60_000  # a minute between the workloads


@pytest.fixture
def minutes(client: redis.Redis, namespace: str) -> list[list[str]]:
    """Four workloads a minute apart (by the ledger's clock); the event ids of each."""
    clock = [START_MS]
    ledger = Ledger(client, namespace, clock=lambda: clock[0])
    out: list[list[str]] = []
    for minute in range(4):
        clock[0] = START_MS + minute * STEP
        before = len(stream_ids(client, namespace))
        workload(ledger, jobs=6)
        out.append(stream_ids(client, namespace)[before:])
    return out


def until(client: redis.Redis, namespace: str, text: str, store: BlobArchive | None = None) -> str | None:
    return resolve_until(client, Keys(namespace), text, store)


def check_times(
    client: redis.Redis, namespace: str, minutes: list[list[str]], store: BlobArchive | None = None
) -> None:
    ns = namespace
    assert until(client, ns, format_time(START_MS - 1) or "", store) is None
    for minute, ids in enumerate(minutes):
        at = START_MS + minute * STEP
        assert until(client, ns, format_time(at) or "", store) == ids[-1]
        assert until(client, ns, format_time(at + STEP - 1) or "", store) == ids[-1]
        if minute:
            assert until(client, ns, format_time(at - 1) or "", store) == minutes[minute - 1][-1]
    assert until(client, ns, "2100-01-01T00:00:00+00:00", store) == minutes[-1][-1]


def test_a_time_is_the_last_event_at_or_before_it(
    client: redis.Redis, namespace: str, minutes: list[list[str]]
) -> None:
    check_times(client, namespace, minutes)


def test_an_id_is_the_last_event_at_or_before_it(
    client: redis.Redis, namespace: str, minutes: list[list[str]]
) -> None:
    ids = [i for m in minutes for i in m]
    assert until(client, namespace, ids[5]) == ids[5]
    ms = ids[5].split("-")[0]
    assert until(client, namespace, ms) == max(
        (i for i in ids if i.split("-")[0] == ms), key=lambda i: int(i.split("-")[1])
    )
    assert until(client, namespace, "1-0") is None
    with pytest.raises(UntilError, match="RFC 3339"):
        until(client, namespace, "yesterday")


def test_times_and_ids_reach_into_the_archive(
    client: redis.Redis, redis_url: str, namespace: str, minutes: list[list[str]], tmp_path: Path
) -> None:
    total = ledger_length(client, Keys(namespace))

    store = local_archive(tmp_path / "blobs", namespace)
    archived = archive(redis_url, namespace, store, START_MS + 2 * STEP, segment_events=4)
    assert archived == len(minutes[0]) + len(minutes[1])
    assert ledger_length(client, Keys(namespace)) == total
    check_times(client, namespace, minutes, store)
    assert until(client, namespace, minutes[0][2], store) == minutes[0][2]

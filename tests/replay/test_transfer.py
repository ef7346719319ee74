"""``events export`` / ``events import``: a ledger goes to a file and comes back identical."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from jobledger.ledger.event_lines import LedgerFileError, count_lines
from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.ledger.stream import EventFilter, scan
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import NamespaceNotEmpty
from jobledger.replay.transfer import export_ledger, import_ledger
from tests.support.ledger import put_queue
from tests.support.replay import stream_entries, stream_ids, workload


def test_export_then_import_gives_the_same_stream_and_projections(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    path = tmp_path / "ledger.jsonl"
    seen: list[int] = []
    exported = export_ledger(client, namespace, path, batch=7, progress=seen.append)
    assert exported == client.xlen(Keys(namespace).events) == count_lines(path)
    assert seen[-1] == exported and seen == sorted(seen)
    copy = namespace + "-copy"
    assert import_ledger(client, copy, path, batch=5) == exported
    assert stream_entries(client, copy) == stream_entries(client, namespace)
    assert compare(client, namespace, copy) == []


def test_export_until_an_event_stops_there(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    ids = stream_ids(client, namespace)
    path = tmp_path / "part.jsonl"
    assert export_ledger(client, namespace, path, until=ids[9]) == 10
    import_ledger(client, namespace + "-part", path)
    assert stream_ids(client, namespace + "-part") == ids[:10]


def test_import_refuses_a_namespace_that_is_not_empty(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    path = tmp_path / "ledger.jsonl"
    export_ledger(client, namespace, path)
    before = client.xlen(Keys(namespace).events)
    with pytest.raises(NamespaceNotEmpty):
        import_ledger(client, namespace, path)
    assert client.xlen(Keys(namespace).events) == before


def test_import_refuses_events_out_of_order_before_writing_them(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    path = tmp_path / "ledger.jsonl"
    export_ledger(client, namespace, path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")
    with pytest.raises(LedgerFileError, match="not in ledger order"):
        import_ledger(client, namespace + "-copy", path)
    assert client.exists(Keys(namespace + "-copy").events) == 0


def test_an_interrupted_export_leaves_no_file(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger)
    path = tmp_path / "ledger.jsonl"

    def interrupt(done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export_ledger(client, namespace, path, batch=5, progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_export_and_import_keep_who_caused_each_event(
    client: redis.Redis, ledger: Ledger, namespace: str, tmp_path: Path
) -> None:
    workload(ledger.as_actor("ci-bot"), jobs=6)  # its tick runs as the scheduler
    put_queue(ledger, "local-queue")
    path = tmp_path / "ledger.jsonl"
    export_ledger(client, namespace, path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {line["actor"] for line in lines} == {"ci-bot", "scheduler", "local"}
    copy = namespace + "-copy"
    import_ledger(client, copy, path)
    assert stream_entries(client, copy) == stream_entries(client, namespace)
    assert [e.actor for e in Ledger(client, copy).read(scan(None, 1000, EventFilter())).events] == [
        line["actor"] for line in lines
    ]

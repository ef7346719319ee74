"""The JSON-lines format of export, import and the archive: a line gives back the entry's exact bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobledger.ledger.event_lines import (
    LedgerFileError,
    count_lines,
    entry_line,
    file_partitions,
    header_line,
    parse_line,
    read_entries,
    read_partition_entries,
    write_entries,
)

ENTRY = (
    b"1795322898701-3",
    {b"type": b"job_created", b"v": b"1", b"at": b"1795322898700", b"job": b"7", b"queue": b"mail",
     b"actor": b"ci-bot", b"data": '{"input":"{\\"to\\": \\"ad\u00e9\\"}","tags":["x"]}'.encode()},
)  # fmt: skip


def test_a_line_reads_back_to_the_same_bytes_in_the_same_order() -> None:
    line = entry_line(*ENTRY)
    assert json.loads(line) == {
        "id": "1795322898701-3", "type": "job_created", "v": 1, "at": 1795322898700, "job": 7,
        "queue": "mail", "actor": "ci-bot", "data": '{"input":"{\\"to\\": \\"adé\\"}","tags":["x"]}',
    }  # fmt: skip
    entry_id, fields = parse_line(line)
    assert entry_id == ENTRY[0]
    assert list(fields.items()) == list(ENTRY[1].items())


def test_an_entry_without_an_actor_keeps_none() -> None:
    """Entries written before events recorded their actor have none: the line says null, and a
    line of an older export, without the key at all, reads back the same."""
    old = {k: v for k, v in ENTRY[1].items() if k != b"actor"}
    line = entry_line(ENTRY[0], old)
    assert json.loads(line)["actor"] is None
    assert parse_line(line) == (ENTRY[0], old)
    older = json.dumps({k: v for k, v in json.loads(line).items() if k != "actor"})
    assert parse_line(older) == (ENTRY[0], old)


def test_absent_fields_stay_absent_and_odd_bytes_survive() -> None:
    fields = {b"type": b"queue_deleted", b"v": b"01", b"at": b"12", b"queue": b"q", b"data": b"\xff{}"}
    line = entry_line(b"5-0", fields)
    item = json.loads(line)
    assert item["job"] is None and item["actor"] is None and item["v"] == "01" and "data_b64" in item
    assert parse_line(line) == (b"5-0", fields)


def test_an_unknown_field_is_refused_rather_than_dropped() -> None:
    with pytest.raises(LedgerFileError, match="extra"):
        entry_line(b"1-0", {**ENTRY[1], b"extra": b"x"})


@pytest.mark.parametrize("line", ["not json", '{"id": "1-0"}', '{"id": "1-0", "type": "t", "v": 1}'])
def test_a_bad_line_names_where_it_is(line: str) -> None:
    with pytest.raises(LedgerFileError, match=r"file\.jsonl:3"):
        parse_line(line, "file.jsonl:3")


def test_files_are_read_in_batches_in_order(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    entries = [(f"{i}-0".encode(), ENTRY[1]) for i in range(1, 6)]
    with path.open("w", encoding="utf-8") as handle:
        assert write_entries(handle, entries) == 5
        handle.write("\n")
    batches = list(read_entries(path, batch=2))
    assert [len(b) for b in batches] == [2, 2, 1]
    assert [e for b in batches for e in b] == entries


def test_a_split_ledgers_file_names_its_count_and_each_events_partition(tmp_path: Path) -> None:
    path = tmp_path / "split.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(header_line(3) + "\n")
        write_entries(handle, [ENTRY, ENTRY], partition=0)
        write_entries(handle, [ENTRY], partition=2)
    assert json.loads(path.read_text().splitlines()[3])["partition"] == 2
    assert file_partitions(path) == 3 and count_lines(path) == 3
    assert [(p, len(entries)) for p, entries in read_partition_entries(path, batch=5)] == [(0, 2), (2, 1)]
    assert [len(entries) for entries in read_entries(path)] == [2, 1]  # the header is no event

    with path.open("a", encoding="utf-8") as handle:
        write_entries(handle, [ENTRY], partition=3)
    with pytest.raises(LedgerFileError, match=r":5: partition 3 of a ledger of 3 partition"):
        list(read_partition_entries(path))


def test_a_file_of_one_partition_has_no_header_and_no_partitions(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        write_entries(handle, [ENTRY])
    assert "partition" not in path.read_text()
    assert file_partitions(path) == 1 and count_lines(path) == 1
    with path.open("a", encoding="utf-8") as handle:
        write_entries(handle, [ENTRY], partition=1)
    with pytest.raises(LedgerFileError, match="partition 1 of a ledger of 1 partition"):
        list(read_partition_entries(path))

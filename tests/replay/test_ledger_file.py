"""The JSON-lines format of export, import and the archive: a line gives back the entry's exact bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobledger.replay.ledger_file import LedgerFileError, entry_line, parse_line, read_entries, write_entries

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

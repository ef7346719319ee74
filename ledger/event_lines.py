"""The ledger as JSON lines: one event per line, the format of ``events export`` / ``import`` and of
the archive's segment files.

A line is ``{"id", "type", "v", "at", "job", "queue", "actor", "data"}``: the stream entry's fields
as they are stored (``job`` / ``queue`` / ``actor`` null where the entry has none: an entry written
before events recorded their actor has none, and keeps none), ``data`` the event's JSON *text*,
not decoded, so that writing a line and reading it back gives the entry's exact bytes.  ``v``,
``at`` and ``job`` are JSON numbers when the stored text is a plain integer (always, for entries
the ledger writes) and strings otherwise; data that is not valid UTF-8 (never written by jobledger)
travels base64-encoded as ``data_b64``.  Everything here works on raw entries, the
``(id, {field: value})`` pairs of bytes that XRANGE returns.

The export of a ledger split into partitions begins with a header line, ``{"partitions": N}``, and
each of its lines names the partition whose stream holds the event (``"partition": p``), the lines
of each partition together, in partition order; a ledger of one partition has neither.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

#: One stream entry as XRANGE returns it: its id and its fields, as bytes.
RawEntry = tuple[bytes, dict[bytes, bytes]]

#: The fields of an entry, in the order the ledger writes them (``ledger/lua/lib/emit.lua``).
FIELDS = ("type", "v", "at", "job", "queue", "actor", "data")
_NUMERIC = ("v", "at", "job")
_OPTIONAL = ("job", "queue", "actor")


class LedgerFileError(ValueError):
    """A line that is not an event of this format; the message names the line."""


def _b(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _number_or_text(raw: bytes) -> int | str:
    """An integer when the stored text is exactly one, so it reads back to the same bytes."""
    text = raw.decode()
    if text.isascii() and text.lstrip("-").isdigit() and str(int(text)) == text:
        return int(text)
    return text


def entry_line(entry_id: Any, fields: dict[Any, Any], partition: int | None = None) -> str:
    """One raw entry as a JSON line (no newline), naming its ``partition`` if given.  Raises
    :class:`LedgerFileError` for an entry with a field outside :data:`FIELDS`, which this format
    could not carry back."""
    f = {_b(k).decode(): _b(v) for k, v in fields.items()}
    unknown = set(f) - set(FIELDS)
    if unknown:
        raise LedgerFileError(f"event {_b(entry_id).decode()} has fields {sorted(unknown)} the format lacks")
    line: dict[str, Any] = {"id": _b(entry_id).decode()}
    for name in FIELDS[:-1]:
        raw = f.get(name)
        line[name] = None if raw is None else _number_or_text(raw) if name in _NUMERIC else raw.decode()
    data = f.get("data", b"")
    try:
        line["data"] = data.decode()
    except UnicodeDecodeError:
        line["data_b64"] = base64.b64encode(data).decode()
    if partition is not None:
        line["partition"] = partition
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def header_line(partitions: int) -> str:
    """The first line of the export of a ledger split into ``partitions``."""
    return json.dumps({"partitions": partitions}, separators=(",", ":"))


def _header(line: str) -> int | None:
    """The partition count a line declares, if it is the header."""
    try:
        item = json.loads(line)
    except ValueError:
        return None
    if isinstance(item, dict) and "id" not in item and isinstance(item.get("partitions"), int):
        return int(item["partitions"])
    return None


def parse_line(line: str, where: str = "line") -> RawEntry:
    """A JSON line back to the raw entry it was written from, fields in the ledger's order."""
    return _parse(line, where)[1]


def _parse(line: str, where: str) -> tuple[int, RawEntry]:
    """A JSON line back to the partition it names (0 when none) and its raw entry."""
    try:
        item = json.loads(line)
        partition = item.get("partition", 0)
        if not isinstance(partition, int) or partition < 0:
            raise ValueError(f"partition {partition!r}")
        fields: dict[bytes, bytes] = {}
        for name in FIELDS[:-1]:
            value = item.get(name)
            if value is None:
                if name in _OPTIONAL:
                    continue
                raise KeyError(name)
            fields[name.encode()] = str(value).encode()
        if "data_b64" in item:
            fields[b"data"] = base64.b64decode(item["data_b64"])
        else:
            fields[b"data"] = item["data"].encode()
        return partition, (str(item["id"]).encode(), fields)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LedgerFileError(f"{where}: not an event line ({exc}): {line[:120]!r}") from None


def write_entries(handle: IO[str], entries: Iterable[RawEntry], partition: int | None = None) -> int:
    """Append entries to an open text file, one line each (naming their ``partition`` if given);
    how many."""
    count = 0
    for entry_id, fields in entries:
        handle.write(entry_line(entry_id, fields, partition) + "\n")
        count += 1
    return count


def file_partitions(path: Path) -> int:
    """How many partitions the ledger of a file was split into (its header's count; 1 without one)."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return _header(line) or 1
    return 1


def read_partition_entries(path: Path, batch: int = 2000) -> Iterator[tuple[int, list[RawEntry]]]:
    """The entries of a JSON-lines file, in file order, ``batch`` at most at a time, each batch with
    the partition all its entries belong to (0 in a file of one partition).  A line naming a
    partition the header does not have is refused."""
    out: list[RawEntry] = []
    count, current, first = 1, 0, True
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            if first:
                first = False
                declared = _header(line)
                if declared is not None:
                    count = declared
                    continue
            partition, entry = _parse(line, where)
            if partition >= count:
                raise LedgerFileError(f"{where}: partition {partition} of a ledger of {count} partition(s)")
            if out and (partition != current or len(out) == batch):
                yield current, out
                out = []
            current = partition
            out.append(entry)
    if out:
        yield current, out


def read_entries(path: Path, batch: int = 2000) -> Iterator[list[RawEntry]]:
    """The entries of a JSON-lines file, in file order, ``batch`` at most at a time (blank lines
    and the header skipped)."""
    for _, entries in read_partition_entries(path, batch):
        yield entries


def count_lines(path: Path) -> int:
    """How many events a file holds (its non-blank lines but a header), for progress totals."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip()) - (file_partitions(path) > 1)

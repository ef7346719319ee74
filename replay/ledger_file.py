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


def entry_line(entry_id: Any, fields: dict[Any, Any]) -> str:
    """One raw entry as a JSON line (no newline).  Raises :class:`LedgerFileError` for an entry
    with a field outside :data:`FIELDS`, which this format could not carry back."""
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
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def parse_line(line: str, where: str = "line") -> RawEntry:
    """A JSON line back to the raw entry it was written from, fields in the ledger's order."""
    try:
        item = json.loads(line)
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
        return str(item["id"]).encode(), fields
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LedgerFileError(f"{where}: not an event line ({exc}): {line[:120]!r}") from None


def write_entries(handle: IO[str], entries: Iterable[RawEntry]) -> int:
    """Append entries to an open text file, one line each; how many."""
    count = 0
    for entry_id, fields in entries:
        handle.write(entry_line(entry_id, fields) + "\n")
        count += 1
    return count


def read_entries(path: Path, batch: int = 2000) -> Iterator[list[RawEntry]]:
    """The entries of a JSON-lines file, in file order, ``batch`` at a time (blank lines skipped)."""
    out: list[RawEntry] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            out.append(parse_line(line, f"{path}:{number}"))
            if len(out) == batch:
                yield out
                out = []
    if out:
        yield out


def count_lines(path: Path) -> int:
    """How many events a file holds (its non-blank lines), for progress totals."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())

"""An event's leaf: the canonical JSON (RFC 8785) of ``{id, type, v, at, job, queue, actor, data}``.

The leaf is made from the stream entry *as stored*: ``v`` is the version it was written at and
``data`` the JSON value of its stored text (not upcast, no defaults filled in), so a later version
of an event type or a new upcaster never changes an old leaf.  The fields read as
:func:`jobledger.ledger.events.decode_entry` reads them: ``job`` an integer and ``queue`` a string,
each null when the entry has none (always present, so every leaf has the same eight keys); ``actor``
``local`` when the entry has none (written before actors); ``v`` 1 when absent; ``at`` integer
milliseconds; ``id`` the stream id.

The entry must be well formed, or it has no leaf (:class:`Malformed`): its numbers are decimal
integers without sign, padding or leading zeros, it has no field that no event has, and its data is
a JSON object without a key twice.  :func:`parse_leaf` is the auditor's side: leaf bytes back into
their fields, accepted only in their one canonical form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobledger.ledger.seal.canonical import MAX_INT, dumps, loads, loads_plain, plain_text, quote
from jobledger.ledger.seal.errors import Malformed
from jobledger.ledger.seal.hashes import leaf_hash

#: The actor of an entry that has none (``jobledger.ledger.events.LOCAL``; a test holds them equal).
LOCAL = "local"
FIELDS = frozenset({"type", "v", "at", "job", "queue", "actor", "data"})
KEYS = ("actor", "at", "data", "id", "job", "queue", "type", "v")

_ID = re.compile(r"(0|[1-9][0-9]*)-(0|[1-9][0-9]*)")
_NAMES: dict[Any, str] = {**{name: name for name in FIELDS}, **{name.encode(): name for name in FIELDS}}


@dataclass(frozen=True)
class Leaf:
    """An event as its leaf holds it, with the leaf's bytes."""

    id: str
    type: str
    v: int
    at: int
    job: int | None
    queue: str | None
    actor: str
    data: dict[str, Any]
    raw: bytes

    @property
    def hash(self) -> bytes:
        return leaf_hash(self.raw)


def stream_order(event_id: str) -> tuple[int, int]:
    """A stream id as the pair it sorts by."""
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq)


def leaf_bytes(entry_id: str | bytes, fields: Mapping[Any, Any]) -> bytes:
    """The leaf bytes of a raw stream entry (XRANGE's id and fields, as bytes or str).  A sealer
    makes one of every event, so nothing here is worded unless the entry is refused."""
    event_id = _text(entry_id, "the id")
    if not _ID.fullmatch(event_id):
        raise Malformed(f"{event_id!r:.40} is not a stream id")
    entry = _entry(event_id, fields)
    try:
        data, plain = loads_plain(entry.get("data") or "{}", "the data")
        if not isinstance(data, dict):
            raise Malformed("the data is not a JSON object")
        job = entry.get("job")
        leaf = {
            "id": event_id,
            "type": entry["type"],
            "v": _number(entry.get("v", "1"), "v", least=1),
            "at": _number(entry["at"], "at"),
            "job": _number(job, "job") if job else None,
            "queue": entry.get("queue") or None,
            "actor": entry.get("actor") or LOCAL,
            "data": data,
        }
    except Malformed as error:
        raise Malformed(f"entry {event_id}: {error}") from None
    return _plain_leaf(leaf) if plain else dumps(leaf)


def _entry(event_id: str, fields: Mapping[Any, Any]) -> dict[str, str]:
    """The entry's fields by name, as text; only the fields an event has, and type and at among them."""
    try:
        entry = {_NAMES[key]: value.decode("utf-8") for key, value in fields.items()}  # as XRANGE gives
    except (KeyError, UnicodeDecodeError, AttributeError):
        entry = _entry_worded(event_id, fields)
    if not entry.get("type") or "at" not in entry:
        raise Malformed(f"entry {event_id} has no type or no at")
    return entry


def _entry_worded(event_id: str, fields: Mapping[Any, Any]) -> dict[str, str]:
    """:func:`_entry` field by field: text or bytes, and what is wrong with the first that is not."""
    entry: dict[str, str] = {}
    for key, value in fields.items():
        name = _NAMES.get(key)
        if name is None:
            raise Malformed(f"entry {event_id} has a field no event has: {key!r:.40}")
        entry[name] = _text(value, f"the {name} of entry {event_id}")
    return entry


def _plain_leaf(leaf: dict[str, Any]) -> bytes:
    """A leaf whose data is plain, written key by key in their sorted order (what :func:`dumps` writes
    of it, a test holds): a sealer makes one for every event."""
    job, queue = leaf["job"], leaf["queue"]
    text = (
        f'{{"actor":{quote(leaf["actor"])},"at":{leaf["at"]},"data":{plain_text(leaf["data"])},'
        f'"id":"{leaf["id"]}","job":{"null" if job is None else job},'
        f'"queue":{"null" if queue is None else quote(queue)},"type":{quote(leaf["type"])},"v":{leaf["v"]}}}'
    )
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise Malformed(f"entry {leaf['id']} holds text that is not UTF-8") from error


def parse_leaf(data: bytes | str) -> Leaf:
    """The event a leaf's bytes hold; :class:`Malformed` unless they are a leaf, canonically written."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    value = loads(raw, "the leaf")
    if not isinstance(value, dict) or sorted(value) != list(KEYS):
        raise Malformed(f"a leaf is an object of exactly the keys {', '.join(KEYS)}")
    _check_leaf(value)
    if dumps(value) != raw:
        raise Malformed(f"the leaf of {value['id']} is not in canonical JSON (RFC 8785)")
    return Leaf(raw=raw, **value)


def _check_leaf(value: dict[str, Any]) -> None:
    checks = {
        "id": isinstance(value["id"], str) and _ID.fullmatch(value["id"]) is not None,
        "type": isinstance(value["type"], str) and value["type"] != "",
        "v": _is_int(value["v"]) and value["v"] >= 1,
        "at": _is_int(value["at"]) and value["at"] >= 0,
        "job": value["job"] is None or (_is_int(value["job"]) and value["job"] >= 0),
        "queue": value["queue"] is None or (isinstance(value["queue"], str) and value["queue"] != ""),
        "actor": isinstance(value["actor"], str) and value["actor"] != "",
        "data": isinstance(value["data"], dict),
    }
    wrong = [name for name, ok in checks.items() if not ok]
    if wrong:
        raise Malformed(f"a leaf's {', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} not of its type")


def _is_int(value: object) -> bool:
    return type(value) is int and value <= MAX_INT


def _number(text: str, what: str, least: int = 0) -> int:
    if text.isascii() and text.isdigit() and (text[0] != "0" or text == "0"):
        number = int(text)
        if least <= number <= MAX_INT:
            return number
    raise Malformed(f"{what} is not a decimal integer from {least} to 2**53 - 1: {text!r:.40}")


def _text(value: object, what: str) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Malformed(f"{what} is not UTF-8") from error
    if not isinstance(value, str):
        raise Malformed(f"{what} is not text: {value!r:.40}")
    return value

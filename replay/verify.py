"""``replay verify``: rebuild the projections into a scratch namespace and compare them, key by key,
with the live ones, while the server goes on taking writes.

How a live ledger is compared as of one point: every key is compared at an exact position of the
ledger.  First the scratch namespace is rebuilt from every event there is.  Then the keys of both
namespaces are compared in chunks; for each chunk, one script (``read_keys``) reads the live keys
*and* the id of the newest event, in one atomic step, so what it read is exactly the fold of the
ledger up to that id (a command appends and applies in one step too).  The scratch namespace is
caught up to exactly that id by applying the events it has not seen yet, then its copy of the
same keys is read and compared.  A difference is therefore never an artefact of writes that happen
meanwhile: it is a projection that differs from what its events say.  Keys created after the scan
of the key names are not compared (the run reports how many keys it compared); each chunk costs one
short script on the live server, proportional to the size of its keys.

The scratch namespace is always removed, also after an error or an interrupt.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import redis

from jobledger.ledger.keys import Keys, former_key
from jobledger.ledger.runner import generation_of, live_keys
from jobledger.ledger.scripts import source
from jobledger.ledger.slot_routing import in_slot_of
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveSource, archive_key
from jobledger.replay.progress import Callback
from jobledger.replay.rebuild import Applier, ensure_empty, fold

CHUNK = 200
#: (type, content): content normalised so that equal projections compare equal (see _content).
Value = tuple[str, Any]


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _text(value: Any) -> str:
    """A stored value for a person to read: text where it is text, else its repr."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return repr(value)
    return str(value)


@dataclass(frozen=True)
class KeyDifference:
    """One key whose live content differs from what replaying the ledger gives."""

    key: str  # without the namespace prefix
    expected: Value  # from replaying the ledger
    found: Value  # in the live projections
    position: str  # the event id both sides were read at

    def details(self) -> list[str]:
        """What differs, in lines a person can act on: field by field for hashes, member by member
        for sets and sorted sets, item by item for lists."""
        (etype, exp), (ftype, got) = self.expected, self.found
        if ftype == "none":
            return [
                f"missing: replay gives a {etype} ({_size(self.expected)}), the live projections have none"
            ]
        if etype == "none":
            return [f"unexpected: the live projections have a {ftype} ({_size(self.found)}) not replayed"]
        if etype != ftype:
            return [f"type: expected a {etype}, found a {ftype}"]
        return _DETAILS[etype](exp, got)

    def __str__(self) -> str:
        return "\n".join([f"{self.key} (as of event {self.position}):", *("  " + d for d in self.details())])


def _size(value: Value) -> str:
    kind, content = value
    if kind == "string":
        return f"value {_text(content)!r}"
    return f"{len(content)} {'fields' if kind == 'hash' else 'items' if kind == 'list' else 'members'}"


def _hash_details(exp: dict[bytes, bytes], got: dict[bytes, bytes]) -> list[str]:
    lines = []
    for name in sorted(exp.keys() | got.keys()):
        if name not in got:
            lines.append(f"field {_text(name)}: expected {_text(exp[name])!r}, missing")
        elif name not in exp:
            lines.append(f"field {_text(name)}: not expected, found {_text(got[name])!r}")
        elif exp[name] != got[name]:
            lines.append(f"field {_text(name)}: expected {_text(exp[name])!r}, found {_text(got[name])!r}")
    return lines


def _set_details(exp: list[bytes], got: list[bytes]) -> list[str]:
    missing, extra = sorted(set(exp) - set(got)), sorted(set(got) - set(exp))
    return [f"member {_text(m)}: expected, missing" for m in missing] + [
        f"member {_text(m)}: not expected, found" for m in extra
    ]


def _zset_details(exp: list[tuple[bytes, bytes]], got: list[tuple[bytes, bytes]]) -> list[str]:
    e, g = dict(exp), dict(got)
    lines = []
    for member in sorted(e.keys() | g.keys()):
        if member not in g:
            lines.append(f"member {_text(member)}: expected with score {_text(e[member])}, missing")
        elif member not in e:
            lines.append(f"member {_text(member)}: not expected, found with score {_text(g[member])}")
        elif e[member] != g[member]:
            lines.append(
                f"member {_text(member)}: expected score {_text(e[member])}, found {_text(g[member])}"
            )
    return lines or ["members in another order"]


def _list_details(exp: list[bytes], got: list[bytes]) -> list[str]:
    lines = [f"length: expected {len(exp)}, found {len(got)}"] if len(exp) != len(got) else []
    for index in range(max(len(exp), len(got))):
        e = _text(exp[index]) if index < len(exp) else "(none)"
        g = _text(got[index]) if index < len(got) else "(none)"
        if e != g:
            lines.append(f"item {index}: expected {e!r}, found {g!r}")
            if len(lines) >= 5:
                lines.append("...")
                break
    return lines


def _string_details(exp: bytes, got: bytes) -> list[str]:
    return [f"value: expected {_text(exp)!r}, found {_text(got)!r}"]


_DETAILS: dict[str, Any] = {
    "hash": _hash_details,
    "set": _set_details,
    "zset": _zset_details,
    "list": _list_details,
    "string": _string_details,
}


def _content(kind: str, flat: list[Any]) -> Any:
    """``read_keys``' reply for one key, in a form that compares equal exactly when the keys are."""
    if kind == "string":
        return flat[0] if flat else None
    if kind == "hash":
        return dict(zip(flat[::2], flat[1::2], strict=True))
    if kind == "set":
        return sorted(flat)
    if kind == "zset":
        return list(zip(flat[::2], flat[1::2], strict=True))
    return list(flat)


@dataclass(frozen=True)
class Reading:
    """Keys of one namespace read in one atomic step, and the ledger position they were read at."""

    newest: str | None  # newest event id in the stream
    archived: str | None  # archived up to
    values: dict[str, Value]

    @property
    def position(self) -> str | None:
        """The id of the last event folded into what was read."""
        return self.newest or self.archived


class GenerationMoved(Exception):
    """An online rebuild switched the live projections to another generation during the run."""


def read_keys(client: redis.Redis, script: Any, keys: Keys, names: list[str]) -> Reading:
    """``names`` (relative keys) of ``keys``' generation with the position, in one atomic script;
    GenerationMoved if that generation is no longer the live one."""
    reply = script(keys=[keys.ledger_prefix, archive_key(keys), *(keys.prefix + n for n in names)])
    if generation_of(reply[2]) != keys.generation:
        raise GenerationMoved(
            f"the live projections moved to generation {generation_of(reply[2])} while verifying "
            f"generation {keys.generation} (an online rebuild swapped them): run verify again"
        )
    values = {
        n: (_s(kind), _content(_s(kind), flat)) for n, (kind, flat) in zip(names, reply[3:], strict=True)
    }
    return Reading(_s(reply[0]) or None, _s(reply[1]) or None, values)


@dataclass
class Verification:
    """What a verify run did and found."""

    events: int = 0  # events applied to the scratch namespace, catch-ups included
    keys: int = 0  # keys compared
    first: str | None = None  # ledger position of the first comparison
    last: str | None = None  # ... and of the last
    differences: list[KeyDifference] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.differences

    def outdated_layout(self) -> str | None:
        """When some differences are keys named as an earlier version named them: what that means
        and what to do, for a person; None otherwise."""
        moved = [(d.key, now) for d in self.differences if (now := former_key(d.key)) is not None]
        if not moved:
            return None
        example, now = moved[0]
        return (
            f"{len(moved)} of the differing keys are named as an earlier jobledger named them "
            f"(e.g. {example}, now {now}): these projections were built under the old key layout.  "
            "`jobledger replay rebuild --swap` rebuilds them under the new layout and moves the server "
            "onto it, online; run verify again after."
        )


def scratch_name(namespace: str) -> str:
    """A fresh name for the scratch namespace, in the ledger's Cluster slot (so its node is the
    ledger's)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return in_slot_of(f"{namespace}-verify-{stamp}-{uuid.uuid4().hex[:6]}", namespace)


def drop_namespace(client: redis.Redis, namespace: str) -> int:
    """Remove every key of a namespace (UNLINK in batches); how many."""
    removed = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=Keys(namespace).pattern(), count=1000):
        batch.append(key)
        if len(batch) == 500:
            removed += int(client.unlink(*batch))
            batch = []
    if batch:
        removed += int(client.unlink(*batch))
    return removed


def _names(client: redis.Redis, keys: Keys) -> set[str]:
    rels = (_s(k)[len(keys.prefix) :] for k in client.scan_iter(match=keys.pattern(), count=1000))
    return {rel for rel in rels if keys.owns(rel)}


def _chunks(names: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(names), size):
        yield names[i : i + size]


class _Run:
    """One verification: the scratch namespace, its applier, and how far it has been folded."""

    def __init__(
        self, client: redis.Redis, namespace: str, scratch: str, batch: int, archive: ArchiveSource | None
    ) -> None:
        self.client, self.namespace, self.scratch, self.batch = client, namespace, scratch, batch
        self.archive = archive
        self.live = live_keys(client, namespace)  # the generation verified, fixed for the run
        self.applier = Applier(client, scratch)
        self.reader = client.register_script(source("read_keys"))
        self.position: str | None = None
        self.result = Verification()

    def catch_up(self, until: str | None, progress: Callback | None = None) -> None:
        """Fold the events after the scratch's position up to ``until`` (to the end when None)."""
        if until is not None and self.position is not None and id_key(until) <= id_key(self.position):
            return
        done = self.result.events

        def report(n: int) -> None:
            if progress:
                progress(done + n)

        folded = fold(self.client, self.namespace, self.applier, self.position, until, self.batch, report,
                      self.archive)  # fmt: skip
        self.result.events += folded.count
        self.position = folded.last_id or self.position

    def compare(self, names: list[str]) -> None:
        """Compare ``names`` at the position the live read happened at."""
        live = read_keys(self.client, self.reader, self.live, names)
        at = live.position
        if at is not None:  # None: the ledger was empty then, as the scratch namespace still is
            self.catch_up(at)
        rebuilt = read_keys(self.client, self.reader, Keys(self.scratch), names)
        self.result.first = self.result.first or at
        self.result.last = at
        self.result.keys += len(names)
        for name in names:
            if live.values[name] != rebuilt.values[name]:
                diff = KeyDifference(name, rebuilt.values[name], live.values[name], at or "(empty ledger)")
                self.result.differences.append(diff)


def verify(
    client: redis.Redis,
    namespace: str,
    scratch: str | None = None,
    batch: int = 2000,
    chunk: int = CHUNK,
    progress: Callback | None = None,
    archive: ArchiveSource | None = None,
) -> Verification:
    """Verify the live projections of ``namespace`` against its ledger (see the module docstring),
    its archived events read through ``archive``.
    ``progress`` receives the number of events applied to the scratch namespace so far."""
    scratch = scratch or scratch_name(namespace)
    ensure_empty(client, Keys(scratch))
    started = time.monotonic()
    try:
        run = _Run(client, namespace, scratch, batch, archive)
        run.catch_up(None, progress)
        names = sorted(_names(client, run.live) | _names(client, Keys(scratch)))
        for part in _chunks(names, chunk):
            run.compare(part)
        run.result.seconds = time.monotonic() - started
        return run.result
    finally:
        drop_namespace(client, scratch)

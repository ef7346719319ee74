"""A job's receipt: its events with their inclusion proofs against one signed checkpoint, checked
with the log's public key and nothing else.

The receipt (JSON)::

    {"receipt": 1, "job": 42, "origin": "jobledger/prod",
     "key": {"name": "jobledger/prod", "id": "c74f20a3"},
     "checkpoint": "<the signed note>",
     "events": [{"index": ..., "size": ..., "leaf": "...", "hashes": [...]}, ...]}

It names the key but never carries it: a receipt that brought its own key would prove nothing.
Checking it (:func:`verify_receipt`) needs the auditor's copy of the verifier key (or keys, across a
rotation), and says which events are proven, or the first thing that fails and where.  It proves
that each event is in the log at its place; it cannot prove that the job has no other event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jobledger.ledger.seal.canonical import loads
from jobledger.ledger.seal.checkpoints import Checkpoint, open_checkpoint
from jobledger.ledger.seal.errors import Malformed, ProofFailed, ReceiptFailed, SignatureFailed
from jobledger.ledger.seal.keys import VerifierKey, parse_verifier
from jobledger.ledger.seal.leaves import Leaf, parse_leaf, stream_order
from jobledger.ledger.seal.proof_json import InclusionProof
from jobledger.ledger.seal.proofs import NodeSource

VERSION = 1
MAX_EVENTS = 100_000
_KEYS = {"receipt", "job", "origin", "key", "checkpoint", "events"}


@dataclass(frozen=True)
class ProvenEvent:
    """An event a receipt proves: what its leaf holds, and its place in the log."""

    leaf: Leaf
    index: int


@dataclass(frozen=True)
class ReceiptCheck:
    """What a receipt proved: the job, the checkpoint, the key that signed it, and the events."""

    job: int
    checkpoint: Checkpoint
    key: VerifierKey
    events: tuple[ProvenEvent, ...]


def build_receipt(
    job: int, note: str, key: VerifierKey, events: Sequence[tuple[bytes, int]], nodes: NodeSource
) -> dict[str, Any]:
    """The receipt of ``job`` from its events' ``(leaf bytes, index)`` (in stream order, each below
    the checkpoint's size), the checkpoint ``note`` signed by ``key``, and the tree's node source at
    that checkpoint's size; checked before it is handed out."""
    checkpoint = open_checkpoint(note, [key]).checkpoint
    receipt = {
        "receipt": VERSION,
        "job": job,
        "origin": checkpoint.origin,
        "key": {"name": key.name, "id": f"{key.id:08x}"},
        "checkpoint": note,
        "events": [
            InclusionProof.make(leaf, index, checkpoint.size, nodes).to_json() for leaf, index in events
        ],
    }
    verify_receipt(receipt, [key], checkpoint.origin)
    return receipt


def verify_receipt(
    receipt: object, keys: str | VerifierKey | Sequence[str | VerifierKey], origin: str | None = None
) -> ReceiptCheck:
    """Check ``receipt`` (its JSON text, or the value) with the verifier key(s) ``keys`` and, if
    given, that it is of the log ``origin``; :class:`ReceiptFailed` says what failed and where."""
    value = _parse(receipt)
    key = _named_key(value["key"], _keys(keys))
    checkpoint = _checkpoint(value["checkpoint"], key, value["origin"], origin)
    events: list[ProvenEvent] = []
    for position, proof in enumerate(value["events"]):
        event = _event(proof, position, checkpoint, value["job"])
        if events and not _follows(events[-1], event):
            raise ReceiptFailed(
                "order", f"event {event.leaf.id} is not after {events[-1].leaf.id}", event.leaf.id
            )
        events.append(event)
    return ReceiptCheck(value["job"], checkpoint, key, tuple(events))


def _parse(receipt: object) -> dict[str, Any]:
    try:
        value = loads(receipt, "the receipt") if isinstance(receipt, str | bytes) else receipt
    except Malformed as error:
        raise ReceiptFailed("malformed", str(error)) from error
    if not isinstance(value, dict) or set(value) != _KEYS:
        raise ReceiptFailed("malformed", f"a receipt is an object of exactly {', '.join(sorted(_KEYS))}")
    job, events, key = value["job"], value["events"], value["key"]
    if value["receipt"] != VERSION or type(value["receipt"]) is not int:
        raise ReceiptFailed("malformed", f"not a receipt of version {VERSION}: {value['receipt']!r:.20}")
    if (
        type(job) is not int
        or not isinstance(value["origin"], str)
        or not isinstance(value["checkpoint"], str)
    ):
        raise ReceiptFailed("malformed", "a receipt's job is an integer, its origin and checkpoint strings")
    if not isinstance(events, list) or not 0 < len(events) <= MAX_EVENTS:
        raise ReceiptFailed("malformed", f"a receipt has from 1 to {MAX_EVENTS} events")
    if (
        not isinstance(key, dict)
        or set(key) != {"name", "id"}
        or not all(isinstance(v, str) for v in key.values())
    ):
        raise ReceiptFailed("malformed", "a receipt's key is {'name': ..., 'id': 8 hex digits}")
    return value


def _keys(keys: str | VerifierKey | Sequence[str | VerifierKey]) -> list[VerifierKey]:
    given = [keys] if isinstance(keys, str | VerifierKey) else list(keys)
    return [k if isinstance(k, VerifierKey) else parse_verifier(k) for k in given]


def _named_key(named: dict[str, str], keys: list[VerifierKey]) -> VerifierKey:
    """The given key the receipt names."""
    for key in keys:
        if key.name == named["name"] and f"{key.id:08x}" == named["id"]:
            return key
    given = ", ".join(f"{k.name}+{k.id:08x}" for k in keys) or "none"
    raise ReceiptFailed(
        "key", f"the receipt is signed by key {named['name']}+{named['id']:.8}; the key given is {given}"
    )


def _checkpoint(note: str, key: VerifierKey, named: str, origin: str | None) -> Checkpoint:
    try:
        checkpoint = open_checkpoint(note, [key]).checkpoint
    except SignatureFailed as error:
        raise ReceiptFailed("signature", f"the checkpoint's signature: {error}") from error
    except Malformed as error:
        raise ReceiptFailed("malformed", f"the checkpoint: {error}") from error
    for expected in (named, origin):
        if expected is not None and checkpoint.origin != expected:
            raise ReceiptFailed("origin", f"the checkpoint is of {checkpoint.origin}, not of {expected}")
    return checkpoint


def _event(proof: object, position: int, checkpoint: Checkpoint, job: int) -> ProvenEvent:
    """One event of the receipt, proven, or the reason it is not (named by its id once it has one)."""
    try:
        parsed = InclusionProof.from_json(proof)
    except Malformed as error:
        raise ReceiptFailed("malformed", f"event {position}: {error}", str(position)) from error
    try:
        leaf = parse_leaf(parsed.leaf)
    except Malformed as error:
        raise ReceiptFailed("leaf", f"event {position}: {error}", str(position)) from error
    try:
        parsed.check(checkpoint)
    except ProofFailed as error:
        raise ReceiptFailed("proof", f"the proof fails for event {leaf.id}: {error}", leaf.id) from error
    if leaf.job != job:
        raise ReceiptFailed("job", f"event {leaf.id} is of job {leaf.job}, not of job {job}", leaf.id)
    return ProvenEvent(leaf, parsed.index)


def _follows(previous: ProvenEvent, event: ProvenEvent) -> bool:
    """Whether ``event`` comes after ``previous`` both in the stream and in the tree."""
    return stream_order(previous.leaf.id) < stream_order(event.leaf.id) and previous.index < event.index

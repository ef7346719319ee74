"""A job's receipt, checked with the public key alone: a good one verifies, and each kind of tampering
is named — what failed, and at which event."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from jobledger.ledger.seal.checkpoints import Checkpoint, sign_checkpoint
from jobledger.ledger.seal.errors import ReceiptFailed, SignatureFailed
from jobledger.ledger.seal.frontier import Frontier
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.keys import generate
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.notes import Signature
from jobledger.ledger.seal.receipts import build_receipt, verify_receipt
from tests.ledger.seal.tree_support import MemoryTree

KEY = generate("jobledger/prod")
ORIGIN = "jobledger/prod"
JOB = 42
#: Job 42's events and where they are in the stream.
TYPES = ["job_created", "job_started", "job_failed", "job_started", "job_completed"]
INDICES = [17, 140, 141, 600, 901]


def stream(count: int) -> list[bytes]:
    """The leaves of ``count`` events: job 42's five, and heartbeats of jobs 1 to 61 but 42."""
    out = []
    for i in range(count):
        kind, job = (TYPES[INDICES.index(i)], JOB) if i in INDICES else ("job_heartbeat", i % 60 + 1)
        job = 61 if job == JOB and i not in INDICES else job
        fields = {"type": kind, "at": str(1_700_000_000_000 + i), "job": str(job), "queue": "q", "data": "{}"}
        out.append(leaf_bytes(f"{1_700_000_000_000 + i}-0", fields))
    return out


LEAVES = stream(1000)
TREE = MemoryTree([leaf_hash(leaf) for leaf in LEAVES])


def note_at(size: int, key: Any = KEY, origin: str = ORIGIN) -> str:
    frontier = Frontier.from_nodes(size, TREE)
    return sign_checkpoint(Checkpoint(origin, size, frontier.root()), key)


NOTE = note_at(1000)


def receipt(indices: list[int] = INDICES, note: str = NOTE) -> dict[str, Any]:
    return build_receipt(JOB, note, KEY.verifier, [(LEAVES[i], i) for i in indices], TREE)


GOOD = receipt()


def test_a_good_receipt_verifies_with_the_public_key_alone() -> None:
    text = json.dumps(GOOD)
    for form in (GOOD, text, text.encode()):
        check = verify_receipt(form, KEY.verifier.text, origin=ORIGIN)
        assert check.job == JOB and check.checkpoint.size == 1000 and check.key == KEY.verifier
        assert [e.leaf.type for e in check.events] == TYPES
        assert [e.index for e in check.events] == INDICES
        assert [e.leaf.id for e in check.events] == [f"{1_700_000_000_000 + i}-0" for i in INDICES]
    assert set(GOOD) == {"receipt", "job", "origin", "key", "checkpoint", "events"}
    assert GOOD["key"] == {"name": ORIGIN, "id": f"{KEY.id:08x}"} and KEY.verifier.text not in text
    assert set(GOOD["events"][0]) == {"index", "size", "leaf", "hashes"}


def test_after_a_key_rotation_the_old_receipts_verify_with_the_old_key() -> None:
    new = generate(ORIGIN)
    assert verify_receipt(GOOD, [new.verifier, KEY.verifier]).key == KEY.verifier


def failure(receipt: object, *, keys: Any = None, origin: str | None = None) -> ReceiptFailed:
    with pytest.raises(ReceiptFailed) as caught:
        verify_receipt(receipt, keys or [KEY.verifier], origin)
    return caught.value


def tampered(change: Any) -> dict[str, Any]:
    out = copy.deepcopy(GOOD)
    change(out)
    return out


def event_id(i: int) -> str:
    return f"{1_700_000_000_000 + INDICES[i]}-0"


def test_another_key() -> None:
    error = failure(GOOD, keys=[generate(ORIGIN).verifier])
    assert error.kind == "key" and f"{ORIGIN}+{KEY.id:08x}" in str(error)
    assert failure(tampered(lambda r: r["key"].update(id="00000000"))).kind == "key"


def test_a_forged_or_altered_checkpoint() -> None:
    forger = generate(ORIGIN)
    body, _, _ = NOTE.partition("\n\n")
    forged = body + "\n\n" + Signature(ORIGIN, KEY.id, forger.sign((body + "\n").encode())).line
    assert failure(tampered(lambda r: r.update(checkpoint=forged))).kind == "signature"
    altered = NOTE.replace("\n1000\n", "\n1001\n")
    assert failure(tampered(lambda r: r.update(checkpoint=altered))).kind == "signature"
    unsigned = note_at(1000, key=generate(ORIGIN))
    assert failure(tampered(lambda r: r.update(checkpoint=unsigned))).kind == "signature"


def test_another_log() -> None:
    assert failure(GOOD, origin="jobledger/prod/p1").kind == "origin"
    assert failure(tampered(lambda r: r.update(origin="jobledger/staging"))).kind == "origin"
    other = note_at(1000, origin="jobledger/staging")
    assert failure(
        tampered(lambda r: r.update(checkpoint=other, origin="jobledger/staging")), origin=ORIGIN
    ).kind == ("origin")


def set_event(i: int, **fields: Any) -> Any:
    return lambda r: r["events"][i].update(fields)


@pytest.mark.parametrize(
    ("change", "kind", "event"),
    [
        # a leaf that does not decode
        (set_event(1, leaf=LEAVES[140].decode().replace(',"at"', ', "at"')), "leaf", "1"),
        (set_event(1, leaf="not json"), "leaf", "1"),
        # a proof that fails: one hash changed, one dropped, none, another index, another size
        (lambda r: r["events"][2]["hashes"].__setitem__(0, "00" * 32), "proof", event_id(2)),
        (lambda r: r["events"][2]["hashes"].pop(), "proof", event_id(2)),
        (set_event(2, hashes=[]), "proof", event_id(2)),
        (set_event(3, index=601), "proof", event_id(3)),
        (set_event(3, size=999), "proof", event_id(3)),
        # a leaf changed, still canonical: its proof fails
        (
            set_event(4, leaf=LEAVES[901].decode().replace("job_completed", "job_cancelled")),
            "proof",
            event_id(4),
        ),
        (
            set_event(4, leaf=LEAVES[901].decode().replace('"actor":"local"', '"actor":"admin"')),
            "proof",
            event_id(4),
        ),
        # an event of another job, with its own good proof
        (lambda r: r["events"].insert(1, receipt_event(100)), "job", f"{1_700_000_000_100}-0"),
        # two events swapped, one twice
        (lambda r: r["events"].reverse(), "order", event_id(3)),
        (lambda r: r["events"].insert(1, copy.deepcopy(r["events"][0])), "order", event_id(0)),
        # the shape
        (set_event(0, hashes=[h.upper() for h in GOOD["events"][0]["hashes"]]), "malformed", "0"),
        (set_event(0, index=True), "malformed", "0"),
        (set_event(0, extra=1), "malformed", "0"),
    ],
)
def test_each_kind_of_tampering_is_named(change: Any, kind: str, event: str) -> None:
    error = failure(tampered(change))
    assert (error.kind, error.event) == (kind, event), str(error)


def receipt_event(index: int) -> dict[str, Any]:
    return build_receipt(
        int(json.loads(LEAVES[index])["job"]), NOTE, KEY.verifier, [(LEAVES[index], index)], TREE
    )["events"][0]


def test_a_proof_for_an_older_checkpoint_is_for_another_size() -> None:
    old = receipt(INDICES[:3], note_at(500))
    error = failure(tampered(lambda r: r["events"].__setitem__(0, old["events"][0])))
    assert (error.kind, error.event) == ("proof", event_id(0)) and "size 500" in str(error)


@pytest.mark.parametrize(
    "bad",
    [
        "{",
        "[]",
        {},
        tampered(lambda r: r.pop("origin")),
        tampered(lambda r: r.update(extra=1)),
        tampered(lambda r: r.update(events=[])),
        tampered(lambda r: r.update(receipt=2)),
        tampered(lambda r: r.update(receipt=True)),
        tampered(lambda r: r.update(job="42")),
        tampered(lambda r: r.update(key={"name": ORIGIN})),
        tampered(lambda r: r.update(checkpoint=None)),
        tampered(lambda r: r.update(checkpoint="not a note")),
    ],
)
def test_a_receipt_that_is_not_one(bad: object) -> None:
    assert failure(bad).kind == "malformed"


def test_a_receipt_is_built_only_from_a_checkpoint_the_key_signed_and_sealed_events() -> None:
    with pytest.raises(SignatureFailed):
        receipt(note=note_at(1000, key=generate(ORIGIN)))
    with pytest.raises(ValueError):
        build_receipt(JOB, note_at(500), KEY.verifier, [(LEAVES[600], 600)], TREE)
    with pytest.raises(ReceiptFailed):  # not the job's events: it is checked before it is handed out
        build_receipt(JOB, NOTE, KEY.verifier, [(LEAVES[18], 18)], TREE)

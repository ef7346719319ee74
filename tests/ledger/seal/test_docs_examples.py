"""The examples of docs/verifiable-ledger.md are real: the worked leaf is what the code writes, the
receipt verifies with the key shown, and the by-hand check passes it and catches a tampered copy."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature

from jobledger.ledger.seal.checkpoints import open_checkpoint
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.proof_json import InclusionProof
from jobledger.ledger.seal.receipts import verify_receipt

DOC = (Path(__file__).resolve().parents[3] / "docs" / "verifiable-ledger.md").read_text()
VKEY = "jobledger/prod+cecc0230+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"


def blocks(language: str) -> list[str]:
    """The doc's fenced blocks in ``language`` ("" for those without one), in order."""
    found: list[str] = []
    lines: list[str] = []
    inside = keep = False
    for line in DOC.splitlines(keepends=True):
        if line.startswith("```"):
            if inside and keep:
                found.append("".join(lines))
            inside, keep, lines = not inside, line[3:].strip() == language, []
        elif inside:
            lines.append(line)
    return found


def receipt() -> dict[str, Any]:
    (found,) = [json.loads(b) for b in blocks("json") if '"receipt": 1' in b]
    return dict(found)


def test_the_worked_leaf() -> None:
    assert VKEY in DOC
    entry = {"type": "job_created", "v": "1", "at": "1893456000000", "job": "42", "queue": "invoices",
             "actor": "ci-bot", "data": '{"input":"{\\"invoice\\":7,\\"note\\":\\"café\\"}","tags":["eu"],'
             '"timeout":10000,"expires_after":300000}'}  # fmt: skip
    leaf = leaf_bytes("1893456000000-0", entry)
    assert leaf.decode() + "\n" in blocks("") and f"UTF-8, {len(leaf)} bytes" in DOC
    assert leaf_hash(leaf).hex() in DOC


def test_the_receipt_and_the_proof_verify() -> None:
    check = verify_receipt(receipt(), VKEY, origin="jobledger/prod")
    assert [e.leaf.type for e in check.events] == ["job_created", "job_completed"]
    (proof,) = [json.loads(b) for b in blocks("json") if b.startswith('{"index": 4')]
    checkpoint = open_checkpoint(receipt()["checkpoint"], [check.key]).checkpoint
    assert InclusionProof.from_json(proof).verify(checkpoint).type == "job_completed"
    assert receipt()["checkpoint"] in blocks("")  # the checkpoint shown is the receipt's


def test_the_check_by_hand() -> None:
    (code,) = re.findall(r"<!-- by-hand -->\n```python\n(.*?)```", DOC, re.DOTALL)
    scope: dict[str, Any] = {}
    exec(code, scope)
    scope["check"](receipt(), VKEY)
    tampered = copy.deepcopy(receipt())
    tampered["events"][1]["leaf"] = tampered["events"][1]["leaf"].replace('"local"', '"admin"')
    with pytest.raises(AssertionError, match="not in the checkpoint"):
        scope["check"](tampered, VKEY)
    forged = copy.deepcopy(receipt())
    forged["checkpoint"] = forged["checkpoint"].replace("\n6\n", "\n7\n")
    with pytest.raises(InvalidSignature):
        scope["check"](forged, VKEY)

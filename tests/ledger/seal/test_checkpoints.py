"""Checkpoints: the origin of each log, the three-line body parsed strictly, and a signed checkpoint
opened only with the log's key and for the log it names."""

from __future__ import annotations

import base64

import pytest

from jobledger.ledger.seal.checkpoints import (
    Checkpoint,
    open_checkpoint,
    origin,
    parse_body,
    parse_origin,
    sign_checkpoint,
)
from jobledger.ledger.seal.errors import Malformed, OtherLog, SignatureFailed
from jobledger.ledger.seal.hashes import EMPTY_ROOT, to_base64
from jobledger.ledger.seal.keys import generate
from tests.ledger.seal.tree_support import sha

ROOT = sha("a root")
KEY = generate("jobledger/prod")


@pytest.mark.parametrize(
    ("namespace", "partition", "text"),
    [
        ("jobledger", None, "jobledger/jobledger"),
        ("prod", 3, "jobledger/prod/p3"),
        ("prod", 0, "jobledger/prod/p0"),
        ("a b/c+d%", None, "jobledger/a%20b%2Fc%2Bd%25"),
        ("été", 12, "jobledger/%C3%A9t%C3%A9/p12"),
        ("x.y-z_~", None, "jobledger/x.y-z_~"),
    ],
)
def test_origins(namespace: str, partition: int | None, text: str) -> None:
    assert origin(namespace, partition) == text
    assert parse_origin(text) == (namespace, partition)


@pytest.mark.parametrize(
    "text",
    ["jobledger/", "jobledger", "other/prod", "jobledger/prod/p", "jobledger/prod/p01", "jobledger/prod/q1",
     "jobledger/a%2", "jobledger/%41", "jobledger/a%2f", "jobledger/%FF", "jobledger/a b",
     "jobledger/prod/p1/p2"],
)  # fmt: skip
def test_text_that_is_not_one_of_our_origins(text: str) -> None:
    with pytest.raises(Malformed):
        parse_origin(text)


def test_the_body_is_origin_size_and_root() -> None:
    checkpoint = Checkpoint("jobledger/prod", 1234, ROOT)
    assert checkpoint.body == f"jobledger/prod\n1234\n{to_base64(ROOT)}\n"
    assert parse_body(checkpoint.body) == checkpoint
    assert parse_body(f"jobledger/prod\n0\n{to_base64(EMPTY_ROOT)}\n").size == 0


def test_c2sps_example_body_parses() -> None:
    body = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    root = bytes.fromhex("0ac5186a91863e8e1d90c808014aa89bf5da8e3ee1d9f07630f0378f68f1ab62")
    assert parse_body(body) == Checkpoint("example.com/behind-the-sofa", 20852163, root)


GOOD_ROOT = to_base64(ROOT)
BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: The root with a bit set after its data (the last character before ``=`` carries 4 bits and 2 spare).
LOOSE_ROOT = GOOD_ROOT[:-2] + BASE64[BASE64.index(GOOD_ROOT[-2]) | 1] + "="


@pytest.mark.parametrize(
    "body",
    [
        f"jobledger/prod\n5\n{GOOD_ROOT}\nan extension line\n",
        f"jobledger/prod\n5\n{GOOD_ROOT}",
        f"jobledger/prod\n5\n{GOOD_ROOT}\n\n",
        f"jobledger/prod\n05\n{GOOD_ROOT}\n",
        f"jobledger/prod\n-1\n{GOOD_ROOT}\n",
        f"jobledger/prod\n+5\n{GOOD_ROOT}\n",
        f"jobledger/prod\n 5\n{GOOD_ROOT}\n",
        f"jobledger/prod\n5 \n{GOOD_ROOT}\n",
        f"jobledger/prod\n1e3\n{GOOD_ROOT}\n",
        f"jobledger/prod\n{2**63}\n{GOOD_ROOT}\n",
        f"jobledger/prod\n\n{GOOD_ROOT}\n",
        f"jobledger/prod\n5\n{to_base64(ROOT[:31])}\n",
        f"jobledger/prod\n5\n{LOOSE_ROOT}\n",
        f"jobledger/prod\n5\n{ROOT.hex()}\n",
        f"\n5\n{GOOD_ROOT}\n",
        f"jobledger/a b\n5\n{GOOD_ROOT}\n",
        f"jobledger/a+b\n5\n{GOOD_ROOT}\n",
    ],
)
def test_a_body_not_in_its_one_form_is_refused(body: str) -> None:
    assert base64.b64decode(LOOSE_ROOT) == ROOT != base64.b64decode(GOOD_ROOT[:-2] + "A=")
    with pytest.raises(Malformed):
        parse_body(body)


def test_a_signed_checkpoint_opens_with_its_key_for_its_log() -> None:
    checkpoint = Checkpoint("jobledger/prod", 7, ROOT)
    note = sign_checkpoint(checkpoint, KEY)
    assert note.startswith(checkpoint.body + "\n— jobledger/prod ")
    opened = open_checkpoint(note, [KEY.verifier], origin="jobledger/prod")
    assert opened.checkpoint == checkpoint and opened.note.verified[0].key == f"jobledger/prod+{KEY.id:08x}"
    with pytest.raises(OtherLog):
        open_checkpoint(note, [KEY.verifier], origin="jobledger/prod/p1")
    with pytest.raises(SignatureFailed):
        open_checkpoint(note, [generate("jobledger/prod").verifier])
    with pytest.raises(SignatureFailed):
        open_checkpoint(note.replace("\n7\n", "\n8\n"), [KEY.verifier])

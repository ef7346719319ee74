"""Keys and signed notes: Go's ``sumdb/note`` test keys and notes are ours byte for byte, and every
mangled key, forged or altered note is refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jobledger.ledger.seal.errors import Malformed, SignatureFailed
from jobledger.ledger.seal.keys import (
    VerifierKey,
    generate,
    key_id,
    parse_signer,
    parse_verifier,
    read_key_file,
    write_key_file,
)
from jobledger.ledger.seal.notes import Signature, open_note, sign_note

# golang.org/x/mod/sumdb/note's test keys and notes (note_test.go)
PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
PETER_SIG = (
    "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXg"
    "KvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG0"
    "1oOTGwnWLox33WWd1RvMc+QQ=\n"
)

PETER = parse_verifier(PETER_VKEY)
ENOCH = parse_verifier(ENOCH_VKEY)


def test_gos_keys_are_ours() -> None:
    signer = parse_signer(PETER_SKEY)
    assert signer.verifier == PETER and signer.text == PETER_SKEY and PETER.text == PETER_VKEY
    assert (PETER.name, PETER.id) == ("PeterNeumann", 0xC74F20A3) == (signer.name, signer.id)
    assert key_id("PeterNeumann", PETER.public) == 0xC74F20A3
    assert "AYEK" not in repr(signer) and "AYEK" not in str(signer)


def test_gos_signed_note_is_ours_byte_for_byte() -> None:
    assert sign_note(TEXT, [parse_signer(PETER_SKEY)]) == TEXT + "\n" + PETER_SIG


def test_gos_notes_open() -> None:
    note = open_note(TEXT + "\n" + PETER_SIG + ENOCH_SIG, [PETER])
    assert note.text == TEXT
    assert [s.key for s in note.verified] == ["PeterNeumann+c74f20a3"]
    assert [s.key for s in note.unverified] == ["EnochRoot+af0cfe78"]
    both = open_note((TEXT + "\n" + PETER_SIG + ENOCH_SIG).encode(), [PETER, ENOCH])
    assert [s.key for s in both.verified] == ["PeterNeumann+c74f20a3", "EnochRoot+af0cfe78"]
    assert both.unverified == ()
    repeated = (
        TEXT + "\n" + PETER_SIG + PETER_SIG + ENOCH_SIG + ENOCH_SIG + ENOCH_SIG[:60] + "ABCD" + ENOCH_SIG[60:]
    )
    note = open_note(repeated, [PETER])
    assert len(note.verified) == 1 and len(note.unverified) == 2


def mangled(text: str) -> list[str]:
    """Every proper substring of ``text``, and ``text`` with each character moved one code point up
    (Go's tests of its key parsers)."""
    cuts = [
        text[i:j]
        for i in range(len(text) + 1)
        for j in range(i + 1, len(text) + 1)
        if (i, j) != (0, len(text))
    ]
    return cuts + [text[:i] + chr(ord(text[i]) + 1) + text[i + 1 :] for i in range(len(text))]


def test_a_mangled_verifier_key_is_refused() -> None:
    for bad in [
        *mangled(PETER_VKEY),
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",  # too long a key
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # unknown algorithm
        PETER_VKEY.replace("c74f20a3", "C74F20A3"),  # one spelling only
    ]:
        with pytest.raises(Malformed):
            parse_verifier(bad)
            pytest.fail(bad)


def test_a_mangled_signer_key_is_refused() -> None:
    for bad in mangled(PETER_SKEY):
        with pytest.raises(Malformed):
            parse_signer(bad)
            pytest.fail(bad)


@pytest.mark.parametrize(
    "message",
    [
        TEXT,
        TEXT + "\n",
        TEXT + "\n" + PETER_SIG[:-1],  # a truncated line: no final newline
        TEXT + "\n" + PETER_SIG[:40] + "\n",  # a truncated signature
        "\x01" + TEXT + "\n" + PETER_SIG,
        TEXT + "\n" + "— Bad Name " + PETER_SIG.split(" ")[2],
        TEXT + "\n" + PETER_SIG + "Unexpected line.\n",
        TEXT + "\n" + PETER_SIG.replace("AM=", "AN="),  # base64 with bits after the data: not canonical
        TEXT + "\n" + PETER_SIG.replace("— ", "- "),
        TEXT + "\n" + PETER_SIG + "\n",
        TEXT + "\n" + PETER_SIG * 101,
        TEXT + "\n" + "— PeterNeumann xw==\n",  # shorter than a key id and one byte
    ],
)
def test_a_malformed_note_is_refused(message: str) -> None:
    with pytest.raises(Malformed):
        open_note(message, [PETER])


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(Malformed):
        open_note(b"\xff" + (TEXT + "\n" + PETER_SIG).encode(), [PETER])


def test_a_forged_or_altered_note_is_refused() -> None:
    forger = generate("PeterNeumann")
    forged_sig = Signature("PeterNeumann", PETER.id, forger.sign(TEXT.encode())).line
    changed = TEXT.replace("cryptography", "cryptographY")
    cases = {
        "signed by another key under Peter's name and id": TEXT + "\n" + forged_sig,
        "a byte of the text changed": changed + "\n" + PETER_SIG,
        "a byte of the signature changed": TEXT + "\n" + PETER_SIG[:60] + "ABCD" + PETER_SIG[64:],
    }
    for why, message in cases.items():
        with pytest.raises(SignatureFailed, match="invalid signature for key PeterNeumann"):
            open_note(message, [PETER])
            pytest.fail(why)


def test_a_note_without_a_known_keys_signature_is_refused() -> None:
    wrong_id = PETER_SIG.replace("x08go/", "x08gp/")  # the key id's last byte
    for message in (TEXT + "\n" + ENOCH_SIG, TEXT + "\n" + wrong_id, TEXT + "\n" + forged_name()):
        with pytest.raises(SignatureFailed, match="no signature by a known key"):
            open_note(message, [PETER])


def forged_name() -> str:
    other = generate("PeterNeuman")
    return sign_note(TEXT, [other]).split("\n\n")[-1]


def test_two_different_known_keys_of_one_name_and_id_are_refused() -> None:
    impostor = VerifierKey(ENOCH.name, ENOCH.id, PETER.public)
    assert open_note(TEXT + "\n" + PETER_SIG, [PETER, PETER]).verified  # the same key twice is one key
    with pytest.raises(Malformed, match="two different known keys"):
        open_note(TEXT + "\n" + PETER_SIG, [ENOCH, impostor])


def test_a_rotated_key_each_key_verifies_its_own_line() -> None:
    old, new = generate("jobledger/prod"), generate("jobledger/prod")
    note = sign_note("jobledger/prod\n5\n" + "A" * 43 + "=\n", [old, new])
    for known in ([old.verifier], [new.verifier], [old.verifier, new.verifier]):
        assert len(open_note(note, known).verified) == len(known)


@pytest.mark.parametrize("name", ["", "a b", "a+b", "a\tb", "a\u00a0b", "a\nb", "a\x7fb", "a\u2028b"])
def test_a_key_needs_a_name_without_space_plus_or_control_character(name: str) -> None:
    with pytest.raises(Malformed):
        generate(name)


def test_a_key_file_is_the_owners_alone_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "ledger.key"
    key = generate("jobledger/prod")
    write_key_file(path, key)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == key.text + "\n"
    assert read_key_file(path) == key
    with pytest.raises(FileExistsError):
        write_key_file(path, generate("jobledger/prod"))
    os.chmod(path, 0o640)
    with pytest.raises(Malformed, match="0600"):
        read_key_file(path)


@pytest.mark.parametrize(
    "content",
    [b"", b"\n", b"PRIVATE+KEY+x\n", b"\xff", lambda k: k + "\n\n", lambda k: " " + k, lambda k: k + " "],
)
def test_a_key_file_holds_one_signer_key_line(tmp_path: Path, content: object) -> None:
    text = generate("jobledger/prod").text
    data = content(text).encode() if callable(content) else content
    path = tmp_path / "ledger.key"
    path.write_bytes(data)  # type: ignore[arg-type]
    path.chmod(0o600)
    with pytest.raises(Malformed):
        read_key_file(path)

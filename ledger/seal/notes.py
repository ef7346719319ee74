"""C2SP signed notes: a text, a blank line, and signature lines ``— <name> base64(id ‖ signature)``.

Opening a note checks it whole before trusting a word of it: valid UTF-8 with no control character
but newline, at most 1 MiB and 100 signatures, every signature line well formed (its base64 in the
one canonical spelling).  A signature whose name and id are those of a known key must verify, or the
note is refused; one by a key not known is kept aside, unchecked (a witness's cosignature, a rotated
key the caller does not hold); a note with no good signature by a known key is refused.  Every
signature by a known key is checked, a repeated one too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobledger.ledger.seal.errors import Malformed, SignatureFailed
from jobledger.ledger.seal.hashes import from_base64, to_base64
from jobledger.ledger.seal.keys import SignerKey, VerifierKey, valid_name

MAX_NOTE = 1 << 20
MAX_SIGNATURES = 100
DASH = "\u2014 "


@dataclass(frozen=True)
class Signature:
    """One signature line: the key's name and id, and the signature's bytes (after the id)."""

    name: str
    id: int
    signature: bytes

    @property
    def key(self) -> str:
        """``name+id``, as errors name a key."""
        return f"{self.name}+{self.id:08x}"

    @property
    def line(self) -> str:
        return f"{DASH}{self.name} {to_base64(self.id.to_bytes(4, 'big') + self.signature)}\n"


@dataclass(frozen=True)
class Note:
    """An opened note: its text (ending in a newline), the signatures checked by a known key, and
    those by keys not known, unchecked."""

    text: str
    verified: tuple[Signature, ...]
    unverified: tuple[Signature, ...]


def sign_note(text: str, signers: Sequence[SignerKey]) -> str:
    """The note of ``text`` signed by each of ``signers``, in order."""
    _check_text(text, "the note's text")
    if not text.endswith("\n") or not signers:
        raise Malformed("a note's text ends in a newline, and a note has a signature")
    message = text.encode("utf-8")
    lines = [Signature(s.name, s.id, s.sign(message)).line for s in signers]
    return text + "\n" + "".join(lines)


def open_note(message: str | bytes, known: Sequence[VerifierKey]) -> Note:
    """The note ``message``, its signatures by ``known`` keys checked (see the module's doc)."""
    note = _as_text(message)
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise Malformed("a note is a text, a blank line and signature lines, each ending in a newline")
    text, block = note[: split + 1], note[split + 2 :]
    signatures = [_parse_line(line) for line in block[:-1].split("\n")]
    if len(signatures) > MAX_SIGNATURES:
        raise Malformed(f"a note has at most {MAX_SIGNATURES} signatures")
    keys = _key_map(known)
    verified: list[Signature] = []
    unverified: list[Signature] = []
    for signature in signatures:
        key = keys.get((signature.name, signature.id))
        if key is None:
            if signature not in unverified:
                unverified.append(signature)
        elif key.verify(text.encode("utf-8"), signature.signature):
            if signature not in verified:
                verified.append(signature)
        else:
            raise SignatureFailed(f"invalid signature for key {signature.key}")
    if not verified:
        signed_by = ", ".join(s.key for s in unverified)
        raise SignatureFailed(f"the note has no signature by a known key (it is signed by {signed_by})")
    return Note(text, tuple(verified), tuple(unverified))


def _as_text(message: str | bytes) -> str:
    if len(message) > MAX_NOTE:
        raise Malformed(f"a note is at most {MAX_NOTE} bytes")
    if isinstance(message, bytes):
        try:
            message = message.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Malformed("a note is UTF-8") from error
    _check_text(message, "a note")
    return message


def _check_text(text: str, what: str) -> None:
    if any(c < " " and c != "\n" for c in text):
        raise Malformed(f"{what} holds a control character other than newline")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise Malformed(f"{what} is not UTF-8 text") from error


def _parse_line(line: str) -> Signature:
    """``— <name> <base64>`` -> the signature it holds."""
    name, _, encoded = line.removeprefix(DASH).partition(" ")
    if not line.startswith(DASH) or not valid_name(name) or not encoded:
        raise Malformed(f"not a signature line: {line[:80]!r}")
    data = from_base64(encoded, f"the signature by {name}")
    if len(data) < 5:
        raise Malformed(f"the signature by {name} is too short")
    return Signature(name, int.from_bytes(data[:4], "big"), data[4:])


def _key_map(known: Sequence[VerifierKey]) -> dict[tuple[str, int], VerifierKey]:
    keys: dict[tuple[str, int], VerifierKey] = {}
    for key in known:
        if keys.setdefault((key.name, key.id), key) != key:
            raise Malformed(f"two different known keys are both {key.name}+{key.id:08x}")
    return keys

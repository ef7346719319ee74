"""C2SP checkpoints: the signed note of a log's origin, tree size and root.

The body is exactly three lines: the origin, the size in decimal (no sign, no leading zero) and the
root in standard base64.  Ours carry no extension line, and one with any is refused.  A ledger's
origin is ``jobledger/<namespace>``, with ``/p<N>`` for partition ``N`` of a split ledger (each
partition is a log of its own); the namespace is percent-encoded where it holds anything but letters,
digits and ``_.-~``, so an origin is always one clean line and names one log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from jobledger.ledger.seal.errors import Malformed, OtherLog
from jobledger.ledger.seal.hashes import HASH_SIZE, hash_from_base64, to_base64
from jobledger.ledger.seal.keys import SignerKey, VerifierKey, valid_name
from jobledger.ledger.seal.notes import Note, open_note, sign_note
from jobledger.ledger.seal.verify import MAX_SIZE

PREFIX = "jobledger/"

_SIZE = re.compile(r"0|[1-9][0-9]{0,18}")
_ORIGIN = re.compile(r"jobledger/([A-Za-z0-9_.~%-]+)(?:/p(0|[1-9][0-9]{0,5}))?")


def origin(namespace: str, partition: int | None = None) -> str:
    """The origin of a ledger's log: ``jobledger/<namespace>``, ``/p<N>`` for partition ``N``."""
    if namespace == "":
        raise Malformed("a ledger's namespace is not empty")
    base = PREFIX + quote(namespace, safe="")
    return base if partition is None else f"{base}/p{partition}"


def parse_origin(text: str) -> tuple[str, int | None]:
    """The namespace and partition (None on a ledger of one) of one of our origins."""
    match = _ORIGIN.fullmatch(text)
    try:
        namespace = unquote(match[1], errors="strict") if match else ""
    except UnicodeDecodeError:
        namespace = ""
    if match is None or quote(namespace, safe="") != match[1]:
        raise Malformed(f"not the origin of a jobledger log: {text[:100]!r}")
    return namespace, int(match[2]) if match[2] is not None else None


@dataclass(frozen=True)
class Checkpoint:
    """A tree head: which log, how many leaves, and their root."""

    origin: str
    size: int
    root: bytes

    def __post_init__(self) -> None:
        if not valid_name(self.origin) or not 0 <= self.size < MAX_SIZE or len(self.root) != HASH_SIZE:
            raise Malformed("a checkpoint has an origin without space or '+', a size and a 32-byte root")

    @property
    def body(self) -> str:
        """The note text: origin, size and base64 root, each on a line."""
        return f"{self.origin}\n{self.size}\n{to_base64(self.root)}\n"


@dataclass(frozen=True)
class SignedCheckpoint:
    """A checkpoint with the note it came in, its signatures checked."""

    checkpoint: Checkpoint
    note: Note


def parse_body(text: str) -> Checkpoint:
    """The checkpoint a note's text holds; :class:`Malformed` unless it is exactly three lines."""
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise Malformed("a checkpoint's text is three lines: origin, size, root (no extension line)")
    origin_line, size_line, root_line = lines[:3]
    if not _SIZE.fullmatch(size_line):
        raise Malformed(f"a checkpoint's size is a decimal number: {size_line[:30]!r}")
    return Checkpoint(origin_line, int(size_line), hash_from_base64(root_line, "the checkpoint's root"))


def sign_checkpoint(checkpoint: Checkpoint, signer: SignerKey) -> str:
    """The signed note of ``checkpoint``."""
    return sign_note(checkpoint.body, [signer])


def open_checkpoint(
    note: str | bytes, known: Sequence[VerifierKey], origin: str | None = None
) -> SignedCheckpoint:
    """The checkpoint in ``note``, signed by one of ``known`` (see
    :func:`~jobledger.ledger.seal.notes.open_note`) and, if ``origin`` is given, of that log."""
    opened = open_note(note, known)
    checkpoint = parse_body(opened.text)
    if origin is not None and checkpoint.origin != origin:
        raise OtherLog(f"the checkpoint is of {checkpoint.origin}, not of {origin}")
    return SignedCheckpoint(checkpoint, opened)

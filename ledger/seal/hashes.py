"""RFC 9162 hashing (SHA-256, domain-separated leaves and nodes) and the strict text forms of a hash.

A leaf hash is SHA-256(0x00 ‖ bytes), a node hash SHA-256(0x01 ‖ left ‖ right), and the root of the
empty tree SHA-256 of nothing.  Hashes travel as lowercase hex in proofs and as standard base64 in
checkpoints; each parser accepts exactly the one form the encoder writes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from jobledger.ledger.seal.errors import Malformed

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

_HEX_HASH = re.compile(r"[0-9a-f]{64}")


def leaf_hash(data: bytes) -> bytes:
    """The hash of a leaf whose bytes are ``data``."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an inner node over its two children's hashes."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def to_hex(digest: bytes) -> str:
    return digest.hex()


def from_hex(text: object, what: str = "hash") -> bytes:
    """A hash from its 64 lowercase hex digits; anything else is :class:`Malformed`."""
    if not isinstance(text, str) or not _HEX_HASH.fullmatch(text):
        raise Malformed(f"{what} is not 64 lowercase hex digits: {text!r:.80}")
    return bytes.fromhex(text)


def to_base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def from_base64(text: str, what: str) -> bytes:
    """Standard base64 with padding, in its one canonical spelling (the bits after the data zero)."""
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError) as error:
        raise Malformed(f"{what} is not base64: {text!r:.80}") from error
    if to_base64(data) != text:
        raise Malformed(f"{what} is not canonical base64: {text!r:.80}")
    return data


def hash_from_base64(text: str, what: str) -> bytes:
    digest = from_base64(text, what)
    if len(digest) != HASH_SIZE:
        raise Malformed(f"{what} is {len(digest)} bytes, not {HASH_SIZE}")
    return digest

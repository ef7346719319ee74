"""Ed25519 keys in the formats of Go's ``golang.org/x/mod/sumdb/note``, which C2SP's signed notes use.

A key has a *name* (no space, no ``+``, no control character; ours is the log's base origin,
``jobledger/<namespace>``) and an *id*: the first four bytes, big-endian, of
SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key), 0x01 being Ed25519's signature type.  Written as text:

- the verifier key (public): ``<name>+<id as 8 lowercase hex>+<base64(0x01 ‖ public key)>``;
- the signer key (private): ``PRIVATE+KEY+<name>+<id>+<base64(0x01 ‖ 32-byte seed)>``; a key file
  holds that one line, is made 0600 and never overwritten, and is refused when others may read it.

Parsing accepts only what these encoders write, and checks that the id is the key's.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from jobledger.ledger.seal.errors import Malformed
from jobledger.ledger.seal.hashes import from_base64, to_base64

ED25519 = 0x01
KEY_SIZE = 32
SIGNATURE_SIZE = 64
PRIVATE_PREFIX = "PRIVATE+KEY+"

_KEY_ID = re.compile(r"[0-9a-f]{8}")


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a key: non-empty, no ``+``, no space or control character."""
    return (
        name != ""
        and "+" not in name
        and not any(c.isspace() or unicodedata.category(c) in ("Cc", "Cs", "Zs") for c in name)
    )


def key_id(name: str, public: bytes) -> int:
    """The id of the Ed25519 key ``public`` named ``name``."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([ED25519]) + public).digest()
    return int.from_bytes(digest[:4], "big")


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@dataclass(frozen=True)
class VerifierKey:
    """A public key that checks signatures: its name, id and the 32 bytes of the Ed25519 key."""

    name: str
    id: int
    public: bytes

    @property
    def text(self) -> str:
        """The verifier key string, ``name+id+base64``."""
        return f"{self.name}+{self.id:08x}+{to_base64(bytes([ED25519]) + self.public)}"

    def verify(self, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` (64 bytes) is this key's Ed25519 signature of ``message``."""
        if len(signature) != SIGNATURE_SIZE:
            return False
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True, repr=False)
class SignerKey:
    """A private key that signs; its ``repr`` hides the seed."""

    name: str
    id: int
    seed: bytes

    def __repr__(self) -> str:
        return f"SignerKey({self.name!r}, {self.id:08x})"

    @property
    def verifier(self) -> VerifierKey:
        public = _raw_public(Ed25519PrivateKey.from_private_bytes(self.seed).public_key())
        return VerifierKey(self.name, self.id, public)

    @property
    def text(self) -> str:
        """The signer key string, ``PRIVATE+KEY+name+id+base64``."""
        return f"{PRIVATE_PREFIX}{self.name}+{self.id:08x}+{to_base64(bytes([ED25519]) + self.seed)}"

    def sign(self, message: bytes) -> bytes:
        return Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)


def generate(name: str) -> SignerKey:
    """A new key named ``name``."""
    if not valid_name(name):
        raise Malformed(f"{name!r:.80} cannot name a key (empty, or a space, '+' or control character)")
    private = Ed25519PrivateKey.generate()
    seed = private.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return SignerKey(name, key_id(name, _raw_public(private.public_key())), seed)


def _parts(text: str, what: str) -> tuple[str, int, bytes]:
    """``name+id+base64(0x01 ‖ 32 bytes)`` -> the name, the id and the 32 bytes."""
    name, _, rest = text.partition("+")
    hex_id, _, encoded = rest.partition("+")
    if not valid_name(name) or not _KEY_ID.fullmatch(hex_id):
        raise Malformed(f"{what} is not name+id+key: {text[:40]!r}")
    data = from_base64(encoded, what)
    if len(data) != 1 + KEY_SIZE or data[0] != ED25519:
        raise Malformed(f"{what} is not an Ed25519 key (0x01 and 32 bytes)")
    return name, int(hex_id, 16), data[1:]


def parse_verifier(text: str) -> VerifierKey:
    """The verifier key a ``name+id+base64`` string writes; :class:`Malformed` if it is not one."""
    name, kid, public = _parts(text, "the verifier key")
    if kid != key_id(name, public):
        raise Malformed(f"the verifier key's id {kid:08x} is not the id of its key")
    return VerifierKey(name, kid, public)


def parse_signer(text: str) -> SignerKey:
    """The signer key a ``PRIVATE+KEY+name+id+base64`` string writes."""
    if not text.startswith(PRIVATE_PREFIX):
        raise Malformed("a signer key starts with PRIVATE+KEY+")
    name, kid, seed = _parts(text[len(PRIVATE_PREFIX) :], "the signer key")
    key = SignerKey(name, kid, seed)
    if kid != key_id(name, key.verifier.public):
        raise Malformed(f"the signer key's id {kid:08x} is not the id of its key")
    return key


def write_key_file(path: Path, key: SignerKey) -> None:
    """Write ``key`` into a new file readable by its owner only; never over an existing one."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(key.text + "\n")
        out.flush()
        os.fsync(out.fileno())


def read_key_file(path: Path) -> SignerKey:
    """The key in a key file; :class:`Malformed` if others than its owner may read it, or it holds
    anything but one signer key line."""
    if os.name == "posix" and stat.S_IMODE(path.stat().st_mode) & 0o077:
        raise Malformed(f"{path} may be read by others than its owner: make it 0600")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise Malformed(f"{path} is not a key file (not UTF-8)") from error
    return parse_signer(text.removesuffix("\n"))

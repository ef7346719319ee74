"""The rules a file of a job meets, which the client and the server both apply: its name, its
SHA-256, its media type, how many a job holds, and the digest headers that carry a SHA-256.

Names.  A file's name is one path segment, as it lands in the worker's directory and in a zip: 1 to
255 bytes of UTF-8 once NFC-normalised (the form it is kept in), no ``/`` or ``\\``, no control
character (C0, DEL, C1), no bidirectional mark or override (which would make a name read otherwise
than it is), not ``.`` or ``..``.  Within a job, the names of its files differ, and so do the names
of its results, even in case (casefolded) or normalisation: ``A.txt`` and ``a.txt`` would be one file
on a disk that ignores case (a result added again under the same name replaces the earlier one in
the job's record; the ledger keeps both events).
"""

from __future__ import annotations

import base64
import re
import unicodedata
from collections.abc import Iterable

#: A SHA-256 as the ledger writes it: 64 lowercase hex digits.
SHA256_PATTERN = r"^[0-9a-f]{64}$"
_SHA256 = re.compile(SHA256_PATTERN)
MAX_NAME = 255
#: What a file reference's media type may be: ``type/subtype`` with optional parameters, printable ASCII.
MEDIA_TYPE_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+( *;[ -~]*)?$"
DEFAULT_MEDIA_TYPE = "application/octet-stream"
#: At most this many files (and, apart, results) per job: each is a field of the job's record.
MAX_FILES = 1000
#: Sizes are exact through Lua's 14-digit number encoding.
MAX_SIZE = 2**46


#: Bidirectional marks, embeddings, overrides and isolates: they make a name display otherwise than
#: its characters run.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def file_name_problem(name: str) -> str | None:
    """Why ``name`` (as given: normalise it first, :func:`checked_name`) cannot name a file of a
    job, or None when it can."""
    problem = recorded_name_problem(name)
    if problem:
        return problem
    if any(127 < ord(c) <= 159 for c in name):
        return "a file name cannot hold control characters"
    if any(c in BIDI_CONTROLS for c in name):
        return "a file name cannot hold bidirectional marks or overrides"
    return None


def recorded_name_problem(name: str) -> str | None:
    """What every name the ledger has ever recorded meets: the rules of its first release, before C1
    controls, bidirectional marks and normalisation were refused."""
    if not name:
        return "a file name cannot be empty"
    if len(name.encode()) > MAX_NAME:
        return f"a file name can be at most {MAX_NAME} bytes"
    if name in (".", ".."):
        return f"{name!r} cannot name a file"
    if "/" in name or "\\" in name:
        return f"a file name is one path segment, without '/' or '\\': {name!r}"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a file name cannot hold control characters"
    return None


def checked_name(name: str) -> str:
    """``name`` NFC-normalised, the form a job's file or result is named by; ValueError saying why
    when no file can have it."""
    name = unicodedata.normalize("NFC", name)
    problem = file_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


def name_key(name: str) -> str:
    """What two names of one job may not share: the name casefolded and NFC-normalised."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def name_clash(name: str, others: Iterable[str]) -> str | None:
    """The first of ``others`` that is not ``name`` but differs from it only in case or normalisation."""
    key = name_key(name)
    return next((other for other in others if other != name and name_key(other) == key), None)


def valid_sha256(value: str) -> bool:
    return _SHA256.fullmatch(value) is not None


def duplicate_name(names: Iterable[str]) -> str | None:
    """Why these names cannot be one job's: the first given twice, or two that differ only in case
    or normalisation; None when they can."""
    seen: dict[str, str] = {}
    for name in names:
        key = name_key(name)
        earlier = seen.get(key)
        seen.setdefault(key, name)
        if earlier is None:
            continue
        if earlier == name:
            return f"two files are named {name!r}: a job's file names differ"
        return (
            f"{earlier!r} and {name!r} differ only in case or normalisation: a job's file names differ more"
        )
    return None


def repr_digest(sha256: str) -> str:
    """The ``Repr-Digest`` / ``Content-Digest`` header value of bytes with this SHA-256 (hex):
    ``sha-256=:<base64>:``."""
    return f"sha-256=:{base64.b64encode(bytes.fromhex(sha256)).decode()}:"


def sha256_of_digest(header: str) -> str | None:
    """The SHA-256 (hex) a ``Repr-Digest`` / ``Content-Digest`` header names, None when it names
    none (other algorithms only); ValueError when its ``sha-256`` entry is malformed."""
    for entry in header.split(","):
        key, _, value = entry.strip().partition("=")
        if key.strip().lower() != "sha-256":
            continue
        value = value.strip()
        try:
            if not (len(value) > 2 and value[0] == value[-1] == ":"):
                raise ValueError
            raw = base64.b64decode(value[1:-1], validate=True)
        except ValueError:
            raise ValueError(f"sha-256 digest {value!r} is not :base64: of 32 bytes") from None
        if len(raw) != 32:
            raise ValueError(f"sha-256 digest {value!r} is not :base64: of 32 bytes")
        return raw.hex()
    return None

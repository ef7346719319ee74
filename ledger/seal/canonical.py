"""Canonical JSON (RFC 8785, JCS): the one byte form of a JSON value, and strict parsing into it.

:func:`dumps` is the ``rfc8785`` package's encoding.  A sealer encodes every event, so
:func:`loads_plain` also tells whether a parsed value is *plain* — no float, no integer beyond
±(2**53 - 1), no object key with a character outside the Basic Multilingual Plane — and for a plain
value the standard library's encoder (keys sorted, no whitespace, non-ASCII as is) writes the same
bytes at a fraction of the cost: its escapes are JCS's, and without such keys sorting by code point
is sorting by UTF-16 code unit.  A test holds the two equal on arbitrary values.

Parsing refuses what has no canonical form or two meanings: ``NaN`` and ``Infinity``, and an object
with a key twice (parsers differ on which one wins).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

import rfc8785

from jobledger.ledger.seal.errors import Malformed

#: The integers a JSON number holds exactly (an IEEE 754 double), as RFC 8785 reads I-JSON.
MAX_INT = 2**53 - 1


class _NotPlain(Exception):
    """Raised inside a plain parse: the value needs the reference encoder."""


def dumps(value: Any, plain: bool = False) -> bytes:
    """The canonical bytes of ``value``; ``plain`` (see :func:`loads_plain`) takes the fast encoder.
    :class:`Malformed` for what JCS cannot encode (a lone surrogate, a float that is not finite, an
    integer out of range)."""
    try:
        return plain_text(value).encode("utf-8") if plain else rfc8785.dumps(value)
    except (ValueError, TypeError) as error:
        raise Malformed(f"not encodable as canonical JSON: {error}") from error


def plain_text(value: Any) -> str:
    """The canonical JSON of a plain value, as text (the standard library's encoder)."""
    return _FAST.encode(value)


#: A string as a JSON string the way JCS writes it: only ``"``, ``\\`` and control characters escaped.
quote: Callable[[str], str] = encode_basestring


def loads(text: str | bytes, what: str) -> Any:
    """A JSON value from ``text`` (UTF-8 if bytes), refusing duplicate keys and ``NaN``/``Infinity``."""
    return _parse(_STRICT, text, what)


def loads_plain(text: str | bytes, what: str) -> tuple[Any, bool]:
    """:func:`loads`, and whether the value is plain: what :func:`dumps` may encode the fast way."""
    try:
        return _parse(_PLAIN, text, what), True
    except _NotPlain:
        return _parse(_STRICT, text, what), False


def _parse(decoder: json.JSONDecoder, text: str | bytes, what: str) -> Any:
    try:
        return decoder.decode(text.decode("utf-8") if isinstance(text, bytes) else text)
    except (ValueError, RecursionError) as error:
        raise Malformed(f"{what} is not JSON: {error}") from error


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r:.80} appears twice in an object")
            seen.add(key)
    return obj


def _plain_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = _object(pairs)
    for key in obj:
        if not key.isascii() and max(key) > "\uffff":
            raise _NotPlain
    return obj


def _plain_int(digits: str) -> int:
    number = int(digits)
    if len(digits) > 15 and not -MAX_INT <= number <= MAX_INT:
        raise _NotPlain
    return number


def _not_plain(_: str) -> float:
    raise _NotPlain


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


_STRICT = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)
_PLAIN = json.JSONDecoder(
    object_pairs_hook=_plain_object, parse_int=_plain_int, parse_float=_not_plain, parse_constant=_constant
)
_FAST = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))

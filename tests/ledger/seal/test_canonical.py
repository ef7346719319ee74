"""Canonical JSON: RFC 8785's examples and number samples, and the fast encoder held equal to the
reference (``rfc8785``) on arbitrary values wherever a value is plain."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.ledger.seal.canonical import dumps, loads, loads_plain
from jobledger.ledger.seal.errors import Malformed
from tests.ledger.seal.tree_support import data

EXAMPLES = data("rfc8785_examples.json")["cases"]

#: IEEE 754 doubles (as hex) and how RFC 8785 writes them (its Appendix B, and the JCS reference
#: implementation's own checks); None: not representable (NaN, infinities).
NUMBERS = {
    "0000000000000000": "0",
    "8000000000000000": "0",
    "0000000000000001": "5e-324",
    "8000000000000001": "-5e-324",
    "7fefffffffffffff": "1.7976931348623157e+308",
    "ffefffffffffffff": "-1.7976931348623157e+308",
    "4340000000000000": "9007199254740992",
    "c340000000000000": "-9007199254740992",
    "4340000000000001": "9007199254740994",
    "4340000000000002": "9007199254740996",
    "4430000000000000": "295147905179352830000",
    "44b52d02c7e14af5": "9.999999999999997e+22",
    "44b52d02c7e14af6": "1e+23",
    "44b52d02c7e14af7": "1.0000000000000001e+23",
    "444b1ae4d6e2ef4e": "999999999999999700000",
    "444b1ae4d6e2ef4f": "999999999999999900000",
    "444b1ae4d6e2ef50": "1e+21",
    "3eb0c6f7a0b5ed8c": "9.999999999999997e-7",
    "3eb0c6f7a0b5ed8d": "0.000001",
    "41b3de4355555553": "333333333.3333332",
    "41b3de4355555554": "333333333.33333325",
    "41b3de4355555555": "333333333.3333333",
    "41b3de4355555556": "333333333.3333334",
    "41b3de4355555557": "333333333.33333343",
    "becbf647612f3696": "-0.0000033333333333333333",
    "43143ff3c1cb0959": "1424953923781206.2",
    "7fffffffffffffff": None,
    "7ff0000000000000": None,
    "fff0000000000000": None,
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_rfcs_examples(name: str) -> None:
    case = EXAMPLES[name]
    want = bytes.fromhex(case["output_hex"])
    value, plain = loads_plain(case["input"], name)
    assert dumps(value) == want
    assert dumps(value, plain=plain) == want
    # structures and values hold floats, weird a key outside the Basic Multilingual Plane
    assert plain == (name not in ("structures", "values", "weird"))


@pytest.mark.parametrize(("ieee", "written"), sorted(NUMBERS.items()))
def test_numbers_as_the_rfc_writes_them(ieee: str, written: str | None) -> None:
    number = struct.unpack(">d", bytes.fromhex(ieee))[0]
    if written is None:
        with pytest.raises(Malformed):
            dumps(number)
        return
    assert dumps(number) == written.encode()
    assert float(written) == number or (number == 0 and written == "0")


def test_integers_beyond_2_53_are_not_canonical() -> None:
    assert dumps(2**53 - 1) == b"9007199254740991"
    for text in ("9007199254740992", "-9007199254740992", "123456789012345678901234567890"):
        value, plain = loads_plain(text, "a number")
        assert not plain
        with pytest.raises(Malformed):
            dumps(value)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":1}',
        '{"a":{"b":1,"b":2}}',
        "NaN",
        '{"a":Infinity}',
        "[-Infinity]",
        "{",
        "",
        "\ufeff{}",
        "[1,]",
    ],
)
def test_what_has_no_canonical_form_does_not_parse(text: str) -> None:
    with pytest.raises(Malformed):
        loads(text, "a test")
    with pytest.raises(Malformed):
        loads_plain(text, "a test")


def test_bytes_are_utf8_only() -> None:
    assert loads('"é"'.encode(), "utf-8") == "é"
    for bad in (b'"\xff"', '"é"'.encode("utf-16"), '"é"'.encode("latin-1")):
        with pytest.raises(Malformed):
            loads(bad, "not utf-8")


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(Malformed):
        loads("[" * 100_000 + "]" * 100_000, "deep")


KEYS = st.text(st.characters(codec="utf-8"), max_size=4) | st.sampled_from(["\ue000", "\U0001f600", "a", "é"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.text(st.characters(blacklist_categories=()), max_size=3)  # lone surrogates too
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


def reference(value: Any) -> bytes | None:
    try:
        return rfc8785.dumps(value)
    except (ValueError, TypeError):
        return None


def plain_value(value: Any) -> bool:
    """Plain as defined: no float, no integer beyond 2**53 - 1, no key outside the BMP."""
    if isinstance(value, float):
        return False
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) <= 2**53 - 1
    if isinstance(value, list):
        return all(plain_value(v) for v in value)
    if isinstance(value, dict):
        return all(max(k, default="") <= "\uffff" and plain_value(v) for k, v in value.items())
    return True


@settings(max_examples=250, deadline=None)
@given(VALUES)
def test_the_fast_encoder_is_the_reference_on_plain_values(value: Any) -> None:
    text = json.dumps(value)  # escapes what is not ASCII, lone surrogates included
    parsed, plain = loads_plain(text, "generated")
    assert plain == plain_value(parsed)
    assert loads(text, "generated") == parsed
    want = reference(parsed)
    if want is None:
        with pytest.raises(Malformed):
            dumps(parsed, plain=plain)
    else:
        assert dumps(parsed, plain=plain) == want
    if plain and want is not None:
        assert dumps(parsed, plain=True) == dumps(parsed)

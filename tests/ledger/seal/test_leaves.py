"""An event's leaf: the bytes of real events of each shape, read back from a real server's stream, and
the strictness of both sides (an entry that is not well formed has no leaf; leaf bytes not in their
one canonical form do not decode)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import rfc8785
from freezegun.api import FrozenDateTimeFactory
from hypothesis import given, settings
from hypothesis import strategies as st

from jobledger.ledger.events import LOCAL, decode_entry
from jobledger.ledger.runner import Ledger
from jobledger.ledger.seal.errors import Malformed
from jobledger.ledger.seal.leaves import LOCAL as LEAF_LOCAL
from jobledger.ledger.seal.leaves import leaf_bytes, parse_leaf
from jobledger.ledger.tokens import create_token
from tests.support.ledger import START_MS, create, fetch_one, put_queue, update

QUEUE_SETTINGS = (
    '{"expires_after":300000,"heartbeat_timeout":0,"max_file_size":1073741824,"max_job_bytes":4294967296,'
    '"max_queued_time":0,"max_running":0,"max_running_per_key":0,"no_retry_on":[],"paused":false,'
    '"priority":0,"retries":0,"retry_delays":[],"retry_on":[],"timeout":10000}'
)

#: The leaf of each event the test appends, ``{id}`` standing for its stream id (the server's clock),
#: at the frozen clock's 2030-01-01 (1893456000000 ms).
EXPECTED = [
    # a queue's event: a queue, no job
    '{"actor":"local","at":1893456000000,"data":' + QUEUE_SETTINGS + ',"id":"{id}","job":null,"queue":"q",'
    '"type":"queue_created","v":1}',
    # a job's: user JSON stays the text the producer sent (a string in data), UTF-8 as is
    '{"actor":"local","at":1893456000000,"data":{"expires_after":300000,'
    '"input":"{\\"invoice\\":7,\\"note\\":\\"café\\"}","tags":["eu"],"timeout":10000},"id":"{id}",'
    '"job":1,"queue":"q","type":"job_created","v":1}',
    # an actor other than local
    '{"actor":"worker 7","at":1893456000000,"data":{"attempt":1},"id":"{id}","job":1,"queue":"q",'
    '"type":"job_started","v":1}',
    '{"actor":"local","at":1893456000000,"data":{"output":"{\\"ok\\":true}"},"id":"{id}","job":1,"queue":"q",'
    '"type":"job_completed","v":1}',
    # neither job nor queue
    '{"actor":"local","at":1893456000000,"data":{"digest":"' + "ab" * 32 + '","name":"ci","scopes":["read"]},'
    '"id":"{id}","job":null,"queue":null,"type":"token_created","v":1}',
    # written before actors and versions: it reads local and 1; its data as stored, not upcast
    '{"actor":"local","at":5,"data":{"ended":false,"reason":"heartbeat"},"id":"{id}","job":1,"queue":"q",'
    '"type":"job_timed_out","v":1}',
]


def test_the_leaves_of_real_events(ledger: Ledger, frozen: FrozenDateTimeFactory) -> None:
    assert START_MS == 1893456000000
    put_queue(ledger, "q", timeout="10s")
    job = create(ledger, input={"invoice": 7, "note": "café"}, tags=["eu"])
    fetch_one(ledger.as_actor("worker 7"))
    update(ledger, job, status="completed", output={"ok": True})
    ledger.run(create_token("ci", ["read"], "ab" * 32))
    old = {
        "type": "job_timed_out",
        "at": "5",
        "job": "1",
        "queue": "q",
        "data": '{"reason": "heartbeat", "ended": false}',
    }
    ledger.client.xadd(ledger.keys.events, old)  # type: ignore[arg-type]
    entries = ledger.client.xrange(ledger.keys.events)
    assert len(entries) == len(EXPECTED)
    for (entry_id, fields), expected in zip(entries, EXPECTED, strict=True):
        leaf = leaf_bytes(entry_id, fields)
        assert leaf == expected.replace("{id}", entry_id.decode()).encode()
        decoded, event = parse_leaf(leaf), decode_entry(entry_id, fields)
        assert (decoded.id, decoded.type, decoded.at, decoded.job, decoded.queue, decoded.actor) == (
            event.id, event.type, event.at, event.job, event.queue, event.actor
        )  # fmt: skip
        assert leaf_bytes(entry_id.decode(), {k.decode(): v.decode() for k, v in fields.items()}) == leaf


def test_the_actor_of_an_entry_without_one_is_the_ledgers_local() -> None:
    assert LEAF_LOCAL == LOCAL


def entry(**fields: str) -> dict[str, str]:
    return {"type": "job_started", "v": "1", "at": "1700000000000", "job": "7", "queue": "q", **fields}


@pytest.mark.parametrize(
    ("entry_id", "fields", "why"),
    [
        ("1-0", entry(worker="w1"), "a field no event has"),
        ("1-0", {"at": "1"}, "no type"),
        ("1-0", {"type": "job_started"}, "no at"),
        ("1-0", entry(at="+1"), "a sign"),
        ("1-0", entry(at="01"), "a leading zero"),
        ("1-0", entry(at=" 1"), "a space"),
        ("1-0", entry(at="1_000"), "an underscore"),
        ("1-0", entry(at="1e3"), "an exponent"),
        ("1-0", entry(at="9007199254740992"), "2**53"),
        ("1-0", entry(v=""), "an empty v"),
        ("1-0", entry(v="0"), "version 0"),
        ("1-0", entry(job="seven"), "a job that is not a number"),
        ("1-0", entry(data="[1]"), "data not an object"),
        ("1-0", entry(data="{"), "data not JSON"),
        ("1-0", entry(data='{"a":1,"a":2}'), "a key twice"),
        ("1-0", entry(data='{"a":NaN}'), "NaN"),
        ("1-0", entry(data='{"a":"\\ud800"}'), "a lone surrogate"),
        ("1-0", entry(data='{"a":123456789012345678901}'), "an integer beyond 2**53"),
        ("1", entry(), "an id without its sequence"),
        ("01-0", entry(), "an id with a leading zero"),
    ],
)
def test_an_entry_that_is_not_well_formed_has_no_leaf(
    entry_id: str, fields: dict[str, str], why: str
) -> None:
    with pytest.raises(Malformed):
        leaf_bytes(entry_id, fields)
        pytest.fail(why)


def test_an_entry_that_is_not_utf8_has_no_leaf() -> None:
    with pytest.raises(Malformed):
        leaf_bytes(b"1-0", {b"type": b"job_started", b"at": b"1", b"data": b'{"a":"\xff"}'})


def test_an_empty_job_or_queue_reads_null_and_floats_in_data_are_canonical() -> None:
    leaf = leaf_bytes("1-0", entry(job="", queue="", actor="", data='{"b":1.50,"a":1E2}'))
    assert leaf == (
        b'{"actor":"local","at":1700000000000,"data":{"a":100,"b":1.5},"id":"1-0","job":null,"queue":null,'
        b'"type":"job_started","v":1}'
    )


GOOD = (
    b'{"actor":"local","at":1700000000000,"data":{"attempt":1},"id":"1700000000000-0","job":7,"queue":"q",'
    b'"type":"job_started","v":1}'
)


def test_a_leaf_decodes() -> None:
    leaf = parse_leaf(GOOD)
    assert (leaf.id, leaf.type, leaf.v, leaf.at, leaf.job, leaf.queue, leaf.actor, leaf.data) == (
        "1700000000000-0", "job_started", 1, 1_700_000_000_000, 7, "q", "local", {"attempt": 1}
    )  # fmt: skip
    assert leaf.raw == GOOD and parse_leaf(GOOD.decode()) == leaf


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (GOOD + b"\n", "a trailing newline"),
        (b" " + GOOD, "a leading space"),
        (GOOD.replace(b',"at"', b', "at"'), "a space"),
        (
            GOOD.replace(b'"actor":"local",', b"").replace(b'"v":1', b'"v":1,"actor":"local"'),
            "keys out of order",
        ),
        (GOOD.replace(b'"v":1', b'"v":1,"w":2'), "a key too many"),
        (GOOD.replace(b'"queue":"q",', b""), "a key missing"),
        (GOOD.replace(b'"v":1', b'"v":"1"'), "v a string"),
        (GOOD.replace(b'"v":1', b'"v":0'), "v 0"),
        (GOOD.replace(b'"job":7', b'"job":"7"'), "job a string"),
        (GOOD.replace(b'"job":7', b'"job":true'), "job a boolean"),
        (GOOD.replace(b'"job":7', b'"job":7.5'), "job a float"),
        (GOOD.replace(b'"queue":"q"', b'"queue":""'), "an empty queue"),
        (GOOD.replace(b'"data":{"attempt":1}', b'"data":[]'), "data a list"),
        (GOOD.replace(b'"id":"1700000000000-0"', b'"id":"17"'), "not a stream id"),
        (GOOD.replace(b'"actor":"local"', b'"actor":"caf\\u00e9"'), "an escape JCS does not write"),
        (GOOD.replace(b'"actor":"local"', b'"actor":"\xff"'), "not UTF-8"),
        (GOOD.replace(b'{"attempt":1}', b'{"attempt":1,"attempt":1}'), "a key twice"),
        (b"\xef\xbb\xbf" + GOOD, "a byte order mark"),
        (b"[]", "not an object"),
        (b"", "nothing"),
    ],
)
def test_leaf_bytes_not_in_their_one_form_do_not_decode(bad: bytes, why: str) -> None:
    with pytest.raises(Malformed):
        parse_leaf(bad)
        pytest.fail(why)


def test_every_decoded_leaf_is_its_own_bytes_again(ledger: Ledger) -> None:
    """Leaves of a stream of many kinds of events decode and give back their bytes."""
    put_queue(ledger, "q")
    for i in range(5):
        job = create(ledger, input={"n": i, "s": "\u2028\u00e9\U0001f600"}, tags=[f"t{i}"], priority=i)
        fetch_one(ledger)
        update(ledger, job, status="failed" if i % 2 else "completed", output=[i, None, "x"])
    entries: list[Any] = ledger.client.xrange(ledger.keys.events)
    for entry_id, fields in entries:
        leaf = leaf_bytes(entry_id, fields)
        assert parse_leaf(leaf).raw == leaf


TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8)
DATA = st.dictionaries(
    st.text(st.characters(codec="utf-8"), max_size=4),
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text(max_size=6)
    | st.lists(st.integers(-9, 9)),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(
    type_=TEXT, actor=TEXT | st.just(""), queue=TEXT | st.just(""), data=DATA,
    numbers=st.tuples(st.integers(0, 2**53 - 1), st.integers(1, 9), st.integers(0, 2**53 - 1)),
)  # fmt: skip
def test_a_leaf_is_the_reference_encoding_of_its_entry(
    type_: str, actor: str, queue: str, data: dict[str, Any], numbers: tuple[int, int, int]
) -> None:
    """The leaf a sealer writes key by key is what the reference encoder writes of the same object."""
    at, v, job = numbers
    fields = {"type": type_, "v": str(v), "at": str(at), "job": str(job) if job else "", "queue": queue,
              "actor": actor, "data": json.dumps(data)}  # fmt: skip
    want: dict[str, Any] = {"id": "5-1", "type": type_, "v": v, "at": at, "job": job or None,
                            "queue": queue or None, "actor": actor or "local", "data": data}  # fmt: skip
    leaf = leaf_bytes("5-1", fields)
    assert leaf == rfc8785.dumps(want)
    assert parse_leaf(leaf).raw == leaf  # every leaf a sealer makes, a checker reads back

"""jobledger.runtime.config reads a configuration that needs no converting without pydantic: what it
takes that way must be what pydantic makes of it, and everything else must go to pydantic."""

from __future__ import annotations

import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from jobledger.runtime.config import Config, ConfigError, _exact, _model, _section_of, config_from

#: Values of every kind a file, a variable or a flag can give, right and wrong for each field.
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70_000),
    st.sampled_from([0, 1, 16, 17, 65_535, 65_536, 10**9]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", " ", "8023", "30s", "1h15m5s", "256KiB", "2MB", "warn", "INFO", "json", " Text ",
                     "always", "everysec", "a, b", "ns", "{x}", "redis://h:6379", "~/data", "x y", "1.5"]),
    st.builds(Path, st.sampled_from(["data", "~/d", "/tmp/x", "."])),
    st.lists(st.sampled_from(["a", "b", 1]), max_size=3),
    st.dictionaries(st.sampled_from(["endpoint", "region", 2]), st.sampled_from(["x", 3]), max_size=2),
)  # fmt: skip


SECTIONS = {
    name: kind for name, kind in typing.get_type_hints(Config).items() if name not in ("queue", "launcher")
}
FIELDS = sorted({item.name for section in SECTIONS.values() for item in fields(section)})
RAW = st.dictionaries(
    st.sampled_from([*SECTIONS, "queue", "launcher", "nosuch"]),
    st.one_of(st.integers(), st.dictionaries(st.sampled_from([*FIELDS, "nosuch"]), VALUES, max_size=6)),
    max_size=4,
)


def _pydantic(raw: dict[str, Any]) -> Config | None:
    try:
        return _section_of(Config, _model(Config).model_validate(raw))
    except ValidationError:
        return None


@settings(max_examples=600, deadline=None)
@given(RAW)
def test_what_is_taken_as_it_is_is_what_pydantic_makes_of_it(raw: dict[str, Any]) -> None:
    exact = _exact(Config, raw)
    if exact is not None:
        assert exact == _pydantic(raw)


@pytest.mark.parametrize(
    "raw",
    [
        {"server": {"port": 8023, "host": "0.0.0.0", "log_level": "warning", "auth": True}},
        {"server": {"shutdown_timeout": "30s", "max_body_size": "256KiB", "allowed_hosts": "a.example, b"}},
        {"redis": {"url": "redis://127.0.0.1:6379/5", "key_namespace": "bench"}},
        {"embedded": {"data_dir": Path("d"), "appendfsync": "always"}, "ledger": {"archive_after": "7d"}},
        {"blobs": {"url": "s3://b/p", "options": {"region": "x"}}, "queue": {"jobs": {"timeout": "1m"}}},
        {},
    ],
)  # fmt: skip
def test_a_configuration_with_nothing_to_convert_is_taken_as_it_is(raw: dict[str, Any]) -> None:
    exact = _exact(Config, raw)
    assert exact is not None
    assert exact == _pydantic(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"server": {"port": 70_000}}, "server.port: Input should be less than or equal to 65535"),
        ({"server": {"port": "x"}}, "server.port: Input should be a valid integer"),
        ({"server": {"prot": 1}}, "server.prot: Extra inputs are not permitted"),
        ({"redis": {"partitions": 0}}, "redis.partitions: Input should be greater than or equal to 1"),
        ({"redis": {"key_namespace": "{a}"}}, "redis.key_namespace: '{a}' is not a namespace"),
        ({"server": {"log_level": "loud"}}, "server.log_level: 'loud' is not a log level"),
        ({"embedded": {"appendfsync": "no"}}, "embedded.appendfsync: Input should be 'everysec' or 'always'"),
    ],
)  # fmt: skip
def test_what_cannot_be_taken_as_it_is_gets_pydantic_s_message(raw: dict[str, Any], message: str) -> None:
    assert _exact(Config, raw) is None
    with pytest.raises(ConfigError) as error:
        config_from(raw)
    assert str(error.value).startswith(f"invalid configuration: {message}")


def test_text_a_field_does_not_hold_as_it_is_is_converted_by_pydantic() -> None:
    assert _exact(Config, {"server": {"port": "9000"}}) is None
    assert config_from({"server": {"port": "9000"}}).server.port == 9000

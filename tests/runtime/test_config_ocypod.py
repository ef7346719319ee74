"""jobledger.runtime.config reads an Ocypod deployment's file as Ocypod does: ``${VAR}`` interpolated on
the text
before TOML parsing (so it works outside quotes, in table names, and inside strings whatever the
value), keys it does not know named in a warning and ignored, and ``key_namespace = ""``."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobledger.ledger.keys import DEFAULT_NAMESPACE
from jobledger.runtime.config import ConfigError, interpolate, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ocypod.toml"
    path.write_text(text)
    return path


def test_interpolation_outside_quotes_gives_a_number(tmp_path: Path) -> None:
    path = write(tmp_path, "[server]\nport = ${OCYPOD_PORT=8023}\n")
    assert load_config(path, environ={}).server.port == 8023
    assert load_config(path, environ={"OCYPOD_PORT": "9000"}).server.port == 9000


def test_interpolation_names_tables(tmp_path: Path) -> None:
    path = write(tmp_path, '[queue.${QUEUE_PREFIX=}default]\ntimeout = "1m"\n')
    assert list(load_config(path, environ={}).queue) == ["default"]
    assert list(load_config(path, environ={"QUEUE_PREFIX": "prod_"}).queue) == ["prod_default"]


@pytest.mark.parametrize("value", ['pa"ss', "back\\slash", "two\nlines", "tab\there", "ünï ${X}"])
def test_a_value_inside_a_string_stays_that_string(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, '[redis]\nurl = "redis://:${PASSWORD}@cache:6379/0"\n')
    assert load_config(path, environ={"PASSWORD": value}).redis.url == f"redis://:{value}@cache:6379/0"


def test_multi_line_and_literal_strings(tmp_path: Path) -> None:
    text = "[server]\nhost = '''${A}'''\n[redis]\nurl = \"\"\"redis://${B}\"\"\"\n"
    config = load_config(write(tmp_path, text), environ={"A": "10.0.0.1", "B": 'h"o\\st'})
    assert (config.server.host, config.redis.url) == ("10.0.0.1", 'redis://h"o\\st')


def test_a_quote_cannot_go_into_a_literal_string(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"line 2: the value of A cannot go inside a literal string"):
        load_config(write(tmp_path, "[server]\nhost = '${A}'\n"), environ={"A": "it's"})


def test_dollar_dollar_writes_the_text_and_comments_are_left_alone(tmp_path: Path) -> None:
    text = '# ${UNSET} in a comment is no error\n[server]\nhost = "$${HOST}" # ${ALSO_UNSET}\n'
    assert load_config(write(tmp_path, text), environ={}).server.host == "${HOST}"
    assert interpolate('a = "\\"${X}"', {"X": "1"}) == 'a = "\\"1"'  # an escaped quote does not end it


def test_a_value_that_breaks_the_toml_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[server]\nport = ${PORT}\n"), environ={"PORT": "eighty"})


def test_unknown_keys_are_named_in_a_warning_and_ignored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = '[server]\nhots = "typo"\nport = 8100\n[extra]\na = 1\n[queue.q]\ntimeout = "1m"\ncolour = "red"\n'
    with caplog.at_level("WARNING", logger="jobledger.config"):
        config = load_config(write(tmp_path, text), environ={})
    assert config.server.port == 8100
    assert config.queue == {"q": {"timeout": "1m"}}
    warned = " ".join(r.getMessage() for r in caplog.records)
    for key in ("server.hots", "extra", "queue.q.colour"):
        assert f"unknown key {key}, ignored" in warned


def test_empty_key_namespace_is_the_default_namespace(tmp_path: Path) -> None:
    """Ocypod's default is "" (no prefix); an empty hash tag holds no slot, so it means the default."""
    config = load_config(write(tmp_path, '[redis]\nkey_namespace = ""\n'), environ={})
    assert config.redis.key_namespace == DEFAULT_NAMESPACE

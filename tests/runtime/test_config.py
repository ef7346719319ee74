"""jobledger.runtime.config: defaults, the TOML file, interpolation, precedence and error messages."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import pytest

from jobledger.runtime.config import ENV_VARS, Config, ConfigError, load_config, parse_size


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "jobledger.toml"
    path.write_text(text)
    return path


def test_defaults() -> None:
    config = load_config(None, environ={})
    assert config.server.host == "127.0.0.1"
    assert config.server.port == 8023
    assert config.server.max_body_size == 262_144
    assert config.server.shutdown_timeout == 30_000
    assert config.server.timeout_check_interval == 30_000
    assert config.server.retry_check_interval == 60_000
    assert config.server.expiry_check_interval == 300_000
    assert config.server.next_job_delay == 0
    assert config.server.read_only is False
    assert config.redis.url is None
    assert config.redis.key_namespace == "jobledger"
    assert config.embedded.data_dir == Path("./jobledger-data")
    assert config.embedded.appendfsync == "everysec"
    assert config.queue == {}


def test_toml_sections(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [server]
        host = "0.0.0.0"
        port = 9000
        max_body_size = "1MB"
        shutdown_timeout = "1m"
        timeout_check_interval = "1h15m5s"
        retry_check_interval = 1.5
        expiry_check_interval = "1.5h"
        next_job_delay = "5s"
        read_only = true

        [redis]
        url = "redis://127.0.0.1:6379/2"
        key_namespace = "prod"

        [embedded]
        data_dir = "/var/lib/jobledger"
        appendfsync = "always"

        [queue.emails]
        timeout = "2m"
        retries = 3
        retry_delays = ["10s", "1m"]
        """,
    )
    config = load_config(path, environ={})
    assert (config.server.host, config.server.port, config.server.read_only) == ("0.0.0.0", 9000, True)
    assert config.server.max_body_size == 1_000_000
    assert config.server.shutdown_timeout == 60_000
    assert config.server.timeout_check_interval == 4_505_000
    assert config.server.retry_check_interval == 1_500
    assert config.server.expiry_check_interval == 5_400_000
    assert config.server.next_job_delay == 5_000
    assert config.redis.url == "redis://127.0.0.1:6379/2"
    assert config.redis.key_namespace == "prod"
    assert config.embedded.data_dir == Path("/var/lib/jobledger")
    assert config.embedded.appendfsync == "always"
    assert config.queue == {"emails": {"timeout": "2m", "retries": 3, "retry_delays": ["10s", "1m"]}}


def test_ocypod_config_file_is_accepted(tmp_path: Path) -> None:
    """Ocypod's documented example, with its `threads` fields, loads unchanged."""
    path = write(
        tmp_path,
        """
        [server]
        host = "0.0.0.0"
        port = 8023
        threads = 2
        max_body_size = "10MiB"
        timeout_check_interval = "1m"
        retry_check_interval = "30s"
        expiry_check_interval = "1h"
        next_job_delay = "5s"

        [redis]
        url = "redis://:my_password@example.com:6379/my_db"
        threads = 1
        """,
    )
    config = load_config(path, environ={})
    assert config.server.max_body_size == 10 * 1024 * 1024
    assert config.server.expiry_check_interval == 3_600_000


@pytest.mark.parametrize(
    ("text", "size"),
    [(262144, 262144), ("256kB", 256_000), ("256KiB", 262_144), ("1MB", 1_000_000),
     ("1 MiB", 1_048_576), ("512", 512), ("1.5kb", 1500)],
)  # fmt: skip
def test_sizes(text: object, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "5 parsecs", "0", -1, True])
def test_bad_sizes(text: object) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


def test_interpolation(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [server]
        host = "${HOST}"
        port = "${PORT=8100}"
        [redis]
        url = "redis://${REDIS_HOST}:${REDIS_PORT=6379}/0"
        [queue.q]
        retry_on = ["${KIND=default-kind}", "pa$$word", "$${NOT_INTERPOLATED}"]
        """,
    )
    config = load_config(path, environ={"HOST": "10.0.0.1", "REDIS_HOST": "cache"})
    assert config.server.host == "10.0.0.1"
    assert config.server.port == 8100
    assert config.redis.url == "redis://cache:6379/0"
    assert config.queue["q"]["retry_on"] == ["default-kind", "pa$$word", "${NOT_INTERPOLATED}"]


def test_interpolation_prefers_the_environment_to_the_default(tmp_path: Path) -> None:
    path = write(tmp_path, '[server]\nport = "${PORT=8100}"\n')
    assert load_config(path, environ={"PORT": "8200"}).server.port == 8200


def test_empty_redis_url_means_embedded(tmp_path: Path) -> None:
    path = write(tmp_path, '[redis]\nurl = "${REDIS_URL=}"\n')
    assert load_config(path, environ={}).redis.url is None


def test_missing_variable_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, '[redis]\nurl = "redis://${REDIS_HOST}/0"\n')
    with pytest.raises(ConfigError) as error:
        load_config(path, environ={})
    assert "REDIS_HOST" in str(error.value)
    assert "line 2" in str(error.value)


def test_precedence_flags_over_environment_over_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        [server]
        host = "file-host"
        port = 1111
        timeout_check_interval = "1s"
        [redis]
        key_namespace = "file-ns"
        """,
    )
    environ = {"JOBLEDGER_PORT": "2222", "JOBLEDGER_NAMESPACE": "env-ns", "JOBLEDGER_HOST": ""}
    config = load_config(path, {"redis.key_namespace": "flag-ns", "server.host": None}, environ)
    assert config.server.host == "file-host"  # empty variable and None flag are "not given"
    assert config.server.port == 2222  # environment over file
    assert config.redis.key_namespace == "flag-ns"  # flag over environment
    assert config.server.timeout_check_interval == 1_000  # file over default


def test_environment_variables(tmp_path: Path) -> None:
    environ = {
        "JOBLEDGER_HOST": "0.0.0.0",
        "JOBLEDGER_PORT": "9999",
        "JOBLEDGER_REDIS_URL": "redis://elsewhere:6379",
        "JOBLEDGER_NAMESPACE": "ns",
        "JOBLEDGER_DATA_DIR": str(tmp_path),
        "JOBLEDGER_APPENDFSYNC": "always",
        "JOBLEDGER_MAX_BODY_SIZE": "64KiB",
        "JOBLEDGER_TIMEOUT_CHECK_INTERVAL": "10s",
        "JOBLEDGER_RETRY_CHECK_INTERVAL": "20s",
        "JOBLEDGER_EXPIRY_CHECK_INTERVAL": "1h",
        "JOBLEDGER_READ_ONLY": "true",
    }
    config = load_config(None, environ=environ)
    assert config.server.host == "0.0.0.0"
    assert config.server.port == 9999
    assert config.redis.url == "redis://elsewhere:6379"
    assert config.redis.key_namespace == "ns"
    assert config.embedded.data_dir == tmp_path
    assert config.embedded.appendfsync == "always"
    assert config.server.max_body_size == 65_536
    assert config.server.timeout_check_interval == 10_000
    assert config.server.retry_check_interval == 20_000
    assert config.server.expiry_check_interval == 3_600_000
    assert config.server.read_only is True


def test_every_environment_variable_names_a_field() -> None:
    sections = typing.get_type_hints(Config)
    for var, dotted in ENV_VARS.items():
        section, field = dotted.split(".")
        assert dataclasses.is_dataclass(sections[section]), var
        assert field in typing.get_type_hints(sections[section]), var


@pytest.mark.parametrize(
    ("toml", "field"),
    [
        ('[embedded]\nappendfsync = "no"\n', "embedded.appendfsync"),
        ('[server]\ntimeout_check_interval = "soon"\n', "server.timeout_check_interval"),
        ('[server]\nshutdown_timeout = "-5s"\n', "server.shutdown_timeout"),
        ('[server]\nmax_body_size = "huge"\n', "server.max_body_size"),
        ("[server]\nport = 70000\n", "server.port"),
        ('[redis]\nkey_namespace = "a{b}"\n', "redis.key_namespace"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, toml: str, field: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, toml), environ={})
    assert field in str(error.value)
    assert "jobledger.toml" in str(error.value)


def test_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(ConfigError) as error:
        load_config(None, environ={"JOBLEDGER_APPENDFSYNC": "sometimes"})
    assert "embedded.appendfsync" in str(error.value)
    assert "JOBLEDGER_APPENDFSYNC" in str(error.value)


def test_bad_override_names_the_command_line() -> None:
    with pytest.raises(ConfigError) as error:
        load_config(None, {"server.expiry_check_interval": "often"}, environ={})
    assert "server.expiry_check_interval" in str(error.value)
    assert "command line" in str(error.value)


def test_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "absent.toml", environ={})
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[server\n"), environ={})


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_ledger_retention(tmp_path: Path) -> None:
    defaults = Config().ledger
    assert (defaults.archive_after, defaults.archive_check_interval) == (7 * 86_400_000, 3_600_000)
    path = tmp_path / "jobledger.toml"
    path.write_text('[ledger]\narchive_after = "30d"\narchive_dir = "~/archive"\n'
                    'archive_check_interval = "10m"\n')  # fmt: skip
    config = load_config(path, environ={})
    assert config.ledger.archive_after == 30 * 86_400_000
    assert config.ledger.archive_dir == Path("~/archive").expanduser()
    assert config.ledger.archive_check_interval == 600_000
    environ = {"JOBLEDGER_ARCHIVE_AFTER": "1w", "JOBLEDGER_ARCHIVE_DIR": str(tmp_path),
               "JOBLEDGER_ARCHIVE_CHECK_INTERVAL": "1h"}  # fmt: skip
    config = load_config(path, environ=environ)
    assert (config.ledger.archive_after, config.ledger.archive_dir) == (7 * 86_400_000, tmp_path)
    assert config.ledger.archive_check_interval == 3_600_000
    with pytest.raises(ConfigError, match=r"ledger\.archive_after"):
        load_config(None, {"ledger.archive_after": "soon"}, environ={})

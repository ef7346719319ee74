"""Ocypod's example configuration files start a ``jobledger serve`` process: the text of
``examples/ocypod-redis-docker/ocypod.toml`` and of the examples in ``docs/configuration.md``, from
github.com/davechallis/ocypod (Apache-2.0), copied here unchanged.  The test gives the server its
address (``--host 127.0.0.1 --port P``) and Redis (``--redis-url``), as an operator's flags would;
the interpolation example is started by its own ``${...}`` from the environment instead."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
import redis

from tests.ocypod.server import ROOT, Served, command, environment, free_port, new_namespace, serve, wipe

DOCKER_EXAMPLE = """\
[server]
host = "0.0.0.0"
port = 8023
log_level = "debug"

[redis]
url = "redis://ocypod-redis"

[queue.default]
timeout = "10m"
"""

SERVER_EXAMPLE = """\
[server]
host = "0.0.0.0"
port = 8023
threads = 2
max_body_size = "10MiB"
timeout_check_interval = "1m"
retry_check_interval = "30s"
expiry_check_interval = "1h"
next_job_delay = "5s"
"""

REDIS_EXAMPLE = """\
[redis]
url = "redis://:my_password@example.com:6379/my_db"
"""

QUEUES_EXAMPLE = """\
[queue.default]

[queue.my_2nd_queue]
retries = 5
retry_delays = ["10s", "1m", "5m"]

[queue.another-queue]
timeout = "5m"
heartbeat_timeout = "30s"
expires_after = "1d"
"""

INTERPOLATION_EXAMPLE = """\
[server]
host = "${OCYPOD_HOST=localhost}"
port = ${OCYPOD_PORT=8023}
log_level = "${OCYPOD_LOG_LEVEL=info}"
timeout_check_interval = "5s"
retry_check_interval = "5s"
expiry_check_interval = "5s"

[redis]
url = "redis://${REDIS_HOST}:${REDIS_PORT}"

[queue.${QUEUE_PREFIX=}default}]
timeout = "1m"
retries = 2

[queue.${QUEUE_PREFIX=}queue2}]
timeout = "5m"
"""
#: The interpolation example with its two typos mended: "default}]" and "queue2}]" close the
#: table names with a stray brace, which no TOML parser takes (Ocypod's neither).
INTERPOLATION_MENDED = INTERPOLATION_EXAMPLE.replace("default}]", "default]").replace("queue2}]", "queue2]")
OCYPOD_SETTINGS = ("timeout", "heartbeat_timeout", "expires_after", "retries", "retry_delays")
DEFAULTS = {
    "timeout": "5m",
    "heartbeat_timeout": "0s",
    "expires_after": "5m",
    "retries": 0,
    "retry_delays": [],
}


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(redis_url)
    yield c
    c.close()


@contextmanager
def started(tmp_path: Path, redis_url: str, client: redis.Redis, text: str) -> Iterator[Served]:
    """The server started with ``text`` as its config file, at the test's address and Redis."""
    path = tmp_path / "ocypod.toml"
    path.write_text(text)
    args = ("--config", str(path), "--host", "127.0.0.1")
    with serve(redis_url, tmp_path / "serve.log", *args) as server:
        try:
            yield server
        finally:
            wipe(client, server.namespace)


def settings(server: Served, queue: str) -> dict[str, object]:
    answer = httpx2.get(f"{server.url}/queue/{queue}", timeout=10)
    assert answer.status_code == 200, answer.text
    view: dict[str, object] = answer.json()
    return {name: view[name] for name in OCYPOD_SETTINGS}


def queues(server: Served) -> list[str]:
    names: list[str] = httpx2.get(f"{server.url}/queue", timeout=10).json()
    return names


def test_the_docker_example_starts_with_its_queue(
    tmp_path: Path, redis_url: str, client: redis.Redis
) -> None:
    with started(tmp_path, redis_url, client, DOCKER_EXAMPLE) as server:
        assert settings(server, "default") == {**DEFAULTS, "timeout": "10m"}


@pytest.mark.parametrize("text", [SERVER_EXAMPLE, REDIS_EXAMPLE], ids=["server", "redis"])
def test_the_section_examples_start(tmp_path: Path, redis_url: str, client: redis.Redis, text: str) -> None:
    with started(tmp_path, redis_url, client, text) as server:
        assert queues(server) == []


def test_the_queue_sections_example_creates_its_queues(
    tmp_path: Path, redis_url: str, client: redis.Redis
) -> None:
    with started(tmp_path, redis_url, client, QUEUES_EXAMPLE) as server:
        assert queues(server) == ["another-queue", "default", "my_2nd_queue"]
        assert settings(server, "default") == DEFAULTS
        assert settings(server, "my_2nd_queue") == {
            **DEFAULTS,
            "retries": 5,
            "retry_delays": ["10s", "1m", "5m"],
        }
        another = {"timeout": "5m", "heartbeat_timeout": "30s", "expires_after": "1d"}
        assert settings(server, "another-queue") == {**DEFAULTS, **another}


def _redis_environment(redis_url: str) -> dict[str, str]:
    parts = urlsplit(redis_url)
    return {"REDIS_HOST": parts.hostname or "127.0.0.1", "REDIS_PORT": str(parts.port or 6379)}


@pytest.mark.parametrize("prefix", ["", "team_"])
def test_the_interpolation_example_starts_from_the_environment(
    tmp_path: Path, redis_url: str, client: redis.Redis, prefix: str
) -> None:
    """Port, host and Redis from ``${...}``, the port written bare (``port = ${OCYPOD_PORT=8023}``)."""
    path = tmp_path / "ocypod.toml"
    path.write_text(INTERPOLATION_MENDED)
    port = free_port()
    env = {"OCYPOD_HOST": "127.0.0.1", "OCYPOD_PORT": str(port), **_redis_environment(redis_url)}
    if prefix:
        env["QUEUE_PREFIX"] = prefix
    log = tmp_path / "serve.log"
    with serve(None, log, "--config", str(path), port=port, flags=False, env=env) as server:
        try:
            assert queues(server) == [f"{prefix}default", f"{prefix}queue2"]
            assert settings(server, f"{prefix}default") == {**DEFAULTS, "timeout": "1m", "retries": 2}
        finally:
            wipe(client, server.namespace)


def test_the_interpolation_example_as_written_is_refused_naming_the_toml_error(
    tmp_path: Path, redis_url: str
) -> None:
    path = tmp_path / "ocypod.toml"
    path.write_text(INTERPOLATION_EXAMPLE)
    env = environment(_redis_environment(redis_url))
    done = subprocess.run(command(0, None, new_namespace(), "--config", str(path)), capture_output=True,
                          env=env, timeout=60, cwd=ROOT, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert b"not valid TOML" in done.stderr and b"line 12" in done.stderr

"""A server loads the commands' Functions libraries into Redis once it is warm: on a Redis that holds
none (restarted with nothing kept), every command's library is there after the warm-up, each loaded
once, and the libraries of another version of jobledger are gone."""

from __future__ import annotations

from pathlib import Path

import redis

from jobledger.ledger.scripts import commands, function
from tests.support.http import app_client
from tests.support.live_server import eventually
from tests.support.private_redis import PrivateServer


def _held(client: redis.Redis) -> set[str]:
    return {entry[1].decode() for entry in client.function_list(library="jobledger_*")}


def test_a_warm_server_holds_every_commands_library_and_no_other_version(tmp_path: Path) -> None:
    server = PrivateServer(tmp_path / "valkey")
    server.start()
    client = redis.Redis.from_url(server.url)
    try:
        older = function("put_queue").code.replace(function("put_queue").name, "jobledger_put_queue_00ff")
        client.function_load(older)  # an older version's, left by the server it replaces
        wanted = {function(name).name for name in commands()}
        with app_client(server.url, "warm"):
            eventually(lambda: _held(client) == wanted)
        loads = client.info("commandstats")["cmdstat_function|load"]["calls"]
        assert loads == 1 + len(wanted)  # the older one, then each of ours once
    finally:
        client.close()
        server.kill()

"""What a server's start leaves undone until a request or a launcher needs it: the OpenAPI
document's modules (until ``GET /openapi.json``), croniter (until a cron expression), and the
validators of the requests' and the events' models (until the first of each is validated); and
what ``serve`` leaves to its warm-up (:mod:`jobledger.server.warmup`): pydantic and every model,
the request handlers, the scheduler's loop and its sealer, the archive, bulk operations, the
dashboard's pages, prometheus' exposition and the queues' totals; and, tracing off, no tracing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from jobledger.ledger.launchers import parse_cron

#: Modules a start does not load.
LATER = ("croniter", "jobledger.server.openapi", "jobledger.server.openapi_paths")
#: Modules ``serve`` does not load before it listens: its warm-up does, once it is ready.
WARMED = (
    "pydantic", "pydantic_core", "jobledger.ledger.requests", "jobledger.ledger.events",
    "jobledger.ledger.files", "jobledger.ledger.commands", "jobledger.ledger.launchers",
    "jobledger.ledger.stream", "jobledger.projections.readers", "jobledger.scheduler.loop",
    "jobledger.replay.archive.writer", "jobledger.server.queue_handlers", "jobledger.server.job_handlers",
    "jobledger.server.ui.pages", "jobledger.server.ui.actions", "jobledger.server.ui.live",
    "prometheus_client", "jobledger.server.metrics", "jobledger.server.queue_metrics",
    "jobledger.projections.queue_totals", "jobledger.scheduler.sealer", "jobledger.server.sealed_ledger",
    "jobledger.server.ledger_handlers", "jobledger.blobs.archive", "jobledger.ledger.bulk",
    "jobledger.server.bulk_runs", "jobledger.server.bulk_handlers", "jobledger.server.ui.charts",
    "jobledger.server.ui.failed_page",
)  # fmt: skip
#: Modules of tracing, which a server without it loads neither before nor after it listens (redis-py
#: loads OpenTelemetry's metrics API when it is installed; its tracing SDK is ours to load).
TRACING = ("jobledger.server.request_spans", "opentelemetry.sdk.trace")

#: serve's start up to listening: its command module, the configuration from a command line's
#: flags, the app and its lifespan's start (the warm-up waiting for the server to listen).
SERVE_START = """
import asyncio, json, sys
from pathlib import Path
from jobledger.cli import server_commands
from jobledger.runtime.config import load_config
from jobledger.server.app import create_app

config = load_config(None, {"server.port": 18023, "server.log_level": "warning", "redis.url": sys.argv[1],
                            "redis.key_namespace": "start", "embedded.data_dir": Path("d")}, environ={})

async def start():
    app = create_app(config, sys.argv[1], listening=asyncio.Event())
    async with app.router.lifespan_context(app):
        await asyncio.sleep(0.05)

asyncio.run(start())
print(json.dumps([m for m in sys.argv[2:] if m in sys.modules]))
"""


def test_a_start_loads_neither_the_openapi_document_nor_croniter() -> None:
    code = (
        "import json, sys\n"
        "from jobledger.server.app import create_app\n"
        "from jobledger.runtime.config import load_config\n"
        "create_app(load_config(None, environ={}), 'redis://127.0.0.1:1/0')\n"
        f"print(json.dumps([m for m in {list(LATER)!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_a_start_builds_no_request_or_event_model() -> None:
    code = (
        "import json\n"
        "from jobledger.server.app import create_app\n"
        "from jobledger.runtime.config import load_config\n"
        "from jobledger.ledger import events, files, requests\n"
        "create_app(load_config(None, environ={}), 'redis://127.0.0.1:1/0')\n"
        "models = [requests.JobOptions, requests.QueueSettings, events.JobCreated, files.FileRef]\n"
        "print(json.dumps([m.__name__ for m in models if m.__pydantic_complete__]))\n"
        "print(requests.JobOptions.model_validate({'input': 1}).input)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    built, validated = done.stdout.splitlines()
    assert json.loads(built) == []
    assert validated == "1"


def test_the_openapi_document_is_served_on_first_ask(api: TestClient) -> None:
    response = api.get("/openapi.json")
    assert response.status_code == 200
    assert "/openapi.json" in response.json()["paths"]


def test_a_cron_expression_is_checked_when_croniter_loads_then() -> None:
    assert parse_cron("*/5 * * * *") == "0 */5 * * * *"
    with pytest.raises(ValueError, match="names no time that ever comes"):
        parse_cron("0 0 0 30 2 *")


def test_serve_loads_no_model_no_handler_and_no_scheduler_loop_before_it_listens(redis_url: str) -> None:
    done = subprocess.run([sys.executable, "-c", SERVE_START, redis_url, *WARMED, *TRACING],
                          capture_output=True, text=True, check=True)  # fmt: skip
    assert json.loads(done.stdout) == []


def test_the_warm_up_loads_them_once_the_server_listens() -> None:
    code = (
        "import asyncio, json, sys\n"
        "from jobledger.server.warmup import Warmup\n"
        "async def main():\n"
        "    listening = asyncio.Event()\n"
        "    warmup = Warmup(listening)\n"
        "    task = asyncio.ensure_future(warmup.run())\n"
        "    await asyncio.sleep(0.05)\n"
        "    before = [m for m in sys.argv[1:] if m in sys.modules]\n"
        "    listening.set()\n"
        "    await task\n"
        "    await warmup.aclose()\n"
        "    tracing = [m for m in TRACING if m in sys.modules]\n"
        "    print(json.dumps([before, [m for m in sys.argv[1:] if m not in sys.modules], tracing]))\n"
        "asyncio.run(main())\n"
    )
    code = f"TRACING = {TRACING!r}\n" + code
    done = subprocess.run([sys.executable, "-c", code, *WARMED], capture_output=True, text=True, check=True)
    before, missing, tracing = json.loads(done.stdout)
    assert before == []
    assert missing == []
    assert tracing == []

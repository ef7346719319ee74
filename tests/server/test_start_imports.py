"""What a server's start leaves undone until a request or a launcher needs it: the OpenAPI
document's modules (until ``GET /openapi.json``), croniter (until a cron expression), and the
validators of the requests' and the events' models (until the first of each is validated)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from jobledger.ledger.launchers import parse_cron

#: Modules a start does not load.
LATER = ("croniter", "jobledger.server.openapi", "jobledger.server.openapi_paths")


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

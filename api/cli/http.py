"""What every command that talks to a server over HTTP shares: ``--url``, ``--json``, the client
(a refusal or an unreachable server ends the command with its message on one line and exit 1),
JSON options, and how an action reports what it did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from jobledger.cli.common import fail
from jobledger.cli.output import JsonOption, Output
from jobledger.client import Client, ClientError
from jobledger.client.calls import DEFAULT_URL

UrlOption = Annotated[
    str | None,
    typer.Option("--url", envvar="JOBLEDGER_URL", help=f"The jobledger server (default {DEFAULT_URL})."),
]
AsJson = Annotated[bool, JsonOption]

_ERROR_NAMES = {"BadRequest": "bad request", "NotFound": "not found", "Conflict": "conflict"}


@contextmanager
def connected(url: str | None) -> Iterator[Client]:
    """A client of the server; a refusal or an unreachable server ends the command with exit 1."""
    try:
        with Client(url) as client:
            yield client
    except ClientError as exc:
        name = type(exc).__name__
        fail(f"{_ERROR_NAMES.get(name, name.lower())}: {exc.message}")


def parse_json(text: str | None, option: str) -> Any:
    """An option's JSON text, decoded; a usage error (exit 2) when it is not JSON."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        fail(f"{option} is not valid JSON: {exc}", code=2)


def done(out: Output, sentence: str, result: dict[str, Any]) -> None:
    """What an action did: a sentence on a terminal (rich markup), its JSON with ``--json``, and
    piped the id (or queue) it acted on."""
    if out.is_json:
        return out.json(result)
    out.note(sentence, str(result.get("id", result.get("queue"))))

"""Every command's ``--help`` reads as plain text: no type placeholder on a flag (``<bool>``), no reST
literal (double backquotes) from a docstring, and a ``[section]`` of the config file shown as written,
not eaten as Rich markup.  And ``from jobledger import NotFound, Conflict, ...`` gives the client's
errors."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import jobledger
from jobledger.cli.main import build_app
from jobledger.client import errors

WIDE = {"TTY_COMPATIBLE": None, "FORCE_COLOR": None, "NO_COLOR": None, "COLUMNS": "200"}


def command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the tree, as the words that name it."""
    children = getattr(command, "commands", {})
    return [
        path,
        *(p for name, child in sorted(children.items()) for p in command_paths(child, (*path, name))),
    ]


PATHS = command_paths(typer.main.get_command(build_app()))


def test_every_command_is_checked() -> None:
    assert ("launcher", "put") in PATHS and ("replay", "verify") in PATHS and ("submit",) in PATHS


@pytest.mark.parametrize("path", PATHS, ids=" ".join)
def test_help_shows_no_type_placeholders_nor_rest_literals(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(build_app(), [*path, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.stdout and "``" not in result.stdout, result.stdout


def test_a_config_section_in_a_help_text_is_shown_as_written() -> None:
    result = CliRunner().invoke(build_app(), ["replay", "verify", "--help"], env=WIDE)
    assert "([blobs] url)" in " ".join(result.stdout.split())


@pytest.mark.parametrize("name", ["NotFound", "Conflict", "BadRequest", "WaitTimeout", "ClientError"])
def test_the_client_errors_are_the_packages_own(name: str) -> None:
    assert getattr(jobledger, name) is getattr(errors, name)
    assert name in jobledger.__all__

"""The ``jobledger`` command line: the commands of :mod:`jobledger.cli.server_commands` and the
command groups of the other ``jobledger.cli`` modules, assembled into one typer app.

typer is held below 0.29 (pyproject): from 0.29 on it converts every option of a command through a
pydantic TypeAdapter, built as the command line is parsed, so that ``serve`` would import pydantic
and build an adapter for each of its options before it started; below, click's own types convert
them, and a start imports no pydantic (see :func:`jobledger.runtime.config.config_from`)."""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING

from jobledger.runtime.startup import pause_collection, started

if TYPE_CHECKING:
    import typer

#: The commands of :mod:`jobledger.cli.server_commands`: run one of them, and the command line is
#: built without the other modules (the client, the worker...), which it never uses.
SERVER_COMMANDS = ("serve", "scheduler", "version")
#: The commands that say themselves when their start is over (``jobledger.runtime.startup.started``).
LONG_STARTS = ("serve", "scheduler")


def build_app(command: str | None = None) -> typer.Typer:
    """The ``jobledger`` typer app: its commands, and later its command groups as sub-apps; only the
    :data:`SERVER_COMMANDS` when ``command`` (the one about to run) is one of them."""
    import typer

    from jobledger.cli import server_commands
    from jobledger.cli.help_text import PlainHelpGroup

    app = typer.Typer(
        cls=PlainHelpGroup,
        name="jobledger",
        help="A job queue server whose source of truth is an event ledger (Ocypod's HTTP API).",
        no_args_is_help=True,
        add_completion=False,
    )
    app.command()(server_commands.serve)
    app.command()(server_commands.scheduler)
    app.command()(server_commands.version)
    if command in SERVER_COMMANDS:
        return app
    from jobledger.cli import (
        bulk_commands,
        event_commands,
        job_commands,
        ledger_commands,
        replay_commands,
        token_commands,
        worker_command,
    )

    app.add_typer(job_commands.app)
    app.add_typer(worker_command.app)
    app.add_typer(replay_commands.app, name="replay")
    app.add_typer(event_commands.app, name="events")
    app.add_typer(ledger_commands.app, name="ledger")
    app.add_typer(bulk_commands.app, name="jobs")
    app.add_typer(token_commands.app, name="token")
    return app


def main() -> None:
    """Entry point of the ``jobledger`` console script.

    A command that used an object store (obstore, over a Tokio runtime of its own) ends the process
    with ``os._exit`` once its output is flushed: the runtime's threads are never told the
    interpreter is finalizing, and one still running as it tears down makes the process abort
    (SIGABRT) after the command succeeded, so a script would read a failed exit.  Everything the
    command opened is closed by then; only the interpreter's own teardown is skipped."""
    command = sys.argv[1] if len(sys.argv) > 1 else None
    pause_collection()  # until the command has built what it keeps (see jobledger.runtime.startup)
    try:
        app = build_app(command)
        if command not in LONG_STARTS:
            started()
        app(standalone_mode=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if "obstore" not in sys.modules:
            raise
    if "obstore" not in sys.modules:
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

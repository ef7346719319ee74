"""The ``jobledger`` command line: the commands of :mod:`jobledger.cli.server_commands` and the
command groups of the other ``jobledger.cli`` modules, assembled into one typer app."""

from __future__ import annotations

import contextlib
import importlib

import typer

from jobledger.cli import (
    event_commands,
    job_commands,
    replay_commands,
    server_commands,
    worker_command,
)


def build_app() -> typer.Typer:
    """The ``jobledger`` typer app: its commands, and later its command groups as sub-apps."""
    app = typer.Typer(
        name="jobledger",
        help="A job queue server whose source of truth is an event ledger (Ocypod's HTTP API).",
        no_args_is_help=True,
        add_completion=False,
    )
    app.command()(server_commands.serve)
    app.command()(server_commands.scheduler)
    app.command()(server_commands.version)
    app.add_typer(job_commands.app)
    app.add_typer(worker_command.app)
    app.add_typer(replay_commands.app, name="replay")
    app.add_typer(event_commands.app, name="events")
    bench_app = _bench_app()
    if bench_app is not None:
        app.add_typer(bench_app)
    return app


def _bench_app() -> typer.Typer | None:
    """``jobledger bench``: tests/benchmarks, installed as jobledger_bench (the peers it measures
    beside ours are not installed), or imported from a source checkout run without installing."""
    for module in ("jobledger_bench.cli", "tests.benchmarks.cli"):
        with contextlib.suppress(ImportError):
            bench: typer.Typer = importlib.import_module(module).app
            return bench
    return None


def main() -> None:
    """Entry point of the ``jobledger`` console script."""
    build_app()()


if __name__ == "__main__":
    main()

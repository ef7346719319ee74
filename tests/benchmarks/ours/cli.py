"""The benchmark's command line (``python -m tests.benchmarks``).

``[--quick] [--only NAMES] [--json] [--jobs N] [--redis-url URL]`` measures jobledger here, and the
peers it is given, each measurement on a fresh bundled Valkey (``--save '' --appendonly no``), or
ours against the user's server when ``--redis-url`` names one (each measurement in a namespace of its
own, removed after), and prints the table (or JSON).

Progress goes to stderr; the report to stdout.  The exit code is 1 when a part of ours failed.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from jobledger.ledger.redis_clients import masked_url

from .figures import CALIBRATION, NAMED_PARTS, OURS_PARTS, Settings

if TYPE_CHECKING:
    from .run import Peer


def settings_for(quick: bool, jobs: int | None) -> Settings:
    if quick:
        return Settings.quick_run(jobs or 200)
    return Settings.full(jobs or 20_000)


def execute(quick: bool, only: str | None, as_json: bool, jobs: int | None, redis_url: str | None,
            command: str, save: str | None = None, peers: Mapping[str, Peer] | None = None,
            checkout: Path | None = None) -> int:  # fmt: skip
    """Run the benchmark and print its report (and save its JSON to ``save``); the exit code.
    ``peers`` are measured beside ours; ``checkout`` is the source tree measured (default: jobledger's
    own, when it runs from one)."""
    from . import report, run
    from .server import Servers

    peers = peers or {}
    try:
        chosen = run.parts(only, list(peers))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result = run.run(
        Servers(redis_url), settings_for(quick, jobs), chosen, command, run.stderr_log,
        peers=peers, checkout=checkout or run.CHECKOUT,
    )  # fmt: skip
    if save:
        with open(save, "w") as out:
            out.write(report.as_json(result))
    print(report.as_json(result) if as_json else report.render(result))
    for part, error in result["errors"].items():
        print(f"FAILED {part}: {error}", file=sys.stderr)
    return 1 if result["errors"] else 0


def main(
    argv: list[str] | None = None, *, prog: str, description: str | None = None,
    peers: Mapping[str, Peer] | None = None, checkout: Path | None = None,
) -> None:  # fmt: skip
    """``prog [--quick] [--only NAMES] [--json] [--jobs N] [--redis-url URL] [--save FILE]``:
    ours and ``peers`` measured, the report printed, the process ended with :func:`execute`'s code."""
    peers = peers or {}
    parser = argparse.ArgumentParser(
        prog=prog, description=description or __doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a small, fast smoke run (tiny N, one repeat)")
    groups = ("ours", "peers") if peers else ("ours",)
    parser.add_argument(
        "--only",
        help=f"comma-separated parts: {', '.join((*groups, *OURS_PARTS, *NAMED_PARTS, CALIBRATION, *peers))}",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--jobs", type=int, help="jobs per run (default 20,000; 200 with --quick)")
    parser.add_argument("--redis-url", help="measure ours against this server (peers need fresh servers)")
    parser.add_argument("--save", metavar="FILE", help="also write the run as JSON to FILE")
    args = parser.parse_args(argv)
    command = f"{prog} " + shlex.join(sys.argv[1:] if argv is None else argv)
    if args.redis_url:  # the command is printed in the report: no password in it
        command = command.replace(args.redis_url, masked_url(args.redis_url))
    sys.exit(execute(args.quick, args.only, args.json, args.jobs, args.redis_url, command.strip(), args.save,
                     peers, checkout))  # fmt: skip

"""``python -m tests.benchmarks``: :func:`tests.benchmarks.ours.cli.main` with the peers registered.

``python -m tests.benchmarks [--quick] [--only NAMES] [--json] [--jobs N] [--redis-url URL]``
measures ours and the peers (:mod:`tests.benchmarks.peers`), each measurement on a fresh bundled
Valkey (``--save '' --appendonly no``), and prints the table (or JSON).  ``--redis-url`` measures
ours against that server; the peers need fresh ones.  The revision reported is this checkout's
git commit.
"""

from pathlib import Path

from tests.benchmarks.ours.cli import main

from .peers import PEERS

main(prog="python -m tests.benchmarks", description=__doc__, peers=PEERS,
     checkout=Path(__file__).resolve().parents[2])  # fmt: skip

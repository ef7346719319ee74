"""``python -m tests.benchmarks``: see :mod:`tests.benchmarks.cli`."""

from tests.benchmarks.cli import main

main()

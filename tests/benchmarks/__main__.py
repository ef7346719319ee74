"""``python -m tests.benchmarks``: see :mod:`tests.benchmarks.cli`."""

from .cli import main

main()

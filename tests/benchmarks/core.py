"""``python -m tests.benchmarks.core``: the same as ``python -m jobledger.bench.core``."""

from jobledger.bench.core import main

if __name__ == "__main__":
    main()

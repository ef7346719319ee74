"""``python -m tests.benchmarks.worker_latency``: the same as ``python -m jobledger.bench.worker_latency``."""

from jobledger.bench.worker_latency import main

if __name__ == "__main__":
    main()

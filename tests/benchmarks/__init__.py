"""The benchmark, run from a checkout (``python -m tests.benchmarks``): jobledger's own parts and
harness (:mod:`tests.benchmarks.ours`) with the peers (Dramatiq, saq, BullMQ: :mod:`tests.benchmarks.peers`)
beside it.  None of it is installed with jobledger.
"""

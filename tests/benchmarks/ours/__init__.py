"""jobledger's own benchmark: jobledger measured on a real server, reported as figures and ratios.

The harness takes the other job queues it compares against (:mod:`tests.benchmarks.peers`) as
:class:`tests.benchmarks.ours.run.Peer` objects; jobledger itself measures only its own parts.
"""

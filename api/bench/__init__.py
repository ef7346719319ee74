"""``jobledger bench``: jobledger measured on a real server, reported as figures and ratios.

The harness takes the other job queues it compares against as :class:`jobledger.bench.run.Peer`
objects; jobledger itself measures only its own parts.
"""

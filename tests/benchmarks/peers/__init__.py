"""The peers measured beside jobledger, each on fresh servers of its own, for the same work.

Each peer module offers ``unavailable() -> str | None`` (why it cannot run here, or None) and
``measure(servers, settings, log) -> Results``, filling the same figure keys as ours where it has
the thing measured (a key it lacks is a ``Figure(None, ...)`` whose note says why).  The Python
peers install from the ``bench`` extra; BullMQ from ``tests/benchmarks/node/package.json`` with npm.
"""

from __future__ import annotations

from tests.benchmarks.ours.run import Peer

from . import bullmq_peer, dramatiq_peer, saq_peer

PEERS: dict[str, Peer] = {"dramatiq": dramatiq_peer, "saq": saq_peer, "bullmq": bullmq_peer}

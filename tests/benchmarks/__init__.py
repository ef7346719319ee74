"""The comparison run: jobledger's own benchmark (:mod:`jobledger.bench`) with the peers beside it.

The peers (Dramatiq, saq, BullMQ) are measured here only, never by the installed ``jobledger bench``.
"""

"""Retention: ledger events moved out of the stream into segment files (read back by
:mod:`jobledger.projections.archive`)."""

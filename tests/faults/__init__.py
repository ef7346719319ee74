"""The fault suite: real processes (Valkey, ``jobledger serve``, producers, workers) run while one
kind of fault is done to them again and again, then the ledger and the records are checked.  See
docs/faults.md; the short run is test_faults.py, the long one ``python -m tests.faults``."""

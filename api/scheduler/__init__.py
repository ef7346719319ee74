"""The scheduler: a client of the ledger that fires due deadlines, launchers and retention."""

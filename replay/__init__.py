"""Replay and audit: rebuilding projections from the ledger (views as of a past point included),
verifying the live ones, export / import of the ledger, and retention's archive."""

"""The `jobledger` command line."""

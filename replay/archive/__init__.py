"""The archive: ledger events moved out of the stream into segment files, and read back."""

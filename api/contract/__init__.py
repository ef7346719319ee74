"""What the client and the server agree on, below both: it imports nothing of jobledger."""

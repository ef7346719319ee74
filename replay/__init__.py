"""Rebuilding projections from the stream, comparing projection sets, views as of a past point."""

"""The write side of jobledger: event types, keys, the clock, and the commands that append and apply."""

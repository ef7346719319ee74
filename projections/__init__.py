"""The read models built from events (job hashes, queue sets, tag sets, counters, deadline sets),
the Lua that applies an event to them (``lua/``), and typed readers."""

"""What every process needs to run: the configuration, the embedded Valkey, finding Redis, logging."""

"""How every jobledger command finds its Redis: the configured URL, or the data dir's embedded server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from api.config import Config
from api.embedded import connect_or_start


@contextmanager
def redis_url_for(config: Config) -> Iterator[str]:
    """Yield the Redis URL this process should use.

    ``config.redis.url`` if set; otherwise the embedded server of ``config.embedded.data_dir``:
    the one already running there, or one started now and stopped on exit (only if we started it).
    """
    if config.redis.url:
        yield config.redis.url
        return
    url, server = connect_or_start(config.embedded.data_dir, config.embedded.appendfsync)
    try:
        yield url
    finally:
        if server is not None:
            server.stop()

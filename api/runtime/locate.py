"""How every jobledger command finds its Redis: the configured URL, or the data dir's embedded server.

Only ``serve`` and ``events import`` may start a new ledger in a data directory that holds none
(:func:`jobledger.runtime.embedded.holds_ledger`: no server has ever run there).  Every other command refuses
there (:class:`NoLedgerHere`), rather than starting an empty server and reporting on an empty
ledger: it was pointed at the wrong place.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from jobledger.runtime.config import Config
from jobledger.runtime.embedded import connect_or_start, holds_ledger


class NoLedgerHere(Exception):
    """The data directory holds no ledger, and the command may not create one."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).expanduser().absolute()
        super().__init__(
            f"no ledger in {self.data_dir}: no jobledger server has kept its data there. "
            "Point this command at the ledger with --data-dir DIR (env JOBLEDGER_DATA_DIR), "
            "--redis-url URL (env JOBLEDGER_REDIS_URL) or --config FILE (env JOBLEDGER_CONFIG: "
            "[embedded] data_dir or [redis] url); `jobledger serve` starts a new ledger there."
        )


@contextmanager
def redis_url_for(config: Config, *, create: bool = False) -> Iterator[str]:
    """Yield the Redis URL this process should use.

    ``config.redis.url`` if set; otherwise the embedded server of ``config.embedded.data_dir``:
    the one already running there, or one started now and stopped on exit (only if we started it).
    A data directory that holds no ledger raises :class:`NoLedgerHere`, creating nothing, unless
    ``create`` (for the commands that start a ledger).
    """
    if config.redis.url:
        yield config.redis.url
        return
    if not create and not holds_ledger(config.embedded.data_dir):
        raise NoLedgerHere(config.embedded.data_dir)
    url, server = connect_or_start(config.embedded.data_dir, config.embedded.appendfsync)
    try:
        yield url
    finally:
        if server is not None:
            server.stop()

"""What one app counts as it runs, for ``GET /metrics``: each ledger command's latency and the
live feeds open, counted from the app's start.

prometheus_client is not loaded for it as a server starts: until the registry of
:mod:`jobledger.server.metrics` is built (:meth:`ProcessMetrics.build`, on the event loop, by the
server's warm-up once it has loaded prometheus_client, or by an earlier scrape), the latencies
observed wait here and go into the histogram then, in order, and the gauge is set to the feeds open
then; after, each goes straight in.  So a scrape counts every command the app ran, whenever the
registry was built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobledger.server.metrics import Registry


class ProcessMetrics:
    """One app's in-process metrics (``app.state.metrics``); every method runs on the event loop."""

    def __init__(self) -> None:
        self._early: list[tuple[str, float]] = []
        self._feeds_open = 0
        self._registry: Registry | None = None

    def observe(self, command: str, seconds: float) -> None:
        """The runner's hook: one command took ``seconds``."""
        if self._registry is None:
            self._early.append((command, seconds))
        else:
            self._registry.commands.labels(command).observe(seconds)

    def feeds_open(self, count: int) -> None:
        """The feed slots' hook: ``count`` live feeds are open now."""
        self._feeds_open = count
        if self._registry is not None:
            self._registry.feeds.set(count)

    def build(self) -> Registry:
        """The prometheus registry, built the first time (loading prometheus_client if the warm-up
        has not), holding everything observed so far."""
        if self._registry is None:
            from jobledger.server.metrics import Registry

            registry = Registry()
            for command, seconds in self._early:
                registry.commands.labels(command).observe(seconds)
            registry.feeds.set(self._feeds_open)
            self._early.clear()
            self._registry = registry
        return self._registry

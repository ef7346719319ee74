"""``jobledger replay drop NAMESPACE``: delete a namespace that ``replay rebuild`` left behind.

A rebuild builds a view into a namespace of its own and keeps it, to be served read-only; nothing
else removes it.  Dropping deletes every key of it (each of its partitions on a split view), after
saying how many and asking (``--yes`` does not ask).  It refuses the configured namespace (the live
ledger) and each of its partitions, and any namespace that holds events: a rebuild's view holds
projections only, so a stream with events there is a ledger, perhaps a running server's.  Which
namespaces a running server reads is not recorded in Redis; stop a server that serves the view
read-only before dropping it.

Exit codes: 0 dropped (or nothing to drop); 1 not confirmed; 2 bad usage (the live namespace);
3 refused (the namespace holds a ledger) or Redis failed.
"""

from __future__ import annotations

from typing import Annotated

import redis
import typer

from jobledger.cli.common import LEDGER_DEFAULTS, LedgerOptions, SignalStop, fail, ledger_options, open_redis
from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.redis_clients import sync_client
from jobledger.replay.parts import Part, parts_of, stored_count
from jobledger.replay.source import ledger_length
from jobledger.replay.verify import drop_namespace


def _split(client: redis.Redis, namespace: str) -> Partitioning:
    """How the namespace is split, as stored (one part when no count is)."""
    return Partitioning(namespace, stored_count(client, namespace) or 1)


def _held(parts: list[Part]) -> tuple[int, int]:
    """How many keys the parts hold, and how many events their ledgers hold."""
    keys = sum(_count(p.client, p.namespace) for p in parts)
    return keys, sum(ledger_length(p.client, Keys(p.namespace)) for p in parts)


def _count(client: redis.Redis, namespace: str) -> int:
    return sum(1 for _ in client.scan_iter(match=Keys(namespace).pattern(), count=1000))


@ledger_options
def drop_command(
    target: Annotated[str, typer.Argument(metavar="NAMESPACE", help="The namespace to delete.")],
    ledger: LedgerOptions = LEDGER_DEFAULTS,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
) -> None:
    """Delete a namespace left by replay rebuild, every key of it; asks first.

    Refuses the live ledger's namespace and any namespace that holds events."""
    config = ledger.config()
    live, namespace = config.redis.key_namespace, target
    if namespace == live:
        fail(f"'{namespace}' is the live ledger's namespace: it is never dropped", code=2)
    with SignalStop() as stop, open_redis(config, stop) as url:
        base, live_client = sync_client(url, namespace), sync_client(url, live)
        try:
            if namespace in _split(live_client, live).namespaces:
                fail(f"'{namespace}' is a partition of the live ledger '{live}': it is never dropped", code=2)
            with parts_of(url, _split(base, namespace)) as parts:
                _drop(base, namespace, parts, yes)
        except redis.RedisError as exc:
            fail(f"drop failed: {exc}", code=3)
        finally:
            base.close()
            live_client.close()


def _drop(base: redis.Redis, namespace: str, parts: list[Part], yes: bool) -> None:
    keys, events = _held(parts)
    if namespace not in (p.namespace for p in parts):
        keys += _count(base, namespace)
    if events:
        fail(
            f"namespace '{namespace}' holds a ledger of {events:,} events, not a rebuild's view: not dropped",
            code=3,
        )
    if not keys:
        typer.echo(f"namespace '{namespace}' holds no key: nothing to drop")
        return
    split = f" in {len(parts)} partitions" if len(parts) > 1 else ""
    if not yes:
        typer.confirm(f"delete namespace '{namespace}': {keys:,} keys{split}?", abort=True)
    removed = sum(drop_namespace(p.client, p.namespace) for p in parts)
    if namespace not in (p.namespace for p in parts):
        removed += drop_namespace(base, namespace)
    typer.echo(f"dropped namespace '{namespace}': {removed:,} keys deleted{split}")

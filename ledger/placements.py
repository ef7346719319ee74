"""Where each queue of a ledger split into partitions lives: chosen when the queue is first created,
stored, and never changed.

A hash of a queue's name spreads many queues evenly but few unevenly (30 names over 16 partitions
over three nodes fell 12 / 7 / 11).  So the first ``put_queue`` of a name places it: on the node
whose partitions hold the fewest queues, in that node's partition holding the fewest (ties: the
lowest partition), and every process after finds it there.  Decided:

- **Bookkeeping, not an event.**  Where a queue lives is the ledger's layout, as the partition count
  is, not a projection of any partition's stream: no event is applied to make it, replay neither
  reads nor writes it, and the queue's own ``queue_created`` event, in its partition's stream, is
  what witnesses it.  Two hashes hold it, both under the home partition's hash tag, so that one
  script on one slot assigns atomically: ``name -> partition`` and ``partition -> names placed``.
  They are keys of the home partition's ledger itself (:data:`jobledger.ledger.keys.LEDGER`), as its
  stream is, which the projections' tools (verify, compare, a generation's swap) leave alone, and
  which go with the namespace when it is dropped.
- **Race-free.**  The assignment is one script that stores a partition only when none is stored
  and returns the stored one: two servers creating the same queue at once both get the first's.
- **Never moved, never forgotten.**  Deleting a queue leaves its placement: re-created, it goes back
  to the partition that keeps its history and lifetime totals, and a process's cache of placements
  (on its :class:`~jobledger.ledger.partitions.Partitioning`) never goes stale.
- **Found where it is.**  A name with no stored placement is looked for in every partition (its
  settings, or the totals its deletion left) and, found, recorded there: so a ledger made before
  placements existed (its queues at ``crc32(name) % n``), an imported one, or one whose placements
  were lost, keeps working.  A name found nowhere and not being created is routed to its hash's
  partition, where it is not either (a 404, as before), and not cached.

On a ledger of one partition none of this runs: every queue is in the one partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning, node_groups
from jobledger.ledger.reads import Read
from jobledger.ledger.sync_or_async import AtOnce, Work, done

#: The command that creates a queue: the only one that places a name not yet placed.
PLACING = "put_queue"

#: KEYS[1] placed (name -> partition), KEYS[2] load (partition -> names placed there)
#: ARGV[1] name   ARGV[2] the partition it was found in, or '' to choose one
#: ARGV[3..] each partition's node, in partition order
#: returns the partition stored for the name (the one stored before, if any)
ASSIGN = """
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then return tonumber(stored) end
local chosen = tonumber(ARGV[2])
if not chosen then
  local load, on_node = {}, {}
  local flat = redis.call('HGETALL', KEYS[2])
  for i = 1, #flat, 2 do load[tonumber(flat[i])] = tonumber(flat[i + 1]) end
  for p = 0, #ARGV - 3 do
    local node = ARGV[p + 3]
    on_node[node] = (on_node[node] or 0) + (load[p] or 0)
  end
  local best
  for p = 0, #ARGV - 3 do
    local rank = {on_node[ARGV[p + 3]], load[p] or 0}
    if not best or rank[1] < best[1] or (rank[1] == best[1] and rank[2] < best[2]) then
      best, chosen = rank, p
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], chosen)
redis.call('HINCRBY', KEYS[2], chosen, 1)
return chosen
"""


def placement_keys(partitioning: Partitioning) -> list[str]:
    """The two hashes of ``partitioning``'s placements: placed, load."""
    keys = Keys(partitioning.namespaces[0])
    return [keys.build("placements"), keys.build("placement_load")]


def _existing(names: Sequence[str]) -> Read[set[str]]:
    """Which of ``names`` have settings, or the totals a deletion leaves, in a partition."""

    def commands(k: Any) -> list[tuple[Any, ...]]:
        return [("EXISTS", k.queue(n), k.build("queue_totals", name=n)) for n in names]

    return Read(commands, lambda replies: {n for n, r in zip(names, replies, strict=True) if int(r)})


def _searching(runners: Sequence[Any], names: Sequence[str]) -> Work[dict[str, int]]:
    """Where each of ``names`` that is in some partition is (the lowest, should it be in several)."""
    found = yield AtOnce(r.read(_existing(names)) for r in runners)
    where: dict[str, int] = {}
    for partition, present in enumerate(found):
        for name in present:
            where.setdefault(name, partition)
    return where


def _nodes(home: Any, partitioning: Partitioning) -> Work[list[str]]:
    """Each partition's node (one for all on a server that is not a Cluster)."""
    try:
        reply = yield home.execute_command("CLUSTER", "SLOTS")
    except redis.ResponseError:
        return ["0"] * partitioning.count
    return node_groups(partitioning, reply)


def _assigning(
    home: Any, partitioning: Partitioning, name: str, at: int | None, nodes: list[str]
) -> Work[int]:
    args = [name, "" if at is None else at, *nodes]
    return int((yield home.eval(ASSIGN, 2, *placement_keys(partitioning), *args)))


def pin(client: redis.Redis, partitioning: Partitioning, name: str, partition: int) -> int:
    """Place queue ``name`` in ``partition`` before it is created (to keep a busy queue apart, say);
    ``client`` reaches the home partition.  The partition it is placed in: one placed already stays
    (on a ledger of one partition: 0, nothing stored)."""
    if not 0 <= partition < partitioning.count:
        raise ValueError(f"partition {partition} is not one of the {partitioning.count}")
    if partitioning.count == 1:
        return 0
    placed = partitioning.placed[name] = done(_assigning(client, partitioning, name, partition, []))
    return placed


def locating(
    partitioning: Partitioning, runners: Sequence[Any], names: Iterable[str], create: bool = False
) -> Work[dict[str, int]]:
    """The partition of each of ``names`` (see the module), on either kind of runner: from the cache
    without a round trip, else stored, else found, else (``create``) assigned now; each placement
    cached.  A name placed nowhere and not created: its hash's partition, not cached."""
    if partitioning.count == 1:
        return dict.fromkeys(names, 0)
    cache = partitioning.placed
    out = {name: cache.get(name, -1) for name in names}
    missing = [name for name, p in out.items() if p < 0]
    if missing:
        out.update((yield from _stored(partitioning, runners[0].client, missing)))
        missing = [name for name in missing if out[name] < 0]
    if missing:
        out.update((yield from _placing(partitioning, runners, missing, create)))
    return out


def _stored(partitioning: Partitioning, home: Any, names: list[str]) -> Work[dict[str, int]]:
    """The stored placement of each of ``names`` that has one, cached."""
    stored = yield home.hmget(placement_keys(partitioning)[0], names)
    found = {name: int(value) for name, value in zip(names, stored, strict=True) if value is not None}
    partitioning.placed.update(found)
    return found


def _placing(
    partitioning: Partitioning, runners: Sequence[Any], names: list[str], create: bool
) -> Work[dict[str, int]]:
    """Each of ``names`` (none stored): recorded where it is found, else (``create``) assigned where
    the fewest are, else its hash's partition (not cached)."""
    home, out = runners[0].client, {}
    where = yield from _searching(runners, names)
    nodes = (yield from _nodes(home, partitioning)) if create and len(where) < len(names) else []
    for name in names:
        if name in where or create:
            at = where.get(name)
            out[name] = partitioning.placed[name] = yield from _assigning(home, partitioning, name, at, nodes)
        else:
            out[name] = partitioning.hashed(name)
    return out

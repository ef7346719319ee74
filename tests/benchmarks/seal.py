"""``python -m tests.benchmarks.seal [--events N] [--json]``: what sealing costs, in the process alone.

No server: the events are stream entries as XRANGE returns them (bytes), made like a busy ledger's
(each job created with a JSON input and tags, started by a named worker, completed with an output;
one in ten failed and retried first).  It measures, in CPU time of this one process:

- per event, over N events (1,000,000 by default): the leaf bytes (canonical JSON), the leaf hash, and
  the frontier's append with the tiles kept (a flush of the tiles every 10,000 events, as a sealer
  would at each checkpoint); and, on a sample, the encoding alone by the standard library's encoder
  and by the reference one (``rfc8785``);
- per checkpoint: signing it, and opening it (parse and check the signature);
- a job's receipt (5 events) in the ledger of N events: its size as JSON, the tiles its proofs read,
  the time to build it from the tiles and to check it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from jobledger.ledger.seal.canonical import dumps, loads
from jobledger.ledger.seal.checkpoints import Checkpoint, open_checkpoint, sign_checkpoint
from jobledger.ledger.seal.frontier import Frontier
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.keys import generate
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.proofs import inclusion_nodes
from jobledger.ledger.seal.receipts import build_receipt, verify_receipt
from jobledger.ledger.seal.tiles import Tile, TileNodes, TileWriter, tiles_for

Entry = tuple[bytes, dict[bytes, bytes]]
CHUNK = 10_000


def job_events(job: int, at: int) -> list[tuple[str, str, str]]:
    """(type, actor, data) of one job's events: created, started, completed; every tenth job also
    reports progress and an output on the way (5 events)."""
    data = json.dumps(
        {"input": json.dumps({"invoice": job, "customer": f"customer-{job % 977}", "lines": [job % 7, 3]}),
         "tags": ["billing", f"region-{job % 5}"], "timeout": 300_000, "expires_after": 300_000,
         "retries": 2, "priority": job % 3},
        separators=(",", ":"),
    )  # fmt: skip
    worker = f"worker-{job % 16}"
    events = [
        ("job_created", "ci-bot", data),
        ("job_started", worker, f'{{"attempt":1,"worker":"h{job % 64}"}}'),
    ]
    if job % 10 == 0:
        events.append(("job_progressed", worker, '{"progress":50,"message":"half way"}'))
        events.append(("job_output_set", worker, json.dumps({"output": '{"pages":12}'})))
    output = json.dumps({"ok": True, "total": job * 3, "pdf": f"/results/{job}.pdf"}, separators=(",", ":"))
    events.append(("job_completed", worker, json.dumps({"output": output}, separators=(",", ":"))))
    return events


def entries(count: int) -> Iterator[list[Entry]]:
    """``count`` stream entries, in chunks of :data:`CHUNK`, made before they are timed."""
    chunk: list[Entry] = []
    job, at, made = 0, 1_700_000_000_000, 0
    while made < count:
        job += 1
        for kind, actor, data in job_events(job, at):
            at += 1
            fields = {b"type": kind.encode(), b"v": b"1", b"at": str(at).encode(), b"job": str(job).encode(),
                      b"queue": b"invoices", b"actor": actor.encode(), b"data": data.encode()}  # fmt: skip
            chunk.append((f"{at}-0".encode(), fields))
            made += 1
            if len(chunk) == CHUNK or made == count:
                yield chunk
                chunk = []
            if made == count:
                return


def seal(count: int) -> tuple[dict[str, float], Frontier, dict[Tile, bytes], list[bytes], int]:
    """Seal ``count`` events; the CPU time of each step, the frontier, the tiles, the leaves of one job."""
    writer = TileWriter()
    frontier = Frontier(sink=writer)
    tiles: dict[Tile, bytes] = {}
    spent = {"leaf": 0.0, "hash": 0.0, "append": 0.0}
    kept: list[bytes] = []
    target_job = str(receipt_job(count)).encode()
    first = -1
    for chunk in entries(count):
        t0 = time.process_time()
        leaves = [leaf_bytes(entry_id, fields) for entry_id, fields in chunk]
        t1 = time.process_time()
        hashes = [leaf_hash(leaf) for leaf in leaves]
        t2 = time.process_time()
        frontier.extend(hashes)
        tiles.update(writer.flush())
        t3 = time.process_time()
        spent["leaf"] += t1 - t0
        spent["hash"] += t2 - t1
        spent["append"] += t3 - t2
        for i, (_, fields) in enumerate(chunk):
            if fields[b"job"] == target_job:
                kept.append(leaves[i])
                first = frontier.size - len(chunk) + i if first < 0 else first
    return spent, frontier, tiles, kept, first


def receipt_job(count: int) -> int:
    """A job of 5 events, a seventh of the way into a ledger of ``count`` events."""
    return max(10, count // 70 * 10)


def encoders(count: int) -> tuple[float, float]:
    """CPU µs per leaf to encode ``count`` leaves' values: the standard library's encoder, the reference."""
    values = [loads(leaf_bytes(entry_id, fields), "a leaf") for entry_id, fields in next(entries(count))]
    fast = per_call(lambda: [dumps(v, plain=True) for v in values], 1) / len(values)
    reference = per_call(lambda: [dumps(v) for v in values], 1) / len(values)
    return fast, reference


def per_call(fn: Callable[[], Any], times: int) -> float:
    """CPU µs per call of ``fn``."""
    t0 = time.process_time()
    for _ in range(times):
        fn()
    return (time.process_time() - t0) / times * 1e6


def measure(count: int) -> dict[str, Any]:
    spent, frontier, tiles, kept, first = seal(count)
    key = generate("jobledger/bench")
    checkpoint = Checkpoint("jobledger/bench", frontier.size, frontier.root())
    note = sign_checkpoint(checkpoint, key)
    indices = [first + i for i in range(len(kept))]
    nodes = TileNodes(frontier.size, tiles.__getitem__)
    job = receipt_job(count)
    events = list(zip(kept, indices, strict=True))
    text = json.dumps(build_receipt(job, note, key.verifier, events, nodes))
    fast, reference = encoders(min(count, CHUNK))
    return {
        "events": count,
        "us_per_event": {
            "leaf bytes (canonical JSON)": spent["leaf"] / count * 1e6,
            "leaf hash": spent["hash"] / count * 1e6,
            "frontier append + tiles": spent["append"] / count * 1e6,
            "total": sum(spent.values()) / count * 1e6,
            "encoding alone, the standard library's encoder": fast,
            "encoding alone, the reference encoder (rfc8785)": reference,
        },
        "tiles written": len(tiles),
        "us_per_checkpoint": {
            "sign": per_call(lambda: sign_checkpoint(checkpoint, key), 2000),
            "open (parse + verify)": per_call(lambda: open_checkpoint(note, [key.verifier]), 2000),
        },
        "receipt": {
            "events": len(kept),
            "bytes": len(text),
            "tiles read": len(
                {t for i in indices for t in tiles_for(inclusion_nodes(i, frontier.size), frontier.size)}
            ),
            "build µs": per_call(
                lambda: build_receipt(
                    job, note, key.verifier, events, TileNodes(frontier.size, tiles.__getitem__)
                ),
                50,
            ),
            "check µs": per_call(lambda: verify_receipt(text, key.verifier), 200),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.seal", description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.events)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"sealing {result['events']:,} events (CPU time of one process)")
    for name, value in result["us_per_event"].items():
        print(f"  {name:55} {value:8.2f} µs/event")
    print(f"  {'events/s, all steps':55} {1e6 / result['us_per_event']['total']:8,.0f}")
    print(f"  {'tiles written':55} {result['tiles written']:8,}")
    for name, value in result["us_per_checkpoint"].items():
        print(f"  checkpoint: {name:43} {value:8.1f} µs")
    for name, value in result["receipt"].items():
        print(f"  receipt of a job of 5 events: {name:25} {value:8,.0f}")


if __name__ == "__main__":
    main()

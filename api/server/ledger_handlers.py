"""Handlers of ``/ledger/...`` and ``/job/{id}/receipt``: the verifiable ledger's key, checkpoints,
proofs and receipts (:mod:`jobledger.server.sealed_ledger` reads them).

On a ledger split into partitions each partition is a log of its own: ``?partition=N`` names it
(required there; a job's receipt is read in the job's partition).  Sizes are those of published
checkpoints (the latest's by default): a client proves against a checkpoint it holds, and the tiles
of those sizes are what is kept.  A proof is checked against the published tiles before
it is handed out; one that does not hold means the ledger changed under what was sealed (409).
"""

from __future__ import annotations

import asyncio
import re

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from jobledger.ledger.errors import BadRequest, Conflict, NotFound
from jobledger.ledger.partitioned import AsyncPartitioned, OpeningLedger
from jobledger.ledger.seal.checkpoints import Checkpoint
from jobledger.ledger.seal.errors import ProofFailed, SealError
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.proof_json import ConsistencyProof, InclusionProof
from jobledger.ledger.seal.proofs import root
from jobledger.ledger.seal.verify import verify_consistency, verify_inclusion
from jobledger.ledger.stream_merge import valid_event_id
from jobledger.replay.sealed_log import SealedLog
from jobledger.server.errors import error_response
from jobledger.server.inputs import bounded_int, job_id
from jobledger.server.sealed_ledger import (
    CHANGED,
    NotSealed,
    ServedLogs,
    event_leaf,
    job_receipt,
    latest,
    log_partition,
)

_EVENT_ID = re.compile(r"(0|[1-9][0-9]*)-(0|[1-9][0-9]*)")


def _logs(request: Request) -> ServedLogs:
    logs: ServedLogs | None = request.state.parts.sealed
    if logs is None:
        raise NotFound("this server serves no proofs: the ledger is not sealed ([ledger] seal is off, "
                       "or the signing key cannot be read)")  # fmt: skip
    return logs


async def _router(request: Request) -> AsyncPartitioned:
    ledger: OpeningLedger = request.state.ledger
    return await ledger.opened()


def _partition(request: Request, router: AsyncPartitioned) -> int:
    """``?partition=N``: required on a split ledger, 0 (or absent) on a ledger of one."""
    count = router.partitioning.count
    raw = request.query_params.get("partition")
    if raw is None:
        if count > 1:
            raise BadRequest(
                f"the ledger has {count} partitions, a log each: give partition=0 to {count - 1}"
            )
        return 0
    partition = bounded_int(raw, "partition")
    if partition >= count:
        raise BadRequest(f"partition must be from 0 to {count - 1}, not {partition}")
    return partition


async def _log(request: Request) -> tuple[AsyncPartitioned, int, SealedLog]:
    logs = _logs(request)
    router = await _router(request)
    partition = _partition(request, router)
    return router, partition, logs.log(log_partition(router, partition))


async def _latest(log: SealedLog) -> tuple[str, Checkpoint]:
    found = await asyncio.to_thread(latest, log)
    if found is None:
        raise NotFound(f"{log.origin} has no checkpoint yet")
    return found


def _size(request: Request, name: str, latest_size: int, required: bool) -> int:
    """A tree size of the query, from 1 to the latest checkpoint's (its default)."""
    raw = request.query_params.get(name)
    if raw is None:
        if required:
            raise BadRequest(f"{name} is required: the size of a checkpoint, at most {latest_size}")
        return latest_size
    size = bounded_int(raw, name)
    if not 1 <= size <= latest_size:
        raise BadRequest(f"{name} must be from 1 to the latest checkpoint's size, {latest_size}, not {size}")
    return size


async def _kept(name: str, log: SealedLog, size: int, latest_size: int) -> None:
    """400 unless a checkpoint of ``size`` was published: proofs are for the sizes clients hold."""
    if size != latest_size and not await asyncio.to_thread(log.kept, size):
        raise BadRequest(
            f"{name}: no checkpoint of size {size} was published (a proof is for a checkpoint's size)"
        )


async def key(request: Request) -> Response:
    """``GET /ledger/key``: the verifier key (Go's note format), what an auditor keeps."""
    return PlainTextResponse(_logs(request).key.text + "\n")


async def checkpoint(request: Request) -> Response:
    """``GET /ledger/checkpoint``: the latest signed checkpoint, as published."""
    _, _, log = await _log(request)
    note, _ = await _latest(log)
    return PlainTextResponse(note)


def _inclusion(log: SealedLog, event_id: str, leaf: bytes, size: int) -> InclusionProof:
    index = log.index_of(event_id, size)
    if index is None:
        raise NotFound(f"event {event_id} is not among the first {size} events sealed in {log.origin}")
    nodes = log.nodes(size)
    proof = InclusionProof.make(leaf, index, size, nodes)
    try:
        verify_inclusion(leaf_hash(leaf), index, size, proof.hashes, root(size, nodes))
    except ProofFailed as exc:
        raise Conflict(f"{CHANGED}: event {event_id}: {exc}") from exc
    return proof


async def inclusion(request: Request) -> Response:
    """``GET /ledger/proof/inclusion?event=ID[&size=N]``: the event's leaf and its inclusion proof
    in the tree of N leaves (default: the latest checkpoint's)."""
    router, partition, log = await _log(request)
    event_id = request.query_params.get("event", "")
    if not (_EVENT_ID.fullmatch(event_id) and valid_event_id(event_id)):
        raise BadRequest(f"event must be an event id (MS-SEQ), not {event_id[:40]!r}")
    _, latest_checkpoint = await _latest(log)
    size = _size(request, "size", latest_checkpoint.size, required=False)
    await _kept("size", log, size, latest_checkpoint.size)
    leaf = await event_leaf(router.runners[partition], event_id, request.state.parts.sealed.archive)
    try:
        proof = await asyncio.to_thread(_inclusion, log, event_id, leaf, size)
    except SealError as exc:
        raise Conflict(f"{CHANGED}: {exc}") from exc
    return JSONResponse(proof.to_json())


def _consistency(log: SealedLog, old: int, new: int) -> ConsistencyProof:
    nodes = log.nodes(new)
    proof = ConsistencyProof.make(old, new, nodes)
    verify_consistency(old, new, root(old, nodes), root(new, nodes), proof.hashes)
    return proof


async def consistency(request: Request) -> Response:
    """``GET /ledger/proof/consistency?from=N1[&to=N2]``: that the tree of N1 leaves is a prefix of
    the tree of N2 (default: the latest checkpoint's size)."""
    _, _, log = await _log(request)
    _, latest_checkpoint = await _latest(log)
    new = _size(request, "to", latest_checkpoint.size, required=False)
    old = _size(request, "from", latest_checkpoint.size, required=True)
    if old > new:
        raise BadRequest(f"from ({old}) must be at most to ({new})")
    await _kept("from", log, old, latest_checkpoint.size)
    await _kept("to", log, new, latest_checkpoint.size)
    try:
        proof = await asyncio.to_thread(_consistency, log, old, new)
    except SealError as exc:
        raise Conflict(f"{CHANGED}: {exc}") from exc
    return JSONResponse(proof.to_json())


async def receipt(request: Request) -> Response:
    """``GET /job/{id}/receipt``: every event of the job with its inclusion proof against the latest
    checkpoint, checked offline by ``jobledger ledger verify-receipt``; 409 with Retry-After while
    some of its events are not sealed yet."""
    jid = job_id(request)
    logs = _logs(request)
    try:
        found = await job_receipt(logs, await _router(request), jid)
    except NotSealed as exc:
        response = error_response(409, exc.message)
        response.headers["retry-after"] = str(exc.retry_after)
        return response
    return JSONResponse(found)

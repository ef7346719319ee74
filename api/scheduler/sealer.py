"""The sealer: the scheduler's task that turns each partition's events into a signed, published tree.

Off the hot path: appending an event costs what it did; a sealer per partition reads the stream in
order after the last event it sealed, hashes the new events into the tree
(:class:`~jobledger.replay.sealing.LogSealer`), and publishes the new tiles, then the checkpoint,
outside Redis (:mod:`jobledger.blobs.log_files`).  A round starts every ``[ledger] seal_interval``
while events come (an idle round is one XREVRANGE); a round that has work publishes at least once per
interval however far behind it is, and one that took the whole interval is followed at once (an
event waits at most about an interval for the round that seals it, not an interval after a long
round).  The hashing and the files are done in a thread.

One sealer at a time per partition: a round holds ``{NS}:seal:lock`` (as the archiver holds its
lock), and starts from what was published (the latest checkpoint and its tiles), so another
scheduler's sealer, or one that died half way, is simply taken up where it published.  After
publishing, the round records the checkpoint in ``{NS}:seal`` (size, last event id, root, when):
the archive trims no event after ``last``, and the seal lag is read there.

The signing key (:func:`load_signer`) never enters Redis: ``[ledger] signing_key`` names its file,
or the data directory's ``<namespace>.ledger.key`` is used, made on the first start (said in the
log): one per ledger, as two ledgers may share a data directory.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jobledger.blobs import namespace_part
from jobledger.blobs.log_files import Conflict, LogFiles, open_log_files
from jobledger.ledger.errors import Unavailable
from jobledger.ledger.event_lines import RawEntry
from jobledger.ledger.keys import Keys
from jobledger.ledger.reads import Read
from jobledger.ledger.seal.checkpoints import Checkpoint, origin
from jobledger.ledger.seal.errors import Malformed, SealError
from jobledger.ledger.seal.hashes import to_base64
from jobledger.ledger.seal.keys import SignerKey, generate, read_key_file, write_key_file
from jobledger.ledger.stream import id_key
from jobledger.projections.archive import ArchiveSource, archive_key, archived_entries, parse_record
from jobledger.replay.sealed_log import SealedLog
from jobledger.replay.sealing import LogSealer
from jobledger.runtime.config import BlobsConfig
from jobledger.runtime.private import private_dir

if TYPE_CHECKING:
    from jobledger.ledger.runner import AsyncLedger
    from jobledger.runtime.config import Config

log = logging.getLogger("jobledger.sealer")

KEY_SUFFIX = ".ledger.key"
BATCH = 2000
LOCK_MS = 15_000  # a sealer that died holding it delays the next one by as much
#: Pause (s) after a round failed, doubling up to RETRY_MAX.
RETRY_FIRST, RETRY_MAX = 0.5, 30.0


@dataclass(frozen=True)
class SealSettings:
    """``[ledger]``'s sealing: every ``interval_ms``, signed by ``signer``, the files kept beside the
    blobs of ``blobs`` / ``data_dir``."""

    interval_ms: int
    signer: SignerKey
    blobs: BlobsConfig
    data_dir: Path

    def files(self, namespace: str, partition: int | None) -> LogFiles:
        return open_log_files(self.blobs, self.data_dir, namespace, partition)

    def log_of(self, namespace: str, partition: int | None) -> SealedLog:
        """The published log of partition ``partition`` (None: a ledger of one) of ``namespace``."""
        return SealedLog(
            self.files(namespace, partition), origin(namespace, partition), [self.signer.verifier]
        )


def default_key_file(data_dir: Path, namespace: str) -> Path:
    """The data directory's key file of the ledger ``namespace``: ``<namespace>.ledger.key``."""
    return data_dir / (namespace_part(namespace) + KEY_SUFFIX)


def key_path(config: Config) -> Path:
    """Where the signing key is: ``[ledger] signing_key``, else the data directory's key file of the
    ledger (:func:`default_key_file`)."""
    return config.ledger.signing_key or default_key_file(config.embedded.data_dir, config.redis.key_namespace)


def make_key_file(path: Path, namespace: str) -> SignerKey:
    """A new signing key for the ledger ``namespace``, written 0600 at ``path`` (never over a file)."""
    key = generate(origin(namespace))
    private_dir(path.parent)
    write_key_file(path, key)
    return key


def load_signer(config: Config, create: bool = False) -> SignerKey:
    """The ledger's signing key, read from its file; made there first with ``create`` when it is the
    default file and absent.  :class:`FileNotFoundError` or :class:`Malformed` (a key of another
    ledger, a file others may read) otherwise."""
    path = key_path(config)
    namespace = config.redis.key_namespace
    if create and config.ledger.signing_key is None and not path.exists():
        key = make_key_file(path, namespace)
        log.info("made the ledger's signing key in %s; its verifier key: %s", path, key.verifier.text)
    key = read_key_file(path)
    if key.name != origin(namespace):
        raise Malformed(f"the key in {path} is {key.name}'s, not the ledger {origin(namespace)}'s")
    return key


def seal_settings(config: Config, create: bool = True) -> SealSettings | None:
    """The configured sealing, None when ``[ledger] seal`` is off."""
    if not config.ledger.seal:
        return None
    return SealSettings(config.ledger.seal_interval, load_signer(config, create), config.blobs,
                        config.embedded.data_dir)  # fmt: skip


def _s(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class SealState:
    """What the sealer recorded in ``{NS}:seal`` (its last checkpoint's ``size``, the ``last`` event
    it sealed), and ``waiting``: the ``at`` of the oldest event not sealed yet, None when none is."""

    size: int
    last: str | None
    waiting: int | None

    def lag_ms(self, now: int) -> int:
        """The seal lag: how long the oldest event not sealed yet has waited (0 when all are)."""
        return 0 if self.waiting is None else max(0, now - self.waiting)


def seal_state() -> Read[SealState]:
    """The partition's :class:`SealState`: the sealer's record, then the first event after it."""

    def record(r: list[Any]) -> Read[SealState]:
        reply = r[0] or {}
        pairs = zip(reply[::2], reply[1::2], strict=True) if isinstance(reply, list) else reply.items()
        fields = {_s(k): _s(v) for k, v in pairs}
        size, last = int(fields.get("size") or 0), fields.get("last") or None
        start = "-" if last is None else "(" + last

        def oldest(r: list[Any]) -> SealState:
            entry = r[0][0] if r[0] else None
            at = None if entry is None else {_s(k): _s(v) for k, v in entry[1].items()}.get("at")
            return SealState(size, last, None if at is None else int(at))

        return Read(lambda k: [("XRANGE", k.events, start, "+", "COUNT", 1)], oldest)

    return Read(lambda k: [("HGETALL", k.build("seal"))], record)


class Sealer:
    """The sealer of one partition's log (see the module)."""

    def __init__(
        self,
        ledger: AsyncLedger,
        settings: SealSettings,
        namespace: str,
        partition: int | None,
        archive: ArchiveSource | None = None,
    ) -> None:
        self.ledger, self.archive = ledger, archive
        self.keys: Keys = ledger.keys
        self.interval = max(settings.interval_ms, 1) / 1000
        self.core = LogSealer(settings.log_of(namespace, partition), settings.signer)
        self.origin = self.core.log.origin
        self.stuck: str | None = None  # why the last round stopped short (logged once)

    async def _newest(self) -> str | None:
        newest = await self.ledger.client.xrevrange(self.keys.events, "+", "-", count=1)
        return _s(newest[0][0]) if newest else None

    async def _next(self) -> list[RawEntry]:
        """The ledger's events after the last sealed one, a batch of them: from the archive while
        they are archived (see :func:`jobledger.replay.source.read_ledger`), then the stream."""
        after = self.core.last_id
        pipe = self.ledger.client.pipeline(transaction=False)
        pipe.xrange(self.keys.events, "-" if after is None else "(" + after, "+", count=BATCH)
        pipe.hgetall(archive_key(self.keys))
        entries, raw = await pipe.execute()
        rec = parse_record(raw)
        if rec is not None and (after is None or id_key(after) < id_key(rec.last_id)):
            return await asyncio.to_thread(
                lambda: next(archived_entries(self.archive, rec, after, None, BATCH), [])
            )
        return cast(list[RawEntry], entries)

    async def round(self) -> int:
        """Seal what came since the last checkpoint and publish it; how many events."""
        newest = await self._newest()
        if newest is None or newest == self.core.last_id:
            return 0
        lock, token = self.keys.build("seal_lock"), uuid.uuid4().hex
        if not await self.ledger.client.set(lock, token, nx=True, px=LOCK_MS):
            return 0
        try:
            await asyncio.to_thread(self.core.resume)
            sealed = await self._extend()
            checkpoint = await asyncio.to_thread(self.core.publish)
            if checkpoint is not None:
                await self._record(checkpoint)
            return sealed
        finally:
            if _s(await self.ledger.client.get(lock) or b"") == token:
                await self.ledger.client.delete(lock)

    async def _extend(self) -> int:
        """Add the next events for at most an interval (then publish: a checkpoint at least that often)."""
        sealed, until = 0, time.monotonic() + self.interval
        while time.monotonic() < until:
            entries = await self._next()
            if not entries:
                break
            try:
                sealed += await asyncio.to_thread(self.core.add, entries)
            except Malformed as exc:
                if str(exc) != self.stuck:
                    log.error("sealing %s stops before an event that has no leaf: %s", self.origin, exc)
                self.stuck = str(exc)
                break
            if len(entries) < BATCH:
                break
        return sealed

    async def _record(self, checkpoint: Checkpoint) -> None:
        record = {"size": checkpoint.size, "last": self.core.last_id or "",
                  "root": to_base64(checkpoint.root), "at": self.ledger.clock()}  # fmt: skip
        await self.ledger.client.hset(self.keys.build("seal"), mapping=record)

    async def run(self) -> None:
        """A round every interval (at once after one that took the interval) until cancelled; a failed
        round is logged and tried again later."""
        log.info("sealing %s every %gs with key %s", self.origin, self.interval, self.core.signer)
        pause = RETRY_FIRST
        while True:
            started = time.monotonic()
            try:
                await self.round()
                wait, pause = next_round_in(self.interval, time.monotonic() - started), RETRY_FIRST
            except Unavailable as exc:
                log.warning("sealing %s skipped: %s", self.origin, exc)
                wait, pause = pause, min(pause * 2, RETRY_MAX)
            except (Conflict, SealError) as exc:
                log.error("sealing %s stopped: %s", self.origin, exc)
                wait, pause = pause, min(pause * 2, RETRY_MAX)
            except Exception:
                log.exception("sealing %s failed", self.origin)
                wait, pause = pause, min(pause * 2, RETRY_MAX)
            await asyncio.sleep(wait)


def next_round_in(interval: float, took: float) -> float:
    """Seconds from the end of a round that took ``took`` to the start of the next: rounds start
    every ``interval``, and a round that took it all is followed at once."""
    return max(0.0, interval - took)


def seal_loop(
    ledger: AsyncLedger,
    settings: SealSettings,
    namespace: str,
    partition: int | None,
    archive: ArchiveSource | None = None,
) -> Any:
    """The sealing task of one partition (``partition`` None on a ledger of one); events archived
    before they were sealed are read through ``archive``."""
    return Sealer(ledger, settings, namespace, partition, archive).run()

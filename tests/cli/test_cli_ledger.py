"""``jobledger ledger``: each kind of tampering with a sealed ledger is caught by ``ledger verify``, in a
process of its own, naming the event and how; keys, checkpoints and receipts from the command line."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from jobledger.ledger.keys import Keys
from jobledger.ledger.runner import Ledger
from jobledger.ledger.seal.checkpoints import Checkpoint, origin, sign_checkpoint
from jobledger.ledger.seal.keys import generate, write_key_file
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.proofs import root
from jobledger.ledger.stream import id_key
from jobledger.scheduler.sealer import SealSettings, default_key_file
from tests.cli.process_support import clean_env
from tests.seal_support import seal, sealed_log, settings
from tests.support.private_redis import PrivateServer
from tests.support.replay import stream_entries, workload

Entries = list[tuple[bytes, dict[bytes, bytes]]]


def run(data_dir: Path, redis_url: str, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``jobledger ARGS`` in a process of its own, on the test's ledger and data directory."""
    where = ["--redis-url", redis_url, "--namespace", namespace, "--data-dir", str(data_dir)]
    command = [sys.executable, "-m", "jobledger.cli.main", *args, *where]
    return subprocess.run(command, capture_output=True, text=True, env=clean_env(), timeout=60, check=False)


class Sealed:
    """A ledger with a workload, sealed with the data directory's key, and how to tamper with it."""

    def __init__(self, client: redis.Redis, redis_url: str, namespace: str, data_dir: Path) -> None:
        self.client, self.redis_url, self.namespace, self.data_dir = client, redis_url, namespace, data_dir
        self.key = generate(origin(namespace))
        data_dir.mkdir(mode=0o700)
        write_key_file(default_key_file(data_dir, namespace), self.key)
        self.seal: SealSettings = settings(data_dir / "blobs", self.key)

    def sealed(self) -> int:
        return seal(self.redis_url, self.namespace, self.seal)

    def verify(self, *more: str) -> subprocess.CompletedProcess[str]:
        return run(self.data_dir, self.redis_url, self.namespace, "ledger", "verify", *more)

    def entries(self) -> Entries:
        return [(i, dict(f)) for i, f in stream_entries(self.client, self.namespace)]

    def rewrite(self, change: Callable[[Entries], Entries]) -> None:
        """The stream rewritten with explicit ids, as ``change`` makes it."""
        entries = change(self.entries())
        events = Keys(self.namespace).events
        self.client.delete(events)
        for entry_id, fields in entries:
            self.client.xadd(events, fields, id=entry_id)  # type: ignore[arg-type]

    @property
    def ids(self) -> list[str]:
        return [i.decode() for i, _ in self.entries()]


@pytest.fixture
def ledger_sealed(
    client: redis.Redis, redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> Sealed:
    sealed = Sealed(client, redis_url, namespace, tmp_path / "data")
    workload(ledger, jobs=120)
    assert sealed.sealed() > 256  # more than one tile
    return sealed


def test_an_untouched_sealed_ledger_verifies(ledger_sealed: Sealed) -> None:
    done = ledger_sealed.verify()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"verified {len(ledger_sealed.ids):,} events" in done.stdout


def _changed(entries: Entries, at: int) -> Entries:
    fields = dict(entries[at][1])
    fields[b"actor"] = b"mallory"
    return [*entries[:at], (entries[at][0], fields), *entries[at + 1 :]]


def _swapped(entries: Entries, at: int) -> Entries:
    (a, fa), (b, fb) = entries[at], entries[at + 1]
    return [*entries[:at], (a, fb), (b, fa), *entries[at + 2 :]]


def _free_id(ids: list[str], at: int) -> tuple[int, str]:
    """From ``at`` on, the first place where an id fits between two events: the place and the id."""
    for place in range(at, len(ids) - 1):
        ms, seq = (int(n) for n in ids[place].split("-"))
        if id_key(ids[place + 1]) > (ms, seq + 1):
            return place + 1, f"{ms}-{seq + 1}"
    raise AssertionError("no room between two ids")


def _inserted(entries: Entries, place: int, new: str) -> Entries:
    return [*entries[:place], (new.encode(), dict(entries[place - 1][1])), *entries[place:]]


@pytest.mark.parametrize(
    ("tamper", "kind", "at"),
    [
        ("field", "altered", 300),
        ("xdel", "removed", 17),
        ("swap", "reordered", 40),
        ("insert", "inserted", 41),
        ("truncate", "truncated", 0),
        ("cut end", "truncated", -2),
    ],
)
def test_each_tampering_with_the_stream_is_named_with_its_event(
    ledger_sealed: Sealed, tamper: str, kind: str, at: int
) -> None:
    ids = ledger_sealed.ids
    events = Keys(ledger_sealed.namespace).events
    client = ledger_sealed.client
    named = ids[at]
    if tamper == "field":
        ledger_sealed.rewrite(lambda e: _changed(e, at))
    elif tamper == "xdel":
        client.xdel(events, ids[at])
    elif tamper == "swap":
        ledger_sealed.rewrite(lambda e: _swapped(e, at))
    elif tamper == "insert":
        place, named = _free_id(ids, at)
        ledger_sealed.rewrite(lambda e: _inserted(e, place, named))
    elif tamper == "truncate":
        client.xtrim(events, minid=ids[5], approximate=False)
    else:
        client.xdel(events, *ids[at:])
    done = ledger_sealed.verify()
    assert done.returncode == 1, done.stdout + done.stderr
    assert f": {kind}: {named}:" in done.stdout, done.stdout


def test_a_replaced_or_forged_checkpoint_is_a_bad_signature(ledger_sealed: Sealed) -> None:
    log = sealed_log(ledger_sealed.seal, ledger_sealed.namespace)
    latest = log.latest()
    assert latest is not None
    checkpoint = latest.checkpoint
    other = generate(origin(ledger_sealed.namespace))  # another key, with the same name
    log.files.replace("checkpoint", sign_checkpoint(checkpoint, other).encode())
    done = ledger_sealed.verify()
    assert done.returncode == 1 and "bad signature: the latest checkpoint" in done.stdout, done.stdout

    note = sign_checkpoint(Checkpoint(checkpoint.origin, checkpoint.size, bytes(32)), ledger_sealed.key)
    text, _, line = note.rpartition("\n\n")
    raw = base64.b64decode(line.split(" ")[2])
    forged = raw[:4] + bytes(64)  # the key's id, a signature it never made
    log.files.replace(
        "checkpoint", f"{text}\n\n{line.rsplit(' ', 1)[0]} {base64.b64encode(forged).decode()}\n".encode()
    )
    done = ledger_sealed.verify()
    assert done.returncode == 1 and "bad signature: the latest checkpoint" in done.stdout, done.stdout


def test_a_kept_checkpoint_catches_a_rewritten_log(ledger_sealed: Sealed, tmp_path: Path) -> None:
    saved = run(ledger_sealed.data_dir, ledger_sealed.redis_url, ledger_sealed.namespace,
                "ledger", "checkpoints", "--save", str(tmp_path / "kept"))  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    kept = tmp_path / "kept" / "ledger" / "latest"
    assert ledger_sealed.verify("--since", str(kept)).returncode == 0
    log = sealed_log(ledger_sealed.seal, ledger_sealed.namespace)
    latest = log.latest()
    assert latest is not None
    # a true, older checkpoint put back as the latest: the log was cut below what the auditor saw
    older = Checkpoint(latest.checkpoint.origin, 256, root(256, log.nodes(256)))
    log.files.replace("checkpoint", sign_checkpoint(older, ledger_sealed.key).encode())
    done = ledger_sealed.verify("--since", str(kept))
    assert done.returncode == 1, done.stdout
    assert ": truncated: the checkpoint given: the log was at size" in done.stdout, done.stdout


def test_keygen_writes_a_private_key_once_and_key_prints_its_verifier(
    redis_url: str, namespace: str, ledger: Ledger, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    made = run(data, redis_url, namespace, "ledger", "keygen")
    assert made.returncode == 0, made.stderr
    key_file = default_key_file(data, namespace)
    assert key_file.stat().st_mode & 0o777 == 0o600
    again = run(data, redis_url, namespace, "ledger", "keygen")
    assert again.returncode == 2 and "never overwritten" in again.stderr
    shown = run(data, redis_url, namespace, "ledger", "key")
    assert shown.stdout.strip() == made.stdout.strip()
    assert shown.stdout.startswith(origin(namespace) + "+")


def test_a_receipt_is_checked_offline_with_the_key_alone(ledger_sealed: Sealed, tmp_path: Path) -> None:
    log = sealed_log(ledger_sealed.seal, ledger_sealed.namespace)
    note = log.latest_note()
    assert note is not None
    entries = ledger_sealed.entries()
    job = next(int(f[b"job"]) for _, f in entries if f.get(b"job"))
    mine = [(i.decode(), leaf_bytes(i, f)) for i, f in entries if f.get(b"job") == str(job).encode()]
    receipt = log.receipt(job, note, ledger_sealed.key.verifier, mine)
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(receipt))
    vkey = ledger_sealed.key.verifier.text
    offline = [
        sys.executable,
        "-m",
        "jobledger.cli.main",
        "ledger",
        "verify-receipt",
        str(path),
        "--key",
        vkey,
    ]
    done = subprocess.run(offline, capture_output=True, text=True, env=clean_env(), timeout=60, check=False)
    assert done.returncode == 0 and f"{len(mine)} events of job {job}" in done.stdout, (
        done.stdout + done.stderr
    )

    receipt["events"][0]["hashes"][0] = "00" * 32  # a proof with one hash changed
    path.write_text(json.dumps(receipt))
    done = subprocess.run(offline, capture_output=True, text=True, env=clean_env(), timeout=60, check=False)
    assert done.returncode == 1 and "proof" in done.stdout, done.stdout


def test_replay_verify_includes_the_ledger_check(ledger_sealed: Sealed) -> None:
    """The projections rebuilt from a tampered stream match it (the issue's blind spot); the ledger
    check does not."""
    replay = ("replay", "verify")
    clean = run(ledger_sealed.data_dir, ledger_sealed.redis_url, ledger_sealed.namespace, *replay)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "verified" in clean.stdout and "events against checkpoint" in clean.stdout
    ids = ledger_sealed.ids
    ledger_sealed.rewrite(lambda e: _changed(e, 3))  # the actor of a queue's event: no projection holds it
    done = run(ledger_sealed.data_dir, ledger_sealed.redis_url, ledger_sealed.namespace, *replay)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f": altered: {ids[3]}:" in done.stdout


def test_after_a_key_rotation_old_checkpoints_verify_with_the_old_key(
    ledger_sealed: Sealed, ledger: Ledger
) -> None:
    old = ledger_sealed.key
    new = generate(origin(ledger_sealed.namespace))
    key_file = default_key_file(ledger_sealed.data_dir, ledger_sealed.namespace)
    key_file.unlink()
    write_key_file(key_file, new)
    ledger_sealed.key, ledger_sealed.seal = new, settings(ledger_sealed.data_dir / "blobs", new)
    workload(ledger, jobs=10)
    assert ledger_sealed.sealed() > 0  # the new key takes up the log the old one signed
    both = ledger_sealed.verify("--key", old.verifier.text, "--key", new.verifier.text)
    assert both.returncode == 0, both.stdout + both.stderr
    assert f"verified {len(ledger_sealed.ids):,} events" in both.stdout
    new_only = ledger_sealed.verify("--key", new.verifier.text)
    assert new_only.returncode == 1 and "bad signature: checkpoint" in new_only.stdout, new_only.stdout


def test_an_exported_ledger_imported_into_a_new_redis_keeps_its_checkpoints(
    ledger_sealed: Sealed, private: PrivateServer, tmp_path: Path
) -> None:
    # A leaf is made of the entry as stored, and an import stores every entry as it was exported
    # (same ids, same fields): the imported ledger's tree is the same tree, so a checkpoint an
    # auditor kept of the old ledger is proven consistent with the new one's.
    s = ledger_sealed
    saved = run(
        s.data_dir, s.redis_url, s.namespace, "ledger", "checkpoints", "--save", str(tmp_path / "kept")
    )
    assert saved.returncode == 0, saved.stderr
    kept = tmp_path / "kept" / "ledger" / "latest"
    exported = run(
        s.data_dir, s.redis_url, s.namespace, "events", "export", "--to", str(tmp_path / "all.jsonl")
    )
    assert exported.returncode == 0, exported.stderr

    moved = tmp_path / "moved"  # a new machine: the key file carried over, no log files yet
    moved.mkdir(mode=0o700)
    write_key_file(default_key_file(moved, s.namespace), s.key)
    imported = run(moved, private.url, s.namespace, "events", "import", str(tmp_path / "all.jsonl"))
    assert imported.returncode == 0, imported.stderr
    assert seal(private.url, s.namespace, settings(moved / "blobs", s.key)) == len(s.ids)

    old = sealed_log(s.seal, s.namespace).latest()
    new = sealed_log(settings(moved / "blobs", s.key), s.namespace).latest()
    assert old is not None and new is not None
    assert (new.checkpoint.size, new.checkpoint.root) == (old.checkpoint.size, old.checkpoint.root)
    checked = run(moved, private.url, s.namespace, "ledger", "verify", "--since", str(kept))
    assert checked.returncode == 0, checked.stdout + checked.stderr

"""The verifiable ledger over HTTP: the key, the latest checkpoint, inclusion and consistency proofs,
and a job's receipt, each checked the way an auditor would (our checker and tamperlog's, an
independent implementation of RFC 6962), on a ledger of one partition and on one split into four.
The sealer runs in the test, a round at a time, so what is sealed is exactly what the test says."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
import tamperlog.merkle as reference
from freezegun import freeze_time
from starlette.testclient import TestClient

from jobledger.ledger.keys import Keys
from jobledger.ledger.partitions import Partitioning
from jobledger.ledger.seal.checkpoints import Checkpoint, open_checkpoint
from jobledger.ledger.seal.errors import ProofFailed
from jobledger.ledger.seal.hashes import leaf_hash
from jobledger.ledger.seal.leaves import leaf_bytes
from jobledger.ledger.seal.proof_json import ConsistencyProof, InclusionProof
from jobledger.ledger.seal.receipts import verify_receipt
from jobledger.runtime.config import Config, config_from
from jobledger.scheduler.sealer import SealSettings, default_key_file, make_key_file, seal_settings
from jobledger.server.app import create_app
from tests.seal_support import seal
from tests.server import test_metrics as metrics
from tests.support.http import BASE_URL, error_of, unchanged
from tests.support.replay import archive, local_archive, stream_entries


@dataclass
class Sealed:
    """An app on a sealed ledger, its sealing, and how to run its sealer to the end."""

    api: TestClient
    settings: SealSettings
    redis_url: str
    namespace: str
    partitions: int

    def seal(self) -> int:
        if self.partitions == 1:
            return seal(self.redis_url, self.namespace, self.settings)
        names = Partitioning(self.namespace, self.partitions).namespaces
        return sum(seal(self.redis_url, ns, self.settings, p, self.namespace) for p, ns in enumerate(names))

    def checkpoint(self, partition: int | None = None) -> Checkpoint:
        query = "" if partition is None else f"?partition={partition}"
        answer = self.api.get("/ledger/checkpoint" + query)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
        return open_checkpoint(answer.text, [self.settings.signer.verifier]).checkpoint


def config(namespace: str, directory: Path, partitions: int = 1, seal: bool = True) -> Config:
    return config_from({
        "redis": {"key_namespace": namespace, "partitions": partitions},
        "ledger": {"seal": seal},
        "blobs": {"url": str(directory / "blobs")},
        "embedded": {"data_dir": str(directory)},
    })  # fmt: skip


@contextlib.contextmanager
def sealed_app(redis_url: str, namespace: str, directory: Path, partitions: int = 1) -> Iterator[Sealed]:
    """The app (no scheduler: the test seals) on a sealed ledger whose key and files are in ``directory``."""
    given = config(namespace, directory, partitions)
    make_key_file(default_key_file(directory, namespace), namespace)
    settings = seal_settings(given, create=False)
    assert settings is not None
    app = create_app(given, redis_url, run_scheduler=False)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as api:
        yield Sealed(api, settings, redis_url, namespace, partitions)


@pytest.fixture
def sealed(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[Sealed]:
    with sealed_app(redis_url, namespace, tmp_path) as found:
        yield found


def jobs(api: TestClient, queue: str = "q", count: int = 3) -> list[int]:
    """Jobs on ``queue``: the first completed, the others queued."""
    assert api.put(f"/queue/{queue}").status_code in (201, 204)
    ids = [
        api.post(f"/queue/{queue}/job", json={"input": {"n": n, "text": "héllo ✓"}}).json()
        for n in range(count)
    ]
    started = api.get(f"/queue/{queue}/job").json()
    assert api.patch(f"/job/{started['id']}", json={"status": "completed", "attempt": 1}).status_code == 204
    return ids


def leaves(client: redis.Redis, namespace: str) -> list[tuple[str, bytes]]:
    return [(i.decode(), leaf_bytes(i, dict(f))) for i, f in stream_entries(client, namespace)]


def test_key_checkpoint_and_proofs_agree_with_an_independent_implementation(
    sealed: Sealed, client: redis.Redis, namespace: str
) -> None:
    sizes = []
    for n in range(3):  # three checkpoints, a job more each time
        jobs(sealed.api, count=n + 1)
        assert sealed.seal() > 0
        sizes.append(sealed.checkpoint().size)
    key = sealed.api.get("/ledger/key")
    assert key.status_code == 200 and key.text.strip() == sealed.settings.signer.verifier.text
    checkpoint = sealed.checkpoint()
    events = leaves(client, namespace)
    hashes = [leaf_hash(leaf) for _, leaf in events]
    assert checkpoint.size == len(events) == sizes[-1] and checkpoint.root == reference.merkle_root(hashes)
    for size in sizes:
        for index, (event_id, leaf) in enumerate(events[:size]):
            answer = sealed.api.get("/ledger/proof/inclusion", params={"event": event_id, "size": size})
            assert answer.status_code == 200, answer.text
            proof = InclusionProof.from_json(answer.json())
            assert (proof.index, proof.size, proof.leaf) == (index, size, leaf)
            reference.verify_inclusion(index, size, hashes[index], list(proof.hashes),
                                       reference.merkle_root(hashes[:size]))  # fmt: skip
    default = sealed.api.get("/ledger/proof/inclusion", params={"event": events[0][0]}).json()
    assert default["size"] == checkpoint.size
    InclusionProof.from_json(default).verify(checkpoint)
    for old in sizes:
        for new in (s for s in sizes if s >= old):
            answer = sealed.api.get("/ledger/proof/consistency", params={"from": old, "to": new})
            assert answer.status_code == 200, answer.text
            between = list(ConsistencyProof.from_json(answer.json()).hashes)
            roots = reference.merkle_root(hashes[:old]), reference.merkle_root(hashes[:new])
            reference.verify_consistency(old, roots[0], new, roots[1], between)
    unkept = sealed.api.get("/ledger/proof/consistency", params={"from": sizes[0] + 1})
    assert "no checkpoint of size" in error_of(unkept, 400)


def test_a_proof_with_one_hash_changed_fails(sealed: Sealed, client: redis.Redis, namespace: str) -> None:
    jobs(sealed.api, count=2)
    sealed.seal()
    earlier = sealed.checkpoint()
    jobs(sealed.api, count=4)
    sealed.seal()
    checkpoint = sealed.checkpoint()
    event_id = leaves(client, namespace)[3][0]
    assert earlier.size > 3
    good = sealed.api.get("/ledger/proof/inclusion", params={"event": event_id}).json()
    InclusionProof.from_json(good).verify(checkpoint)
    assert len(good["hashes"]) >= 2
    for position in range(len(good["hashes"])):
        bad = {**good, "hashes": list(good["hashes"])}
        bad["hashes"][position] = ("0" if bad["hashes"][position][0] != "0" else "1") + bad["hashes"][
            position
        ][1:]
        with pytest.raises(ProofFailed):
            InclusionProof.from_json(bad).verify(checkpoint)
    other = sealed.api.get("/ledger/proof/inclusion", params={"event": event_id, "size": earlier.size}).json()
    InclusionProof.from_json(other).verify(earlier)
    with pytest.raises(ProofFailed):  # a proof for another size
        InclusionProof.from_json(other).verify(checkpoint)
    consistency = sealed.api.get("/ledger/proof/consistency", params={"from": earlier.size}).json()
    ConsistencyProof.from_json(consistency).verify(earlier, checkpoint)
    for position in range(len(consistency["hashes"])):
        bad = {"hashes": list(consistency["hashes"])}
        bad["hashes"][position] = "f" * 64
        with pytest.raises(ProofFailed):
            ConsistencyProof.from_json(bad).verify(earlier, checkpoint)


@pytest.mark.parametrize(
    ("path", "params", "status", "says"),
    [
        ("/ledger/proof/inclusion", {"event": "nope"}, 400, "event must be"),
        ("/ledger/proof/inclusion", {}, 400, "event must be"),
        ("/ledger/proof/inclusion", {"event": "1-0", "size": "0"}, 400, "from 1 to"),
        ("/ledger/proof/inclusion", {"event": "1-0", "size": "999"}, 400, "latest checkpoint's"),
        ("/ledger/proof/inclusion", {"event": "1-0", "size": "2.5"}, 400, "whole number"),
        ("/ledger/proof/inclusion", {"event": "1-0"}, 404, "no event 1-0"),
        ("/ledger/proof/inclusion", {"event": "1-0", "partition": "1"}, 400, "partition must be from 0 to 0"),
        ("/ledger/proof/consistency", {}, 400, "from is required"),
        ("/ledger/proof/consistency", {"from": "3", "to": "2"}, 400, "at most to"),
        ("/ledger/proof/consistency", {"from": "1", "to": "999"}, 400, "latest checkpoint's"),
        ("/ledger/proof/consistency", {"from": "x"}, 400, "whole number"),
        ("/ledger/checkpoint", {"partition": "-1"}, 400, "whole number"),
        ("/job/999999/receipt", {}, 404, "999999"),
    ],
)
def test_bad_input_is_refused_and_appends_nothing(
    sealed: Sealed,
    client: redis.Redis,
    namespace: str,
    path: str,
    params: dict[str, str],
    status: int,
    says: str,
) -> None:
    jobs(sealed.api)
    sealed.seal()
    with unchanged(client, namespace):
        assert says in error_of(sealed.api.get(path, params=params), status)


def test_an_event_appended_after_the_checkpoint_has_no_proof_yet(
    sealed: Sealed, client: redis.Redis, namespace: str
) -> None:
    assert "no checkpoint yet" in error_of(sealed.api.get("/ledger/checkpoint"), 404)
    jobs(sealed.api)
    sealed.seal()
    sealed.api.post("/queue/q/job", json={"input": 1})
    newest = leaves(client, namespace)[-1][0]
    assert "not among the first" in error_of(
        sealed.api.get("/ledger/proof/inclusion", params={"event": newest}), 404
    )
    sealed.seal()
    assert sealed.api.get("/ledger/proof/inclusion", params={"event": newest}).status_code == 200


def test_a_receipt_waits_for_every_event_of_the_job_to_be_sealed(sealed: Sealed) -> None:
    completed, queued, _ = jobs(sealed.api)
    answer = sealed.api.get(f"/job/{completed}/receipt")
    assert "not sealed yet" in error_of(answer, 409) and answer.headers["retry-after"] == "2"
    sealed.seal()
    receipt = sealed.api.get(f"/job/{completed}/receipt").json()
    checked = verify_receipt(receipt, [sealed.settings.signer.verifier])
    assert checked.job == completed
    assert [e.leaf.type for e in checked.events] == ["job_created", "job_started", "job_completed"]
    # one more event of a sealed job: its receipt waits again, then holds all four
    assert sealed.api.patch(f"/job/{queued}", json={"status": "cancelled"}).status_code == 204
    assert "1 of the 2 events" in error_of(sealed.api.get(f"/job/{queued}/receipt"), 409)
    sealed.seal()
    checked = verify_receipt(
        sealed.api.get(f"/job/{queued}/receipt").json(), [sealed.settings.signer.verifier]
    )
    assert [e.leaf.type for e in checked.events] == ["job_created", "job_cancelled"]


def test_an_archived_job_still_gets_its_receipt_and_proofs(
    sealed: Sealed, client: redis.Redis, namespace: str, tmp_path: Path
) -> None:
    completed, *_ = jobs(sealed.api)
    sealed.seal()
    events = leaves(client, namespace)
    assert archive(
        sealed.redis_url, namespace, local_archive(tmp_path / "blobs" / namespace, namespace), 2**62
    ) == len(events)
    assert client.xlen(Keys(namespace).events) == 0
    checkpoint = sealed.checkpoint()
    for index, (event_id, leaf) in enumerate(events):
        proof = sealed.api.get("/ledger/proof/inclusion", params={"event": event_id}).json()
        assert InclusionProof.from_json(proof).verify(checkpoint).id == event_id
        assert proof["index"] == index and proof["leaf"].encode() == leaf
    checked = verify_receipt(
        sealed.api.get(f"/job/{completed}/receipt").json(), [sealed.settings.signer.verifier]
    )
    assert len(checked.events) == 3


def test_an_event_changed_under_its_seal_gets_no_proof(
    sealed: Sealed, client: redis.Redis, namespace: str
) -> None:
    completed, *_ = jobs(sealed.api)
    sealed.seal()
    stream = Keys(namespace).events
    entries = [(i, dict(fields)) for i, fields in stream_entries(client, namespace)]
    first_id = next(i for i, fields in entries if fields.get(b"job") == str(completed).encode())
    client.delete(stream)  # the stream rewritten under the same ids, the job's first event's actor changed
    for entry_id, fields in entries:
        changed = {**fields, b"actor": b"mallory"} if entry_id == first_id else fields
        client.xadd(stream, dict(changed.items()), id=entry_id)  # type: ignore[arg-type]
    says = error_of(sealed.api.get("/ledger/proof/inclusion", params={"event": first_id.decode()}), 409)
    assert "differs from what was sealed" in says
    assert "differs from what was sealed" in error_of(sealed.api.get(f"/job/{completed}/receipt"), 409)


def test_the_seal_lag_is_how_long_the_oldest_event_not_sealed_has_waited(sealed: Sealed) -> None:
    assert metrics.value(metrics.scrape(sealed.api), "jobledger_seal_lag_seconds", partition="0") == 0
    jobs(sealed.api)
    with freeze_time(datetime.now(UTC) + timedelta(seconds=10)):
        lag = metrics.value(metrics.scrape(sealed.api), "jobledger_seal_lag_seconds", partition="0")
    assert 9 <= lag <= 10.5
    sealed.seal()
    with freeze_time(datetime.now(UTC) + timedelta(seconds=10)):
        assert metrics.value(metrics.scrape(sealed.api), "jobledger_seal_lag_seconds", partition="0") == 0


def test_a_ledger_not_sealed_serves_no_proofs(redis_url: str, namespace: str, tmp_path: Path) -> None:
    app = create_app(config(namespace, tmp_path, seal=False), redis_url, run_scheduler=False)
    with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as api:
        assert "jobledger_seal_lag_seconds" not in metrics.names(metrics.scrape(api))
        for path in (
            "/ledger/key",
            "/ledger/checkpoint",
            "/ledger/proof/inclusion?event=1-0",
            "/job/1/receipt",
        ):
            assert "not sealed" in error_of(api.get(path), 404)


def test_a_split_ledger_has_a_log_and_proofs_per_partition(
    redis_url: str, namespace: str, tmp_path: Path
) -> None:
    with sealed_app(redis_url, namespace, tmp_path, partitions=4) as split:
        made = [job for n in range(8) for job in jobs(split.api, f"q{n}", count=2)]
        split.seal()
        assert "give partition=0 to 3" in error_of(split.api.get("/ledger/checkpoint"), 400)
        assert "from 0 to 3" in error_of(split.api.get("/ledger/checkpoint?partition=4"), 400)
        names = Partitioning(namespace, 4).namespaces
        sizes = []
        for p, ns in enumerate(names):
            checkpoint = split.checkpoint(p)
            assert checkpoint.origin == f"jobledger/{namespace}/p{p}"
            events = leaves(redis.Redis.from_url(redis_url), ns)
            sizes.append(len(events))
            assert checkpoint.size == len(events)
            assert checkpoint.root == reference.merkle_root([leaf_hash(leaf) for _, leaf in events])
            if events:
                proof = split.api.get(
                    "/ledger/proof/inclusion", params={"event": events[-1][0], "partition": p}
                )
                InclusionProof.from_json(proof.json()).verify(checkpoint)
                consistency = split.api.get(
                    "/ledger/proof/consistency", params={"from": checkpoint.size, "partition": p}
                )
                assert consistency.status_code == 200
        assert sum(1 for s in sizes if s) > 1
        samples = metrics.scrape(split.api)
        assert [metrics.value(samples, "jobledger_seal_lag_seconds", partition=str(p)) for p in range(4)] == [
            0
        ] * 4
        verifier = split.settings.signer.verifier
        origins = set()
        for job in made:
            checked = verify_receipt(split.api.get(f"/job/{job}/receipt").json(), [verifier])
            assert checked.job == job
            origins.add(checked.checkpoint.origin)
        assert len(origins) > 1

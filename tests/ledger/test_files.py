"""Files of jobs in the ledger: references in ``job_created`` and ``job_result_added``, the job's
record, the count of references per blob, fencing of results, and replay of all of it."""

from __future__ import annotations

import hashlib

import pytest
import redis
from freezegun.api import FrozenDateTimeFactory
from pydantic import ValidationError

from jobledger.ledger import commands
from jobledger.ledger.errors import Conflict, NotFound
from jobledger.ledger.files import FileRef
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import Ledger
from jobledger.replay.compare import compare
from jobledger.replay.rebuild import rebuild
from tests.support.ledger import (
    assert_well_placed,
    create,
    event_types,
    events,
    fetch_one,
    job,
    put_queue,
    refused,
    run_tick,
    update,
)


def ref(name: str, content: bytes, media_type: str = "text/plain") -> FileRef:
    sha256 = hashlib.sha256(content).hexdigest()
    return FileRef(name=name, sha256=sha256, size=len(content), media_type=media_type)


RUN = ref("run.sh", b"echo hi > out.txt\n", "text/x-sh")
DATA = ref("data.csv", b"a,b\n1,2\n", "text/csv")
OUT = ref("out.txt", b"hi\n")


def blob_refs(ledger: Ledger) -> dict[str, int]:
    raw = ledger.client.hgetall(ledger.keys.blob_refs)
    return {k.decode(): int(v) for k, v in raw.items()}


def create_with(ledger: Ledger, *files: FileRef, **options: object) -> int:
    opts = JobOptions(**options).with_files(list(files))  # type: ignore[arg-type]
    return ledger.run(commands.create_job("q", opts)).id


def test_a_jobs_files_are_in_its_event_and_its_record(
    client: redis.Redis, ledger: Ledger, namespace: str
) -> None:
    put_queue(ledger)
    job_id = create_with(ledger, RUN, DATA, input={"user": "u1"})
    (created,) = events(client, namespace, job_id)
    assert '"sha256":"' + RUN.sha256 in created["data"]
    assert job(ledger, job_id)["files"] == [RUN.model_dump(), DATA.model_dump()]
    assert blob_refs(ledger) == {RUN.sha256: 1, DATA.sha256: 1}
    other = create_with(ledger, RUN)
    assert blob_refs(ledger) == {RUN.sha256: 2, DATA.sha256: 1}
    assert job(ledger, other)["results"] == []
    assert job(ledger, create(ledger, "q"))["files"] == []
    assert_well_placed(ledger)


def test_unresolved_files_never_reach_a_script(ledger: Ledger) -> None:
    put_queue(ledger)
    options = JobOptions(files=[{"name": "a", "sha256": RUN.sha256}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="size and media type"):
        commands.create_job("q", options)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "..\\x", "x\n", "a" * 256])
def test_a_name_that_is_not_one_path_segment_is_refused(name: str) -> None:
    with pytest.raises(ValidationError):
        FileRef(name=name, sha256=RUN.sha256, size=1)


@pytest.mark.parametrize("name", ["a\x85b", "x\u202egpj.exe", "cafe\u0301"])
def test_a_name_recorded_before_the_stricter_rules_reads_back_as_recorded(name: str) -> None:
    """A C1 control, a bidi override, a name not in NFC: refused or normalised on the way in, yet an
    event that already holds one (written before those rules) still decodes, unchanged, so history
    and replay read what the ledger holds."""
    try:
        given = JobOptions(files=[{**RUN.model_dump(), "name": name}])  # type: ignore[list-item]
    except ValidationError:
        pass
    else:
        assert given.files and given.files[0].name == "caf\u00e9" != name
    assert FileRef(name=name, sha256=RUN.sha256, size=1).name == name


def test_two_files_of_one_name_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"two files are named 'run\.sh'"):
        JobOptions(files=[RUN.model_dump(), RUN.model_dump()])  # type: ignore[list-item]


def test_the_running_attempt_adds_results_and_a_stale_one_is_fenced(
    client: redis.Redis, ledger: Ledger, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, retries=1, timeout="10s")
    job_id = create_with(ledger, RUN)
    first = fetch_one(ledger)
    assert ledger.run(commands.add_result(job_id, OUT, attempt=first.attempt)) == 1
    frozen.tick(11)
    run_tick(ledger)  # the first attempt times out; its retry is due at once
    run_tick(ledger)
    second = fetch_one(ledger)
    assert second.attempt == 2
    refused(ledger, commands.add_result(job_id, DATA, attempt=first.attempt), Conflict)
    replacement = ref("out.txt", b"hello again\n")
    assert ledger.run(commands.add_result(job_id, replacement, attempt=2)) == 2
    assert ledger.run(commands.add_result(job_id, DATA)) == 2, "no attempt named: the running one's"
    results = job(ledger, job_id)["results"]
    assert [(r["name"], r["sha256"], r["attempt"]) for r in results] == [
        ("out.txt", replacement.sha256, 2),
        ("data.csv", DATA.sha256, 2),
    ]
    assert results[0]["size"] == 12 and results[0]["media_type"] == "text/plain"
    expected = {RUN.sha256: 1, replacement.sha256: 1, DATA.sha256: 1}
    assert blob_refs(ledger) == expected, "out.txt's first blob is named no more"
    assert event_types(ledger, job_id).count("job_result_added") == 3
    update(ledger, job_id, status="completed", attempt=2)
    refused(ledger, commands.add_result(job_id, OUT), Conflict)
    refused(ledger, commands.add_result(job_id + 1, OUT), NotFound)
    assert_well_placed(ledger)
    rebuild(client, namespace, namespace + "-rebuilt")
    assert compare(client, namespace + "-rebuilt", namespace) == []


def test_expiry_and_delete_drop_the_references(
    client: redis.Redis, ledger: Ledger, namespace: str, frozen: FrozenDateTimeFactory
) -> None:
    put_queue(ledger, expires_after="1m")
    kept, gone, deleted = (create_with(ledger, RUN, DATA) for _ in range(3))
    for _ in (kept, gone):
        f = fetch_one(ledger)
        ledger.run(commands.add_result(f.id, OUT, attempt=f.attempt))
        update(ledger, f.id, status="completed", attempt=f.attempt)
    assert blob_refs(ledger) == {RUN.sha256: 3, DATA.sha256: 3, OUT.sha256: 2}
    ledger.run(commands.delete_job(deleted))
    assert blob_refs(ledger) == {RUN.sha256: 2, DATA.sha256: 2, OUT.sha256: 2}
    frozen.tick(61)
    run_tick(ledger)
    assert blob_refs(ledger) == {}, "both completed jobs expired: nothing names a blob"
    assert "job_expired" in event_types(ledger, kept)
    rebuild(client, namespace, namespace + "-rebuilt")
    assert compare(client, namespace + "-rebuilt", namespace) == []


def test_a_job_holds_at_most_max_files_results(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "MAX_FILES", 2)
    put_queue(ledger)
    job_id = create(ledger)
    fetch_one(ledger)
    for i in range(2):
        ledger.run(commands.add_result(job_id, ref(f"r{i}", b"x")))
    ledger.run(commands.add_result(job_id, ref("r1", b"y")))  # a replacement is not one more
    error = refused(ledger, commands.add_result(job_id, ref("r2", b"x")), Conflict)
    assert "as many as a job may" in str(error)


def test_queue_limits_default_and_round_trip(ledger: Ledger) -> None:
    from jobledger.projections import readers

    put_queue(ledger, "big", max_file_size=5, max_job_bytes=0)
    put_queue(ledger, "plain")
    big = ledger.read(readers.queue("big"))
    plain = ledger.read(readers.queue("plain"))
    assert (big.max_file_size, big.max_job_bytes) == (5, 0)
    assert (plain.max_file_size, plain.max_job_bytes) == (2**30, 4 * 2**30)

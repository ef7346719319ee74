"""Files of jobs as the ledger records them: a name and the SHA-256, size and media type of its bytes.

Bytes never enter the ledger.  A job's input files (``files`` in its ``job_created`` event and its
record) and its results (one ``job_result_added`` event each, ``results`` in its record) are
references to blobs, which a blob store (:mod:`jobledger.blobs`) keeps under their SHA-256.  So the
ledger still says exactly which bytes every job got and gave, and replay, verify and export keep that.

The rules of names, hashes and media types are :mod:`jobledger.contract.files`, which the client
shares.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr

from jobledger.contract.files import (
    DEFAULT_MEDIA_TYPE,
    MAX_SIZE,
    MEDIA_TYPE_PATTERN,
    SHA256_PATTERN,
    checked_name,
    recorded_name_problem,
)


def _recorded_name(name: str) -> str:
    problem = recorded_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


#: A name a request gives: normalised and checked by every rule.
FileName = Annotated[StrictStr, AfterValidator(checked_name)]
#: A name as the ledger holds it, read back unchanged: a name recorded before the rules grew (a C1
#: control, say) still decodes, and reads as it was recorded, so history and replay stay exact.
RecordedName = Annotated[StrictStr, AfterValidator(_recorded_name)]
Sha256 = Annotated[StrictStr, Field(pattern=SHA256_PATTERN)]
Size = Annotated[StrictInt, Field(ge=0, le=MAX_SIZE)]
MediaType = Annotated[StrictStr, Field(pattern=MEDIA_TYPE_PATTERN, max_length=255)]


class FileRef(BaseModel):
    """One file of a job, as its events and its record hold it (a new one's name was checked as a
    :data:`FileName` on its way in)."""

    # defer_build: validators built by the first validation, not by every process's start
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: RecordedName
    sha256: Sha256
    size: Size
    media_type: MediaType = DEFAULT_MEDIA_TYPE


class FileSpec(BaseModel):
    """A file a job body names by the SHA-256 of a blob already stored (``PUT /blob``); the server
    looks up its size (and refuses a blob it does not hold) before the job is created."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: FileName
    sha256: Sha256
    size: Size | None = None
    media_type: MediaType | None = None

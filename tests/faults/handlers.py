"""The handler the fault suite's workers run (``tests.faults.handlers:record``): it writes one line
per run to the file named by ``FAULTS_RUNS`` (job id, attempt, worker pid, wall time) before it
works, so a run is on record even when its worker is killed while it works."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from jobledger.worker.worker import JobContext

#: Seconds a run takes, at least and at most: long enough that a killed worker often holds a job.
SHORTEST, LONGEST = 0.02, 0.2


def record(job: JobContext) -> dict[str, Any]:
    line = f"{job.id} {job.attempt} {os.getpid()} {time.time():.6f}\n"
    fd = os.open(os.environ["FAULTS_RUNS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())  # one write of a short line with O_APPEND: lines never interleave
    finally:
        os.close(fd)
    time.sleep(random.uniform(SHORTEST, LONGEST))
    return {"ran_by": os.getpid()}

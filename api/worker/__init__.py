"""The worker: runs a handler on jobs fetched over HTTP or straight from Redis."""

from jobledger.worker.jobs import Handler, JobContext
from jobledger.worker.worker import Worker

__all__ = ["Handler", "JobContext", "Worker"]

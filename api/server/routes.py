"""Every route of the HTTP API, one record each, grouped by resource.

A new route is one entry here: its method and path, its endpoint (``"module:function"``, imported on
first use), the scope a token needs (:class:`jobledger.server.auth.Needs`).  The router
(:func:`jobledger.server.api_route.api_paths`), the token check and the OpenAPI document are all
derived from this table.
"""

from __future__ import annotations

from jobledger.server.api_route import ApiRoute
from jobledger.server.api_route import warm as warm_routes
from jobledger.server.auth import ADMIN, OPEN, READ, READ_JOB, READ_QUEUE, Needs

Q = "jobledger.server.queue_handlers:"
JOB = "jobledger.server.job_handlers:"
FILES = "jobledger.server.job_file_handlers:"
RESULTS = "jobledger.server.result_handlers:"
LAUNCHER = "jobledger.server.launcher_handlers:"
EVENTS = "jobledger.server.event_handlers:"
INFO = "jobledger.server.info_handlers:"

PRODUCE_QUEUE, WORK_QUEUE, WORK_JOB = Needs("produce", "queue"), Needs("work", "queue"), Needs("work", "job")

ROUTES: tuple[ApiRoute, ...] = (
    # queues
    ApiRoute("GET", "/queue", Q + "list_queues", READ),
    ApiRoute("PUT", "/queue/{queue}", Q + "put_queue", ADMIN),
    ApiRoute("GET", "/queue/{queue}", Q + "get_queue", READ_QUEUE),
    ApiRoute("DELETE", "/queue/{queue}", Q + "delete_queue", ADMIN),
    ApiRoute("GET", "/queue/{queue}/size", Q + "queue_size", READ_QUEUE),
    ApiRoute("GET", "/queue/{queue}/job_ids", Q + "queue_job_ids", READ_QUEUE),
    ApiRoute("PUT", "/queue/{queue}/pause", Q + "pause_queue", ADMIN),
    ApiRoute("PUT", "/queue/{queue}/resume", Q + "resume_queue", ADMIN),
    # a queue's jobs: create, fetch (a GET that starts jobs), list
    ApiRoute("POST", "/queue/{queue}/job", Q + "create_job", PRODUCE_QUEUE),
    ApiRoute("GET", "/queue/{queue}/job", Q + "fetch_job", WORK_QUEUE, writes=True),
    ApiRoute("POST", "/queue/{queue}/jobs", Q + "create_jobs", PRODUCE_QUEUE),
    ApiRoute("GET", "/queue/{queue}/jobs", Q + "list_jobs", READ_QUEUE),
    # blobs, and the job-orchestrator's upload and download
    ApiRoute("PUT", "/blob", "jobledger.server.upload_handlers:put_blob", Needs("produce", "query")),
    ApiRoute("POST", "/upload", "jobledger.server.orchestrator_handlers:upload", Needs("produce", "form")),
    ApiRoute("GET", "/download/{job_id}", "jobledger.server.orchestrator_handlers:download", READ_JOB),
    # one job
    ApiRoute("GET", "/job/{job_id}", JOB + "get_job", READ_JOB),
    ApiRoute("GET", "/job/{job_id}/status", JOB + "get_status", READ_JOB),
    ApiRoute("PATCH", "/job/{job_id}", JOB + "update_job", WORK_JOB),
    ApiRoute("DELETE", "/job/{job_id}", JOB + "delete_job", ADMIN),
    ApiRoute("PUT", "/job/{job_id}/heartbeat", JOB + "heartbeat", WORK_JOB),
    ApiRoute("GET", "/job/{job_id}/output", JOB + "get_output", READ_JOB),
    ApiRoute("PUT", "/job/{job_id}/output", JOB + "put_output", WORK_JOB),
    ApiRoute("GET", "/job/{job_id}/history", JOB + "history", READ_JOB),
    # many jobs' updates, and a fetch, in one request
    ApiRoute("PATCH", "/jobs", "jobledger.server.batch_handlers:update_jobs", Needs("work", "body")),
    # a job's files and results
    ApiRoute("GET", "/job/{job_id}/files/{name}", FILES + "get_file", READ_JOB),
    ApiRoute("PUT", "/job/{job_id}/results/{name}", FILES + "put_result", WORK_JOB),
    ApiRoute("GET", "/job/{job_id}/results", RESULTS + "manifest", READ_JOB),
    ApiRoute("GET", "/job/{job_id}/results/{name}", RESULTS + "get_result", READ_JOB),
    ApiRoute("GET", "/job/{job_id}/results.zip", RESULTS + "results_zip", READ_JOB),
    ApiRoute("GET", "/tag/{tag}", JOB + "tagged", READ),
    # the ledger's events
    ApiRoute("GET", "/events", EVENTS + "list_events", Needs("read", "events")),
    ApiRoute("GET", "/events/stream", EVENTS + "stream_events", Needs("read", "events")),
    # launchers
    ApiRoute("POST", "/launcher", LAUNCHER + "create_launcher", ADMIN),
    ApiRoute("GET", "/launcher", LAUNCHER + "list_launchers", READ),
    ApiRoute("GET", "/launcher/{launcher_id}", LAUNCHER + "get_launcher", READ),
    ApiRoute("DELETE", "/launcher/{launcher_id}", LAUNCHER + "delete_launcher", ADMIN),
    # the server
    ApiRoute("GET", "/info", INFO + "info", READ),
    ApiRoute("GET", "/info/version", INFO + "version", READ),
    ApiRoute("GET", "/health", INFO + "health", OPEN),
    ApiRoute("GET", "/ready", INFO + "ready", OPEN),
    ApiRoute("GET", "/metrics", "jobledger.server.metrics:metrics", READ),
    ApiRoute("GET", "/openapi.json", "jobledger.server.openapi:openapi", READ),
)


def warm() -> None:
    """Import every route's endpoint now: a server calls it once it is ready, so that no request
    pays for the import of its handler module."""
    warm_routes(ROUTES)

"""Every route of the HTTP API, one record each, grouped by resource.

A new route is one entry here: its method and path, its endpoint (``"module:function"``, imported on
first use), the scope a token needs (:class:`jobledger.server.auth.Needs`), the name of its OpenAPI
operation in :mod:`jobledger.server.openapi_paths`, and whether it takes an Idempotency-Key.  The router
(:func:`jobledger.server.api_route.api_paths`), the token check and the OpenAPI document are all
derived from this table (:class:`jobledger.server.api_route.ApiRoute` says what each field does).
"""

from __future__ import annotations

from jobledger.server.api_route import ApiRoute
from jobledger.server.api_route import warm as warm_routes
from jobledger.server.auth import ADMIN, OPEN, PRODUCE_QUEUE, READ, READ_JOB, READ_QUEUE, Needs

Q = "jobledger.server.queue_handlers:"
JOB = "jobledger.server.job_handlers:"
FILES = "jobledger.server.job_file_handlers:"
RESULTS = "jobledger.server.result_handlers:"
LAUNCHER = "jobledger.server.launcher_handlers:"
EVENTS = "jobledger.server.event_handlers:"
INFO = "jobledger.server.info_handlers:"
BLOBS = "jobledger.server.upload_handlers:"
ORCHESTRATOR = "jobledger.server.orchestrator_handlers:"
BULK = "jobledger.server.bulk_handlers:"
SEALED = "jobledger.server.ledger_handlers:"

WORK_QUEUE, WORK_JOB = Needs("work", "queue"), Needs("work", "job")
PRODUCE_QUERY = Needs("produce", "query")  # ?queue=Q; without it, admin only
PRODUCE_FORM = Needs("produce", "form")  # the queue is the form's service
WORK_BODY = Needs("work", "body")  # the queues of the jobs the body names, and of its fetch
WORK_BULK = Needs("work", "body")  # the single action's scope on every queue the filter may touch
READ_EVENTS = Needs("read", "events")  # or, filtered by queue or job, a queue scope on it

ROUTES: tuple[ApiRoute, ...] = (
    # queues
    ApiRoute("GET", "/queue", Q + "list_queues", READ, "LIST_QUEUES"),
    ApiRoute("PUT", "/queue/{queue}", Q + "put_queue", ADMIN, "PUT_QUEUE"),
    ApiRoute("GET", "/queue/{queue}", Q + "get_queue", READ_QUEUE, "GET_QUEUE"),
    ApiRoute("DELETE", "/queue/{queue}", Q + "delete_queue", ADMIN, "DELETE_QUEUE"),
    ApiRoute("GET", "/queue/{queue}/size", Q + "queue_size", READ_QUEUE, "QUEUE_SIZE"),
    ApiRoute("GET", "/queue/{queue}/job_ids", Q + "queue_job_ids", READ_QUEUE, "QUEUE_JOB_IDS"),
    ApiRoute("PUT", "/queue/{queue}/pause", Q + "pause_queue", ADMIN, "PAUSE_QUEUE"),
    ApiRoute("PUT", "/queue/{queue}/resume", Q + "resume_queue", ADMIN, "RESUME_QUEUE"),
    # a queue's jobs: create, fetch (a GET that starts jobs), list
    ApiRoute(
        "POST",
        "/queue/{queue}/job",
        Q + "create_job",
        PRODUCE_QUEUE,
        "CREATE_JOB",
        idempotent=True,
        checks_token=True,
    ),
    ApiRoute(
        "GET", "/queue/{queue}/job", Q + "fetch_job", WORK_QUEUE, "FETCH_JOB", writes=True, checks_token=True
    ),
    ApiRoute("POST", "/queue/{queue}/jobs", Q + "create_jobs", PRODUCE_QUEUE, "CREATE_JOBS", idempotent=True),
    ApiRoute("GET", "/queue/{queue}/jobs", Q + "list_jobs", READ_QUEUE, "LIST_JOBS"),
    # blobs, and the job-orchestrator's upload and download
    ApiRoute("PUT", "/blob", BLOBS + "put_blob", PRODUCE_QUERY, "PUT_BLOB"),
    ApiRoute("POST", "/upload", ORCHESTRATOR + "upload", PRODUCE_FORM, "UPLOAD", idempotent=True),
    ApiRoute("GET", "/download/{job_id}", ORCHESTRATOR + "download", READ_JOB, "DOWNLOAD"),
    # one job
    ApiRoute("GET", "/job/{job_id}", JOB + "get_job", READ_JOB, "GET_JOB", checks_token=True),
    ApiRoute("GET", "/job/{job_id}/status", JOB + "get_status", READ_JOB, "GET_STATUS", checks_token=True),
    ApiRoute("PATCH", "/job/{job_id}", JOB + "update_job", WORK_JOB, "UPDATE_JOB", checks_token=True),
    ApiRoute("DELETE", "/job/{job_id}", JOB + "delete_job", ADMIN, "DELETE_JOB"),
    ApiRoute("PUT", "/job/{job_id}/heartbeat", JOB + "heartbeat", WORK_JOB, "HEARTBEAT", checks_token=True),
    ApiRoute("GET", "/job/{job_id}/output", JOB + "get_output", READ_JOB, "GET_OUTPUT"),
    ApiRoute("PUT", "/job/{job_id}/output", JOB + "put_output", WORK_JOB, "PUT_OUTPUT"),
    ApiRoute("GET", "/job/{job_id}/history", JOB + "history", READ_JOB, "HISTORY"),
    ApiRoute("GET", "/job/{job_id}/receipt", SEALED + "receipt", READ_JOB, "RECEIPT"),
    # many jobs' updates, and a fetch, in one request
    ApiRoute(
        "PATCH",
        "/jobs",
        "jobledger.server.batch_handlers:update_jobs",
        WORK_BODY,
        "UPDATE_JOBS",
        checks_token=True,
    ),
    # many jobs at once, chosen by a filter: requeue, cancel, delete
    ApiRoute("POST", "/bulk", BULK + "bulk", WORK_BULK, "BULK"),
    ApiRoute("GET", "/bulk/{operation}", BULK + "get_bulk", READ, "GET_BULK"),
    ApiRoute("POST", "/bulk/{operation}", BULK + "resume", WORK_BULK, "RESUME_BULK"),
    # a job's files and results
    ApiRoute("GET", "/job/{job_id}/files/{name}", FILES + "get_file", READ_JOB, "GET_FILE"),
    ApiRoute("PUT", "/job/{job_id}/results/{name}", FILES + "put_result", WORK_JOB, "PUT_RESULT"),
    ApiRoute("GET", "/job/{job_id}/results", RESULTS + "manifest", READ_JOB, "MANIFEST"),
    ApiRoute("GET", "/job/{job_id}/results/{name}", RESULTS + "get_result", READ_JOB, "GET_RESULT"),
    ApiRoute("GET", "/job/{job_id}/results.zip", RESULTS + "results_zip", READ_JOB, "RESULTS_ZIP"),
    ApiRoute("GET", "/tag/{tag}", JOB + "tagged", READ, "TAGGED"),
    # the ledger's events
    ApiRoute("GET", "/events", EVENTS + "list_events", READ_EVENTS, "LIST_EVENTS"),
    ApiRoute("GET", "/events/stream", EVENTS + "stream_events", READ_EVENTS, "STREAM_EVENTS"),
    # the verifiable ledger: its key, checkpoints and proofs
    ApiRoute("GET", "/ledger/key", SEALED + "key", READ, "LEDGER_KEY"),
    ApiRoute("GET", "/ledger/checkpoint", SEALED + "checkpoint", READ, "LEDGER_CHECKPOINT"),
    ApiRoute("GET", "/ledger/proof/inclusion", SEALED + "inclusion", READ, "INCLUSION_PROOF"),
    ApiRoute("GET", "/ledger/proof/consistency", SEALED + "consistency", READ, "CONSISTENCY_PROOF"),
    # launchers
    ApiRoute("POST", "/launcher", LAUNCHER + "create_launcher", ADMIN, "CREATE_LAUNCHER", idempotent=True),
    ApiRoute("GET", "/launcher", LAUNCHER + "list_launchers", READ, "LIST_LAUNCHERS"),
    ApiRoute("PUT", "/launcher/{launcher}", LAUNCHER + "put_launcher", ADMIN, "PUT_LAUNCHER"),
    ApiRoute("GET", "/launcher/{launcher}", LAUNCHER + "get_launcher", READ, "GET_LAUNCHER"),
    ApiRoute("DELETE", "/launcher/{launcher}", LAUNCHER + "delete_launcher", ADMIN, "DELETE_LAUNCHER"),
    ApiRoute("PUT", "/launcher/{launcher}/pause", LAUNCHER + "pause_launcher", ADMIN, "PAUSE_LAUNCHER"),
    ApiRoute("PUT", "/launcher/{launcher}/resume", LAUNCHER + "resume_launcher", ADMIN, "RESUME_LAUNCHER"),
    ApiRoute("POST", "/launcher/{launcher}/fire", LAUNCHER + "fire_launcher", ADMIN, "FIRE_LAUNCHER"),
    # the server
    ApiRoute("GET", "/info", INFO + "info", READ, "INFO"),
    ApiRoute("GET", "/info/version", INFO + "version", READ, "VERSION"),
    ApiRoute("GET", "/health", INFO + "health", OPEN, "HEALTH"),
    ApiRoute("GET", "/ready", INFO + "ready", OPEN, "READY"),
    ApiRoute("GET", "/metrics", "jobledger.server.metrics:metrics", READ, "METRICS"),
    ApiRoute("GET", "/openapi.json", "jobledger.server.openapi:openapi", READ, "OPENAPI"),
)


def warm() -> None:
    """Import every route's endpoint now: a server calls it once it is ready, so that no request
    pays for the import of its handler module."""
    warm_routes(ROUTES)

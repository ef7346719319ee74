"""Which Lua applier applies each event type (``projections/lua/apply/*.lua``).

Every event type of :mod:`jobledger.ledger.events` has exactly one applier; a test holds the two tables equal.
"""

APPLIERS: dict[str, str] = {
    "queue_created": "apply_queue_settings",
    "queue_updated": "apply_queue_settings",
    "queue_deleted": "apply_queue_deleted",
    "queue_paused": "apply_queue_paused",
    "queue_resumed": "apply_queue_resumed",
    "job_created": "apply_job_created",
    "job_released": "apply_job_released",
    "job_started": "apply_job_started",
    "job_heartbeat": "apply_job_heartbeat",
    "job_progressed": "apply_job_progressed",
    "job_output_set": "apply_job_output_set",
    "job_completed": "apply_job_completed",
    "job_failed": "apply_job_failed",
    "job_timed_out": "apply_job_timed_out",
    "job_cancelled": "apply_job_cancelled",
    "job_requeued": "apply_job_requeued",
    "job_returned": "apply_job_returned",
    "job_ended": "apply_job_ended",
    "job_expired": "apply_job_removed",
    "job_deleted": "apply_job_removed",
    "launcher_created": "apply_launcher_created",
    "launcher_deleted": "apply_launcher_deleted",
    "launcher_fired": "apply_launcher_fired",
    "launcher_skipped": "apply_launcher_skipped",
    "launcher_triggered": "apply_launcher_triggered",
}

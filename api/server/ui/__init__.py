"""The dashboard under ``/ui``: server-rendered pages (Jinja2) for auditing the ledger in a browser,
with htmx (vendored in ``static/``) for live parts and forms.

``pages`` reads and shows (``failed_page`` the failed jobs, filtered; ``charts`` draws the queues'
throughput), ``actions`` takes form posts (job, queue and launcher actions, verify, signing in and out),
``bulk_page`` acts on every job the failed page's filter matches and shows an operation's progress,
``live`` follows the ledger as HTML over Server-Sent Events, ``session`` says who is looking and
whether a post may act, ``render`` turns it all into HTML, ``flash`` carries an action's message
to the next page, ``verify_runs`` keeps the verify runs started here.  Every read is a bounded read of the
projections (see docs/dashboard.md); every change goes through the same commands as the API.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

#: The dashboard's static files (htmx, the style sheet), served as they are under ``/ui/static``.
STATIC = Path(__file__).parent / "static"


def _page(path: str, endpoint: str, method: str = "GET") -> Route:
    """A dashboard route: HTML, so not in the API's OpenAPI document.  Its endpoint, ``"module:function"``
    of this package, is imported on the route's first request (or by the server's warm-up)."""
    module, _, function = endpoint.partition(":")

    async def page(request: Request) -> Response:
        found = getattr(importlib.import_module(f"{__name__}.{module}"), function)
        answer: Response = await found(request)
        return answer

    page.__name__ = function
    return Route(path, page, methods=[method], include_in_schema=False)


def routes() -> list[BaseRoute]:
    """Every route of the dashboard, to put beside the API's."""
    return [
        _page("/ui", "pages:overview"),
        _page("/ui/queues", "pages:queue_table"),
        _page("/ui/queue/{queue}/action", "actions:queue_action", "POST"),
        _page("/ui/queue/{queue}", "pages:queue"),
        _page("/ui/search", "pages:search"),
        _page("/ui/job/{job_id}", "pages:job"),
        _page("/ui/job/{job_id}/action", "actions:job_action", "POST"),
        _page("/ui/job/{job_id}/state", "pages:job_state"),
        _page("/ui/job/{job_id}/files/{name}", "pages:job_file"),
        _page("/ui/job/{job_id}/results/{name}", "pages:job_result"),
        _page("/ui/job/{job_id}/receipt", "pages:job_receipt"),
        _page("/ui/job/{job_id}/stream", "live:job_timeline"),
        _page("/ui/events", "pages:events"),
        _page("/ui/events/stream", "live:ledger_events"),
        _page("/ui/failed", "failed_page:failed"),
        _page("/ui/bulk", "bulk_page:bulk_action", "POST"),
        _page("/ui/bulk/{operation}", "bulk_page:operation_page"),
        _page("/ui/bulk/{operation}/counts", "bulk_page:operation_counts"),
        _page("/ui/launchers", "pages:launchers"),
        _page("/ui/launcher/{launcher}/action", "actions:launcher_action", "POST"),
        _page("/ui/ledger", "pages:ledger"),
        _page("/ui/ledger/verify", "actions:start_verify", "POST"),
        _page("/ui/ledger/verify/{run}", "pages:verify_result"),
        _page("/ui/signin", "pages:signin"),
        _page("/ui/signin", "actions:signin", "POST"),
        _page("/ui/signout", "actions:signout", "POST"),
        Mount("/ui/static", app=StaticFiles(directory=STATIC), name="ui-static"),
    ]

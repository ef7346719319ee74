"""The dashboard under ``/ui``: server-rendered pages (Jinja2) for auditing the ledger in a browser,
with htmx (vendored in ``static/``) for live parts and forms.

``pages`` reads and shows, ``actions`` takes form posts (job actions, verify, signing in and out),
``live`` follows the ledger as HTML over Server-Sent Events, ``session`` says who is looking and
whether a post may act, ``render`` turns it all into HTML.  Every read is a bounded read of the
projections (see docs/dashboard.md); every change goes through the same commands as the API.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from jobledger.server.ui import actions, live, pages
from jobledger.server.ui.render import STATIC


def routes() -> list[BaseRoute]:
    """Every route of the dashboard, to put beside the API's."""
    return [
        Route("/ui", pages.overview, methods=["GET"]),
        Route("/ui/queue/{queue}", pages.queue, methods=["GET"]),
        Route("/ui/search", pages.search, methods=["GET"]),
        Route("/ui/job/{job_id}", pages.job, methods=["GET"]),
        Route("/ui/job/{job_id}/action", actions.job_action, methods=["POST"]),
        Route("/ui/job/{job_id}/stream", live.job_timeline, methods=["GET"]),
        Route("/ui/events", pages.events, methods=["GET"]),
        Route("/ui/events/stream", live.ledger_events, methods=["GET"]),
        Route("/ui/failed", pages.failed, methods=["GET"]),
        Route("/ui/launchers", pages.launchers, methods=["GET"]),
        Route("/ui/ledger", pages.ledger, methods=["GET"]),
        Route("/ui/ledger/verify", actions.start_verify, methods=["POST"]),
        Route("/ui/ledger/verify/{run}", pages.verify_result, methods=["GET"]),
        Route("/ui/signin", pages.signin, methods=["GET"]),
        Route("/ui/signin", actions.signin, methods=["POST"]),
        Route("/ui/signout", actions.signout, methods=["POST"]),
        Mount("/ui/static", app=StaticFiles(directory=STATIC), name="ui-static"),
    ]

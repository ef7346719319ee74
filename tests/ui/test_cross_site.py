"""A web page of another origin cannot drive a server with auth off, in a real browser: from another
port of 127.0.0.1 (same-site) and from 127.0.0.2 (cross-site), a page that auto-submits a multipart
form with a ``run.sh`` file field, sends a ``no-cors`` text/plain fetch and loads an ``<img>`` of the
fetch route gets 403 for each, and afterwards no job exists and the queue is untouched."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from jobledger.ledger.runner import Ledger
from tests.ui import story
from tests.ui.conftest import OpenTab, api

if TYPE_CHECKING:
    from playwright.sync_api import Request, Response


def attack_page(server: str) -> str:
    """Three ways a page can send a request to another origin without asking it first."""
    target = f"{server}/queue/q/job"
    return f"""<!doctype html><title>You won a prize</title>
<form id="f" method="post" enctype="multipart/form-data" action="{target}">
  <input type="hidden" name="job" value='{{"input": 1}}'>
  <input type="hidden" name="run.sh" value="touch /tmp/pwned">
</form>
<img src="{target}" alt="">
<script>
  fetch("{target}", {{mode: "no-cors", method: "POST", body: '{{"input": 1}}'}}).catch(() => {{}});
  setTimeout(() => document.getElementById("f").submit(), 300);
</script>"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def page_server(folder: Path, host: str) -> Iterator[str]:
    """A plain static file server of ``folder`` on ``host`` (another origin than the app's)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["same-site", "cross-site"])
def test_a_page_of_another_origin_creates_and_starts_nothing(
    server: str, tab: OpenTab, ledger: Ledger, tmp_path: Path, host: str
) -> None:
    """``host`` names the attacking page's origin: another port of the server's address (the same
    site), or ``localhost`` (another site than 127.0.0.1)."""
    with api(server) as http:
        story.queue(http, "q")
        waiting = story.create(http, "q")  # what the <img>'s fetch would start
    length = story.event_count(ledger)
    (tmp_path / "prize.html").write_text(attack_page(server))
    sent: list[Request] = []
    answered: list[Response] = []
    target = f"{server}/queue/q/job"
    with page_server(tmp_path, host) as evil:
        dash = tab(evil)
        dash.page.on("request", lambda r: sent.append(r) if r.url == target else None)
        dash.page.on("response", lambda r: answered.append(r) if r.url == target else None)
        dash.open("/prize.html", "the prize page")
        for _ in range(100):
            if len(sent) >= 3 and len(answered) >= 2:
                break
            dash.page.wait_for_timeout(100)
        # the form's submission navigates the tab to its answer: shot once that page is there
        dash.page.wait_for_url(target)
        dash.page.wait_for_load_state()
        dash.shot("after the form was sent")
    assert sorted(r.method for r in sent) == ["GET", "POST", "POST"], [(r.method, r.url) for r in sent]
    assert [r.status for r in answered if r.request.method == "POST"] == [403, 403]
    assert story.event_count(ledger) == length  # nothing appended: no job created, none started
    with api(server) as http:
        assert http.get("/queue/q/size").json() == 1
        assert story.status(http, waiting) == "queued"

"""The sealed ledger in a real browser: the ledger page shows the latest checkpoint and the seal lag,
a job's page says its events are sealed and offers its receipt, and verify checks the seal too.  The
app runs its scheduler, which seals every 0.1 s."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobledger.scheduler.sealer import default_key_file, make_key_file
from tests.support.live_server import eventually, live_server
from tests.ui import story
from tests.ui.browser import expect
from tests.ui.conftest import OpenTab, api


@pytest.fixture
def sealed_server(redis_url: str, namespace: str, tmp_path: Path) -> Iterator[str]:
    make_key_file(default_key_file(tmp_path, namespace), namespace)
    with live_server(redis_url, namespace, run_scheduler=True, sealed_in=tmp_path) as url:
        yield url


def test_the_ledger_and_a_job_show_their_seal(sealed_server: str, tab: OpenTab) -> None:
    with api(sealed_server) as http:
        story.queue(http, "emails")
        job = story.completed(http, "emails", output={"sent": True})
        eventually(lambda: http.get(f"/job/{job}/receipt").status_code == 200, timeout=10)
    dash = tab(sealed_server)
    page = dash.open(f"/ui/job/{job}")
    expect(page.locator("#sealed[data-sealed=true]")).to_contain_text("All 3 events are sealed")
    expect(page.locator("#receipt")).to_have_attribute("href", f"/ui/job/{job}/receipt")
    dash.shot("job sealed")
    page = dash.open("/ui/ledger")
    row = page.locator("#checkpoints tr[data-partition='0']")
    expect(row).not_to_have_attribute("data-size", "0")
    expect(row.locator("code.root")).to_have_text(re.compile(r"^[A-Za-z0-9+/]{43}=$"))
    page.locator("#checkpoints details summary").first.click()
    page.locator('form[action$="/ui/ledger/verify"] button').first.click()
    expect(page.locator("#verify-sealed li[data-ok=true]")).to_contain_text("verified", timeout=30_000)
    dash.shot("ledger verified")

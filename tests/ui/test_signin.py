"""The dashboard with auth on, in a real browser: every page asks for a sign-in; a token signs in (an
HttpOnly, SameSite=Strict session cookie) and out; a revoked token's session ends at once; an action
outside the token's scopes is refused with nothing appended; a cross-site POST is refused even with
a session open."""

from __future__ import annotations

import re

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import revoke_token
from jobledger.server.ui.session import csrf_for
from tests.ui import story
from tests.ui.browser import Dashboard, expect
from tests.ui.conftest import OpenTab, Token, api
from tests.ui.test_actions_live import action, cross_site_post

SESSION = "jobledger_session"


def sign_in(dash: Dashboard, secret: str) -> None:
    page = dash.open("/ui/signin")
    page.locator("input[name=token]").fill(secret)
    page.locator("input[name=token]").evaluate("e => e.form.requestSubmit()")
    page.wait_for_url(re.compile(r"/ui/?(\?.*)?$"))
    dash.shot("signed in")


def failed_job(auth_server: str, token: Token, admin_name: str = "admin") -> tuple[str, int]:
    """An admin token's secret, and a failed job of queue ``emails`` made with it."""
    admin = token(admin_name, "admin")
    with api(auth_server, admin) as http:
        story.queue(http, "emails")
        return admin, story.failed(http, "emails")


def untouched(auth_server: str, admin: str, job: int, ledger: Ledger, length: int) -> None:
    """Nothing was appended, and ``job`` is still failed."""
    assert story.event_count(ledger) == length
    with api(auth_server, admin) as http:
        assert story.status(http, job) == "failed"


def test_sign_in_and_out(auth_server: str, tab: OpenTab, token: Token) -> None:
    secret = token("alice", "read")
    dash = tab(auth_server)
    page = dash.open("/ui/failed", "before sign-in")
    page.wait_for_url(re.compile(r"/ui/signin"))
    expect(page.locator("input[name=token]")).to_be_visible()

    page.locator("input[name=token]").fill("not-a-token")
    page.locator("input[name=token]").evaluate("e => e.form.requestSubmit()")
    expect(page.locator("input[name=token]")).to_be_visible()
    assert not [c for c in page.context.cookies() if c["name"] == SESSION]
    dash.shot("wrong token")

    sign_in(dash, secret)
    expect(page.locator("#whoami")).to_contain_text("alice")
    cookie = next(c for c in page.context.cookies() if c["name"] == SESSION)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
    assert secret not in page.content(), "the page never shows the secret"
    assert page.evaluate("document.cookie") == "", "scripts cannot read the session"

    page.locator(
        'form[action$="/ui/signout"] [type=submit], form[action$="/ui/signout"] button'
    ).first.click()
    page.wait_for_url(re.compile(r"/ui/signin"))
    dash.shot("signed out")
    dash.open("/ui", "after sign-out")
    page.wait_for_url(re.compile(r"/ui/signin"))


def test_a_revoked_token_ends_its_session(
    auth_server: str, tab: OpenTab, token: Token, ledger: Ledger
) -> None:
    dash = tab(auth_server)
    sign_in(dash, token("bob", "read"))
    ledger.run(revoke_token("bob"))
    page = dash.open("/ui/ledger", "after revocation")
    page.wait_for_url(re.compile(r"/ui/signin"))


def test_an_action_outside_the_token_scopes_is_refused(
    auth_server: str, tab: OpenTab, token: Token, ledger: Ledger
) -> None:
    admin, job = failed_job(auth_server, token)
    reader = token("reader", "read")
    length = story.event_count(ledger)
    dash = tab(auth_server)
    sign_in(dash, reader)
    page = dash.open("/ui/failed")
    expect(page.locator(f"a[href$='/ui/job/{job}']").first).to_be_visible()
    expect(page.locator("button[name=action]")).to_have_count(0)  # offered only what it may do
    # the post the page did not offer, made by hand with the session's own csrf value
    page.evaluate(
        """([job, csrf]) => {
            const form = Object.assign(document.createElement("form"),
                                       {method: "post", action: `/ui/job/${job}/action`});
            for (const [name, value] of [["csrf", csrf], ["action", "requeue"], ["back", "failed"]]) {
                form.append(Object.assign(document.createElement("input"), {type: "hidden", name, value}));
            }
            document.body.append(form);
            form.submit();
        }""",
        [job, csrf_for(reader)],
    )
    expect(page.locator("body")).to_contain_text("403")
    dash.shot("refused")
    untouched(auth_server, admin, job, ledger, length)


def test_an_admin_action_is_recorded_with_the_token_name(
    auth_server: str, tab: OpenTab, token: Token
) -> None:
    admin, job = failed_job(auth_server, token, "ops")
    dash = tab(auth_server)
    sign_in(dash, admin)
    page = dash.open("/ui/failed")
    action(page, job, "requeue")
    expect(page.locator("#flash")).to_be_visible()
    with api(auth_server, admin) as http:
        event = story.history(http, job)[-1]
    assert (event["type"], event["actor"]) == ("job_requeued", "ops")
    page = dash.open(f"/ui/job/{job}")
    expect(page.locator("ol#timeline li[data-event-id]").last.locator(".actor")).to_have_text(
        re.compile(r"\bops\b")
    )


def test_a_cross_site_post_with_a_session_open_is_refused(
    auth_server: str, tab: OpenTab, token: Token, ledger: Ledger
) -> None:
    admin, job = failed_job(auth_server, token)
    dash = tab(auth_server)
    sign_in(dash, admin)
    length = story.event_count(ledger)
    status = cross_site_post(dash, auth_server, job, "delete")
    assert status in (303, 302, 401, 403), status
    untouched(auth_server, admin, job, ledger, length)

"""The dashboard with auth on: a token signs in (an HttpOnly, SameSite=Strict cookie), every request
checks it again, actions need the token's scopes and are recorded with its name, and a form post
needs the session's csrf value."""

from __future__ import annotations

import redis

from jobledger.ledger.runner import Ledger
from jobledger.ledger.tokens import revoke_token
from jobledger.server.ui.session import COOKIE, csrf_for
from tests.server.ui.conftest import Secured
from tests.server.ui.html import parse
from tests.support.http import unchanged
from tests.support.ledger import events

PAGES = ["/ui", "/ui/queue/q", "/ui/job/1", "/ui/events", "/ui/failed", "/ui/launchers", "/ui/ledger"]


def failed_job(s: Secured) -> int:
    job_id = s.create_job()
    fetched = s.client.get("/queue/q/job", headers=s.bearer).json()
    update = {"status": "failed", "attempt": fetched["attempt"]}
    assert s.client.patch(f"/job/{job_id}", json=update, headers=s.bearer).status_code == 204
    return job_id


def csrf(s: Secured, role: str) -> str:
    return csrf_for(s.secrets[role])


def test_without_a_session_every_page_sends_to_sign_in(secured: Secured) -> None:
    secured.create_job()
    for path in PAGES:
        response = secured.client.get(path, follow_redirects=False)
        assert response.status_code == 303, path
        assert response.headers["location"].startswith("/ui/signin?next=")
    signin = parse(secured.client.get("/ui/signin").text)
    form = signin.one("form", id="signin")
    assert form.attrs["action"] == "/ui/signin" and form.one("input", name="token")
    assert signin.one("nav", id="nav").all("a") == []  # each link would lead back here
    secured.sign_in("reader")
    links = {a.attrs["href"] for a in parse(secured.client.get("/ui").text).one("nav", id="nav").all("a")}
    assert "/ui/events" in links and "/ui/ledger" in links


def test_signing_in_sets_a_strict_http_only_cookie(secured: Secured) -> None:
    response = secured.client.post(
        "/ui/signin", data={"token": secured.secrets["reader"], "next": "/ui/failed"}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == "/ui/failed"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    doc = parse(secured.client.get("/ui").text)
    assert doc.one(id="whoami").text() == "reader"


def test_sign_in_never_sends_to_another_site(secured: Secured) -> None:
    for target in ("https://evil.example/", "//evil.example", "/elsewhere"):
        response = secured.client.post(
            "/ui/signin", data={"token": secured.secrets["reader"], "next": target}, follow_redirects=False
        )
        assert response.headers["location"] == "/ui"


def test_a_wrong_token_does_not_sign_in(secured: Secured) -> None:
    for token in ("not-a-token", ""):
        response = secured.client.post("/ui/signin", data={"token": token}, follow_redirects=False)
        assert response.status_code == 401 and "set-cookie" not in response.headers
        assert parse(response.text).one(id="flash").text() in ("unknown or revoked token", "enter a token")


def test_signing_out_clears_the_cookie(secured: Secured) -> None:
    secured.sign_in("reader")
    response = secured.client.post("/ui/signout", data={}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/ui/signin"
    assert (
        response.headers["set-cookie"].startswith(f'{COOKIE}=""')
        or "Max-Age=0" in response.headers["set-cookie"]
    )
    assert secured.client.get("/ui", follow_redirects=False).status_code == 303


def test_a_revoked_tokens_session_ends_at_once(secured: Secured, ledger: Ledger) -> None:
    secured.sign_in("reader")
    assert secured.client.get("/ui", follow_redirects=False).status_code == 200
    ledger.run(revoke_token("reader"))
    assert secured.client.get("/ui", follow_redirects=False).status_code == 303


def test_pages_need_read(secured: Secured) -> None:
    secured.sign_in("stranger")  # produce:other only
    response = secured.client.get("/ui")
    assert response.status_code == 403
    assert "needs read" in parse(response.text).one(id="flash").text()
    assert parse(response.text).one("main").text().count("needs read") == 1  # said once


def test_a_queue_scoped_token_sees_its_queue_and_its_jobs_only(secured: Secured) -> None:
    job_id = secured.create_job()
    secured.sign_in("producer")  # produce:q, no read
    assert secured.client.get("/ui/queue/q").status_code == 200
    assert secured.client.get(f"/ui/job/{job_id}").status_code == 200
    assert secured.client.get("/ui").status_code == 403  # every queue: read only
    secured.sign_in("stranger")
    response = secured.client.get("/ui/queue/q")  # the queue it asked for is named back
    assert response.status_code == 403
    assert "on queue 'q'" in parse(response.text).one(id="flash").text()
    response = secured.client.get(f"/ui/job/{job_id}")  # a job's queue is not: it reads as no job
    missing = secured.client.get(f"/ui/job/{job_id + 1000}")
    assert response.status_code == missing.status_code == 403
    said = parse(response.text).one(id="flash").text()
    assert said == parse(missing.text).one(id="flash").text() and "'q'" not in said


def test_an_action_in_scope_is_recorded_with_the_tokens_name(
    secured: Secured, client: redis.Redis, namespace: str
) -> None:
    job_id = failed_job(secured)
    secured.sign_in("worker")  # work:q: may requeue and cancel, not delete
    form = {"action": "requeue", "csrf": csrf(secured, "worker")}
    response = secured.client.post(f"/ui/job/{job_id}/action", data=form, follow_redirects=False)
    assert response.status_code == 303
    last = events(client, namespace, job_id)[-1]
    assert (last["type"], last["actor"]) == ("job_requeued", "worker")
    assert "requeued by worker" in parse(secured.client.get(f"/ui/job/{job_id}").text).one(id="flash").text()


def test_an_action_out_of_scope_is_refused_and_appends_nothing(
    secured: Secured, client: redis.Redis, namespace: str
) -> None:
    job_id = failed_job(secured)
    for role, action in (("worker", "delete"), ("reader", "requeue"), ("reader", "cancel")):
        secured.sign_in(role)
        form = {"action": action, "csrf": csrf(secured, role)}
        with unchanged(client, namespace):
            response = secured.client.post(f"/ui/job/{job_id}/action", data=form)
        assert response.status_code == 403, (role, action)
        assert f"token '{role}' may not do this" in parse(response.text).one(id="flash").text()
    launcher = {"type": "@interval", "arguments": "1h", "queue": "q"}
    made = secured.client.post("/launcher", json=launcher, headers=secured.bearer).json()["id"]
    for action in ("pause", "fire"):
        secured.sign_in("worker")
        with unchanged(client, namespace):
            response = secured.client.post(
                f"/ui/launcher/{made}/action", data={"action": action, "csrf": csrf(secured, "worker")}
            )
        assert response.status_code == 403, action


def test_an_action_without_the_csrf_value_is_refused(
    secured: Secured, client: redis.Redis, namespace: str
) -> None:
    job_id = failed_job(secured)
    secured.sign_in("admin")
    for form in ({"action": "delete"}, {"action": "delete", "csrf": csrf(secured, "reader")}):
        with unchanged(client, namespace):
            response = secured.client.post(f"/ui/job/{job_id}/action", data=form)
        assert response.status_code == 403
        assert "csrf" in parse(response.text).one(id="flash").text()


def test_the_pages_forms_carry_the_csrf_value(secured: Secured) -> None:
    failed_job(secured)
    secured.sign_in("admin")
    doc = parse(secured.client.get("/ui/failed").text)
    values = {i.attrs["value"] for i in doc.all("input", name="csrf")}
    assert values == {csrf(secured, "admin")}


def test_verify_needs_admin(secured: Secured, client: redis.Redis, namespace: str) -> None:
    secured.sign_in("reader")
    response = secured.client.post("/ui/ledger/verify", data={"csrf": csrf(secured, "reader")})
    assert response.status_code == 403
    secured.sign_in("admin")
    response = secured.client.post("/ui/ledger/verify", data={"csrf": csrf(secured, "admin")},
                                   follow_redirects=False)  # fmt: skip
    assert response.status_code == 303


def test_a_cross_site_sign_in_is_refused(secured: Secured) -> None:
    response = secured.client.post(
        "/ui/signin", data={"token": secured.secrets["admin"]}, headers={"sec-fetch-site": "cross-site"},
        follow_redirects=False,
    )  # fmt: skip
    assert response.status_code == 403 and "set-cookie" not in response.headers


def test_the_api_still_wants_its_bearer_token(secured: Secured) -> None:
    """The session cookie is the dashboard's: it opens no API route."""
    secured.sign_in("admin")
    assert secured.client.get("/queue").status_code == 401


def test_a_post_without_a_session_signs_in_first_then_goes_to_the_dashboard(
    secured: Secured, client: redis.Redis, namespace: str
) -> None:
    job_id = failed_job(secured)
    with unchanged(client, namespace):
        response = secured.client.post(f"/ui/job/{job_id}/action", data={"action": "delete"},
                                       follow_redirects=False)  # fmt: skip
        cross = secured.client.post(f"/ui/job/{job_id}/action", data={"action": "delete"},
                                    headers={"origin": "https://evil.example"})  # fmt: skip
    assert response.status_code == 303 and response.headers["location"] == "/ui/signin?next=%2Fui"
    assert cross.status_code == 403  # refused before anything else is looked at


def _buttons(s: Secured, path: str) -> set[str]:
    doc = parse(s.client.get(path).text)
    return {b.attrs["value"] for b in doc.all("button", name="action")}


def test_a_page_offers_only_the_actions_its_viewer_may_take(secured: Secured) -> None:
    job_id = failed_job(secured)
    launcher = {"type": "@interval", "arguments": "1h", "queue": "q"}
    assert secured.client.post("/launcher", json=launcher, headers=secured.bearer).status_code == 201
    pages = [f"/ui/job/{job_id}", "/ui/failed", "/ui/queue/q", "/ui", "/ui/launchers"]
    seen: dict[str, dict[str, set[str]]] = {}
    for role in ("admin", "worker", "reader"):
        secured.sign_in(role)
        seen[role] = {path: _buttons(secured, path) for path in pages}
    assert seen["admin"][f"/ui/job/{job_id}"] == {"requeue", "cancel", "delete"}
    assert seen["admin"]["/ui/queue/q"] >= {"pause", "drain"}
    assert seen["admin"]["/ui"] >= {"pause", "drain"}
    assert seen["admin"]["/ui/failed"] >= {"requeue", "cancel", "delete"}
    assert seen["admin"]["/ui/launchers"] == {"pause", "fire"}
    # work:q requeues and cancels the queue's jobs; deleting, pausing and draining need admin
    assert seen["worker"][f"/ui/job/{job_id}"] == {"requeue", "cancel"}
    assert seen["worker"]["/ui/queue/q"] == set()
    assert seen["worker"]["/ui"] == set()
    assert seen["worker"]["/ui/launchers"] == set()
    assert seen["reader"] == {path: set() for path in pages}

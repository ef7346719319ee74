"""The composition of scripts: every event type has its applier, every script loads on the server,
and each carries the appliers of exactly the events it can emit."""

from __future__ import annotations

import re

import redis

from jobledger.ledger.events import EVENT_TYPES
from jobledger.ledger.keys import TEMPLATES, Keys, lua_prelude
from jobledger.ledger.scripts import _ROOT, INCLUDES, sources
from jobledger.projections.appliers import APPLIERS


def test_every_event_type_has_an_applier_and_no_applier_is_orphaned() -> None:
    assert set(APPLIERS) == set(EVENT_TYPES)
    defined = {
        m.group(1)
        for rel in INCLUDES
        for m in re.finditer(r"^local function (\w+)", (_ROOT / rel).read_text(), re.M)
    }
    assert set(APPLIERS.values()) <= defined


def test_every_script_loads_on_the_server(client: redis.Redis) -> None:
    for name, source in sources().items():
        sha = client.script_load(source)
        assert client.script_exists(sha) == [True], name


def test_a_script_carries_the_appliers_of_the_events_it_emits() -> None:
    src = sources()
    assert "job_completed = apply_job_completed" in src["update_job"]
    assert "job_created = apply_job_created" not in src["update_job"]
    assert "job_started = apply_job_started" not in src["put_queue"]
    for type_, applier in APPLIERS.items():
        assert f"{type_} = {applier}" in src["apply_events"]


def test_lua_key_helpers_build_the_same_keys_as_python(client: redis.Redis) -> None:
    keys = Keys("ns-check")
    script = lua_prelude() + "return {K.events, K.job('7'), K.queue_status('q', 'running'), K.tag('x')}"
    got = [b.decode() for b in client.eval(script, 1, keys.prefix)]
    assert got == [keys.events, keys.job(7), keys.queue_status("q", "running"), keys.tag("x")]
    assert all(not t.startswith("{") for t in TEMPLATES.values())

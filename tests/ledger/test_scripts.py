"""The composition of scripts: every Lua file includes what it uses, every event type has one applier,
every script loads on the server, and each carries the appliers of exactly the events it can emit."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from jobledger.ledger import commands, errors
from jobledger.ledger.events import EVENT_TYPES
from jobledger.ledger.keys import TEMPLATES, Keys, lua_inline_keys, lua_prelude
from jobledger.ledger.requests import JobOptions
from jobledger.ledger.runner import FunctionsMissing, Ledger, translate
from jobledger.ledger.scripts import (
    APPLIER_DIR,
    CompositionError,
    Library,
    function,
    library,
    source,
    sources,
)
from jobledger.ledger.scripts import (
    commands as command_names,
)
from jobledger.projections import readers
from tests.support.ledger import create, fetch_one, put_queue, update
from tests.support.private_redis import PrivateServer

_DEFINES = re.compile(r"^local (?:function )?(\w+)", re.MULTILINE)
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
#: Names the composer writes into a script itself: the applier table.
GENERATED = {"APPLY"}


def pieces(lib: Library) -> list[str]:
    """Every Lua file that is not an entry: the files to include."""
    entries = set(lib.entries().values())
    found = [
        file.relative_to(lib.root).as_posix()
        for folder in ("ledger/lua", "projections/lua", "replay/lua")
        for file in sorted((lib.root / folder).rglob("*.lua"))
    ]
    return [path for path in found if path not in entries]


def unincluded(lib: Library, path: str) -> set[str]:
    """The names a file uses that some piece defines but that nothing it includes (transitively) does."""
    anywhere = {name for piece in pieces(lib) for name in _DEFINES.findall(lib.piece(piece).text)}
    reached = {name for piece in lib.closure(path) for name in _DEFINES.findall(piece.text)}
    used = set(_WORD.findall(lib.piece(path).code))
    return (used & anywhere) - reached - GENERATED


def unused_includes(lib: Library, path: str) -> list[str]:
    """The includes of a file that define nothing it uses."""
    piece = lib.piece(path)
    used = set(_WORD.findall(piece.code))
    return [inc for inc in piece.includes if not set(_DEFINES.findall(lib.piece(inc).text)) & used]


def write(root: Path, files: dict[str, str]) -> Library:
    """A library of these files (path -> text) under root, of three event types."""
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return Library(root, ["x_made", "x_changed", "y_gone"])


def test_every_lua_file_includes_what_it_uses_and_nothing_else() -> None:
    lib = library()
    files = [*pieces(lib), *lib.entries().values()]
    assert {path: unincluded(lib, path) for path in files if unincluded(lib, path)} == {}
    assert {path: unused_includes(lib, path) for path in files if unused_includes(lib, path)} == {}


def test_every_piece_defines_what_it_is_named_after() -> None:
    """The function of its name, or for a piece that holds a constant, the constant of its name in
    capitals (``job_numbers.lua``: ``JOB_NUMBERS``)."""
    lib = library()
    for path in pieces(lib):
        stem = Path(path).stem
        name = f"apply_{stem}" if path.startswith(APPLIER_DIR + "/") else stem
        text = lib.piece(path).text
        assert f"local function {name}(" in text or f"\nlocal {stem.upper()} = " in text, path


def test_every_event_type_has_exactly_one_applier() -> None:
    appliers = library().appliers()  # refuses a type with two appliers, or none
    assert set(appliers) == set(EVENT_TYPES)
    assert appliers["queue_updated"] == appliers["queue_created"]
    assert appliers["job_deleted"] == (f"{APPLIER_DIR}/job_expired.lua", "apply_job_expired")


def test_every_script_loads_on_the_server(client: redis.Redis) -> None:
    for name, text in sources().items():
        sha = client.script_load(text)
        assert client.script_exists(sha) == [True], name


def test_every_command_loads_as_a_functions_library(client: redis.Redis) -> None:
    for name in command_names():
        fn = function(name)
        assert fn.code.startswith(f"#!lua name={fn.name}\n") and fn.name.startswith(f"jobledger_{name}_")
        client.function_load(fn.code, replace=True)
        assert [entry[1] for entry in client.function_list(library=fn.name)] == [fn.name.encode()]
    with pytest.raises(ValueError, match="replay step"):
        function("apply_events")
    with pytest.raises(KeyError):
        source("no_such_script")


@pytest.fixture
def own_client(tmp_path: Path) -> Iterator[redis.Redis]:
    """A client of a server of the test's own: flushing its functions disturbs no other test's."""
    server = PrivateServer(tmp_path / "valkey")
    server.start()
    client = redis.Redis.from_url(server.url)
    try:
        yield client
    finally:
        client.close()
        server.kill()


def test_a_command_loads_its_library_when_the_server_lacks_it(
    own_client: redis.Redis, namespace: str
) -> None:
    client = own_client
    runner = Ledger(client, namespace)
    client.function_flush()  # a server restarted with nothing kept holds no function
    assert put_queue(runner) is True
    assert client.function_list(library=function("put_queue").name)
    client.function_flush()
    outcomes = runner.run_many(
        [commands.create_job("q", JobOptions()), commands.create_job("nope", JobOptions())]
    )
    assert outcomes[0].id == 1 and isinstance(outcomes[1], errors.NotFound)  # each ran, once
    assert runner.read(readers.queue_size("q")) == 1


def test_load_functions_loads_only_what_the_server_lacks(own_client: redis.Redis, namespace: str) -> None:
    client = own_client
    runner = Ledger(client, namespace)
    client.function_flush()
    assert runner.load_functions() == len(command_names())
    assert runner.load_functions() == 0
    client.function_delete(function("fetch_jobs").name)
    assert runner.load_functions() == 1
    older = function("fetch_jobs").code.replace(
        function("fetch_jobs").name, "jobledger_fetch_jobs_0123456789abcdef"
    )
    client.function_load(older)  # another version's, from before an upgrade
    assert runner.load_functions() == 0
    held = {entry[1].decode() for entry in client.function_list(library="jobledger_*")}
    assert held == {function(name).name for name in command_names()}


def test_a_call_keeps_nothing_a_piece_keeps_for_one_call(client: redis.Redis, namespace: str) -> None:
    """A library's locals outlive a call: what a piece keeps for one call (the jobs it read) is made
    again at the next, which may be of another ledger holding a job of the same id."""
    first, second = Ledger(client, namespace), Ledger(client, namespace + "-2")
    for runner in (first, second):
        put_queue(runner)
        create(runner)
    fetch_one(second)
    with pytest.raises(errors.Conflict):  # reads job 1 of the first ledger (queued), and refuses
        update(first, 1, status="completed")
    assert update(second, 1, status="completed") == 1  # job 1 of the second ledger is running


def test_a_server_without_functions_is_named_as_such() -> None:
    refused = translate(redis.ResponseError("unknown command 'FCALL', with args beginning with: "))
    assert isinstance(refused, FunctionsMissing) and "Redis 7.0" in str(refused)


def test_a_script_carries_the_appliers_of_the_events_it_emits() -> None:
    src = sources()
    assert "job_completed = apply_job_completed" in src["update_job"]
    assert "job_created = apply_job_created" not in src["update_job"]
    assert "job_started = apply_job_started" not in src["put_queue"]
    assert "local function apply_job_started(" not in src["put_queue"]
    assert "queue_updated = apply_queue_created" in src["put_queue"]
    assert "APPLY" not in src["read_keys"]
    for type_, (_, applier) in library().appliers().items():
        assert f"{type_} = {applier}" in src["apply_events"]


def test_a_script_puts_what_it_includes_first_and_each_file_once(tmp_path: Path) -> None:
    lib = write(
        tmp_path,
        {
            "projections/lua/lib/p.lua": "local function p() end\n",
            "projections/lua/apply/x_made.lua": '--- @applies "x_changed"\n'
            '--- @include "projections/lua/lib/p.lua"\n'
            "local function apply_x_made(e) p() end\n",
            "projections/lua/apply/y_gone.lua": "local function apply_y_gone(e) end\n",
            "projections/lua/apply.lua": '--- @include "projections/lua/lib/p.lua"\n'
            "local function apply(kind) p(); APPLY[kind]() end\n",
            "ledger/lua/lib/emit.lua": '--- @include "projections/lua/apply.lua"\n'
            "local function emit(now, kind) apply(kind) end\n",
            "ledger/lua/go.lua": '--- @include "ledger/lua/lib/emit.lua"\n'
            '--- @include "projections/lua/lib/p.lua"\n'
            "emit(1, 'x_changed')\np()\n",
        },
    )
    script = lib.compose("ledger/lua/go.lua")
    table = "local APPLY = {\n  x_changed = apply_x_made\n}"
    marks = ["local function p(", "local function apply_x_made(", table, "local function apply(",
             "local function emit(", "emit(1, 'x_changed')"]  # fmt: skip
    assert [script.count(mark) for mark in marks] == [1] * len(marks)
    assert [script.index(mark) for mark in marks] == sorted(script.index(mark) for mark in marks)
    assert "apply_y_gone" not in script


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"ledger/lua/lib/a.lua": '--- @include "ledger/lua/lib/gone.lua"\nlocal function a() end\n'},
            "ledger/lua/lib/a.lua includes ledger/lua/lib/gone.lua, which does not exist",
        ),
        (
            {
                "ledger/lua/lib/a.lua": '--- @include "ledger/lua/lib/b.lua"\nlocal function a() b() end\n',
                "ledger/lua/lib/b.lua": '--- @include "ledger/lua/lib/a.lua"\nlocal function b() a() end\n',
            },
            "include cycle: ledger/lua/lib/a.lua -> ledger/lua/lib/b.lua -> ledger/lua/lib/a.lua",
        ),
    ],
    ids=["a missing include names the file that declared it", "an include cycle"],
)
def test_bad_includes_are_refused(tmp_path: Path, files: dict[str, str], message: str) -> None:
    lib = write(tmp_path, {**files, "ledger/lua/go.lua": '--- @include "ledger/lua/lib/a.lua"\na()\n'})
    with pytest.raises(CompositionError, match=f"^{re.escape(message)}$"):
        lib.compose("ledger/lua/go.lua")


def test_a_function_used_but_not_included_is_caught(tmp_path: Path) -> None:
    lib = write(
        tmp_path,
        {
            "ledger/lua/lib/a.lua": "local function a() end\n",
            "ledger/lua/lib/b.lua": '--- @include "ledger/lua/lib/a.lua"\nlocal function b() a() end\n',
            "ledger/lua/lib/c.lua": "-- c() calls b(); a() is only named here\nlocal function c() b() end\n",
            "ledger/lua/go.lua": '--- @include "ledger/lua/lib/b.lua"\nb(); a()\n',
        },
    )
    assert unincluded(lib, "ledger/lua/lib/c.lua") == {"b"}
    assert unincluded(lib, "ledger/lua/go.lua") == set()  # a() comes with b.lua
    assert unused_includes(lib, "ledger/lua/lib/b.lua") == []


def test_appliers_are_named_after_their_event_types(tmp_path: Path) -> None:
    lib = write(tmp_path, {"projections/lua/apply/x_made.lua": "local function apply_x_made(e) end\n"})
    with pytest.raises(CompositionError, match="no applier for x_changed, y_gone"):
        lib.appliers()
    write(tmp_path, {"projections/lua/apply/x_changed.lua": "", "projections/lua/apply/y_gone.lua": ""})
    lib = write(tmp_path, {"projections/lua/apply/x_made.lua": '--- @applies "x_changed"\n'})
    with pytest.raises(CompositionError, match="x_changed has two appliers"):
        lib.appliers()
    (tmp_path / "projections/lua/apply/x_changed.lua").unlink()
    assert lib.appliers()["x_changed"] == (f"{APPLIER_DIR}/x_made.lua", "apply_x_made")
    lib = write(tmp_path, {"projections/lua/apply/x_unknown.lua": ""})
    with pytest.raises(CompositionError, match=r"x_unknown\.lua is named after no event type"):
        lib.appliers()


def test_an_emit_must_name_its_event_type(tmp_path: Path) -> None:
    lib = write(tmp_path, {"ledger/lua/go.lua": "local kind = 'x_made'\nemit(1, kind)\n"})
    with pytest.raises(CompositionError, match=r"go\.lua calls emit"):
        lib.compose("ledger/lua/go.lua")
    lib = write(tmp_path, {"ledger/lua/go.lua": "emit(1, 'x_lost')\n"})
    with pytest.raises(CompositionError, match="x_lost"):
        lib.compose("ledger/lua/go.lua")


@pytest.mark.parametrize(
    "change",
    ["SEEN[id] = true", "SEEN.last = id", "SEEN = {id}", "local n; n, SEEN = 1, {}", "table.insert(SEEN, id)",
     "if id then SEEN[id] = 1 end", "SEEN[id][1] = 2", "local s = SEEN\n  s.n = id"],
)  # fmt: skip
def test_a_piece_that_keeps_a_change_from_call_to_call_must_declare_it(tmp_path: Path, change: str) -> None:
    seen = "local SEEN = {}\n"
    piece = f"local function see(id)\n  {change}\nend\n"
    go = {"ledger/lua/go.lua": '--- @include "ledger/lua/lib/seen.lua"\nsee(ARGV[1])\n'}
    lib = write(tmp_path, {"ledger/lua/lib/seen.lua": seen + piece, **go})
    with pytest.raises(CompositionError, match=r"^ledger/lua/lib/seen\.lua changes SEEN, a top-level local"):
        lib.compose("ledger/lua/go.lua")
    lib = write(tmp_path, {"ledger/lua/lib/seen.lua": '--- @each_call "SEEN"\n' + seen + piece, **go})
    assert "SEEN = {}\n" in lib.compose("ledger/lua/go.lua")
    assert "SEEN = {}" in lib.composed("ledger/lua/go.lua").fresh
    lib = write(tmp_path, {"ledger/lua/lib/seen.lua": '--- @scratch "SEEN"\n' + seen + piece, **go})
    assert lib.composed("ledger/lua/go.lua").fresh == ()


def test_reading_or_shadowing_a_pieces_constant_is_not_a_change(tmp_path: Path) -> None:
    piece = ("local LIMIT, NAMES = 5, {a = 1}\nlocal function fits(n)\n  local LIMIT = LIMIT + 1\n"
             "  if NAMES[n] == 1 or n <= LIMIT then return true end\n"
             "  local x = {LIMIT, NAMES.a}\n  return f(NAMES, x) ~= nil\nend\n")  # fmt: skip
    go = '--- @include "ledger/lua/lib/fits.lua"\nfits(1)\n'
    lib = write(tmp_path, {"ledger/lua/lib/fits.lua": piece, "ledger/lua/go.lua": go})
    assert "local function fits(" in lib.compose("ledger/lua/go.lua")
    lib = write(tmp_path, {"ledger/lua/go.lua": '--- @include "ledger/lua/lib/fits.lua"\nNAMES.b = 2\n'})
    with pytest.raises(
        CompositionError, match=r"^ledger/lua/go\.lua changes NAMES, a top-level local of ledger/lua/lib"
    ):
        lib.compose("ledger/lua/go.lua")


def test_lua_key_helpers_build_the_same_keys_as_python(client: redis.Redis) -> None:
    keys = Keys("ns-check")
    script = lua_prelude() + "return {K.events, K.job('7'), K.queue_status('q', 'running'), K.tag('x')}"
    got = [b.decode() for b in client.eval(script, 1, keys.prefix)]
    assert got == [keys.events, keys.job(7), keys.queue_status("q", "running"), keys.tag("x")]
    assert all(not t.startswith("{") for t in TEMPLATES.values())


def test_key_helper_calls_written_in_place_build_the_same_keys(client: redis.Redis) -> None:
    keys = Keys("ns-inline")
    code = (
        "local q = 'q'  -- K.job(not code)\n"
        "return {K.events, K.job(3 + 4), K.queue_status(q, 'run' .. 'ning'), K.tag('a,(b)'),"
        " K.launcher_pending(tostring(K.job(1)):len())}"
    )
    inlined = lua_inline_keys(code)
    assert "K.job(" not in inlined.split("--")[0] and "K.job(not code)" in inlined
    got = [b.decode() for b in client.eval(lua_prelude({"events"}) + inlined, 1, keys.prefix)]
    assert got == [
        keys.events,
        keys.job(7),
        keys.queue_status("q", "running"),
        keys.tag("a,(b)"),
        keys.prefix + f"launcher:{len(keys.job(1))}:pending",
    ]

"""Compose the Lua scripts and name them.

A script is the generated prelude (the key helpers of :mod:`jobledger.ledger.keys` it uses, the
versions of :mod:`jobledger.ledger.events` of the event types it can emit), the shared pieces it needs,
then its entry file's body.  Each
entry file is one command (``ledger/lua``) or a replay step (``replay/lua``).

Every Lua file declares in its header the pieces it uses, one line each, by their path from the package
root (the folder that holds ledger/, projections/ and replay/)::

    --- @include "projections/lua/lib/load_job.lua"

A script carries what its entry file reaches through these declarations: depth first, each file once,
dependencies before their dependents.  A script carries nothing it does not reach.

Commands run as Redis Functions (:func:`function`): each command's script becomes a library of one
function, whose pieces (local functions, tables, the versions) are built once when the library is
loaded, where a script run with EVALSHA builds them again at every call.  What changes from call
to call -- the prelude's keys, now, actor, sent time and token, ``KEYS`` and ``ARGV`` -- are locals
of the library that each call sets first.  So is what a piece keeps for one call only, which it
declares just above its line as ``--- @each_call "NAME"`` (the jobs a command has read, the bucket
it last wrote): each call runs that ``local NAME = ...`` again.  A piece that keeps anything else
from call to call would carry it into the next call, of any ledger: a piece's other top-level
locals are constants, and the composer refuses a script whose code changes one, unless the piece
declares it ``--- @scratch "NAME"``: one table kept on purpose, each field set before it is read.
Replay's steps (``replay/lua``) stay scripts: each runs over a batch.

The appliers are the one thing no file names: ``projections/lua/apply.lua`` dispatches on a generated
``local APPLY = {...}`` table (event type -> applier), and the composer puts before it that table and
the appliers of the event types the script can emit, with what they include.  Those types are derived
from the code, not declared: every ``emit(now, 'type', ...)`` in the reached files names its type as a
quoted literal (an emit whose type is not one is refused), and an entry body that calls ``apply``
itself (replay) can apply every type.  The applier of type T is ``projections/lua/apply/T.lua``,
defining ``apply_T``, unless an applier's header declares that it applies T too, as
``projections/lua/apply/queue_created.lua`` does with ``--- @applies "queue_updated"``.

Lists of names.  Where a file defines a table of option names, as
``local JOB_NUMBERS = --[[ @names "job_numbers" ]] {}``, the composer writes in the ``{}`` the names
:mod:`jobledger.ledger.option_lists` derives from the models that declare the options, so a new option
reaches the scripts without a list to edit.

The clock.  A command (an entry of ``ledger/lua``) gets its ``now`` as ``ARGV[1]``, stamped by the
caller's clock before it was sent; a command held up on its way can arrive after one stamped later.
So the prelude of every command reads the ledger's ``clock`` (the latest ``at`` in the stream) once,
in the same MGET as the generation pointer, and raises ``ARGV[1]`` to it, as ``NOW``: everything the
script computes from ``now`` (due scores, deadlines, the events' ``at``) uses the raised value, and
``emit`` moves the clock to each event's ``at``.  Hence ``at`` never decreases along the stream,
whatever the callers' clocks do.  Appliers never read it: they take ``at`` from the event.  A
fetch held up in a stalled Redis starts its jobs that much later than its ``now`` (see
``ledger/lua/lib/start_time.lua``), so that no job is handed out already past its deadline.

Sent.  ``ARGV[3]`` is when the command was sent by the sender's real time
(:func:`jobledger.ledger.clock.wall_ms`), never the injectable clock's: with the server's ``TIME``
it measures how long the command waited in Redis, and nothing else.  The prelude takes it off as
``SENT``.

The actor.  A command gets who it runs for as ``ARGV[2]`` (the runner's actor, see
:mod:`jobledger.ledger.runner`); the prelude takes it off as ``ACTOR`` (and ``SENT`` after it), so
the command's own arguments keep their indices from ``ARGV[2]`` on, and ``emit`` records it in
each event's ``actor`` field (a launcher's firing records ``launcher:ID`` instead).  Replay steps
have no actor: import carries each event's own.

The token.  ``ARGV[4]`` is the digest of the token the command runs for, or ``''`` (see
:meth:`jobledger.ledger.runner.Ledger.as_actor`); the prelude takes it off as ``TOKEN`` and refuses
the command (``UNAUTHORIZED``, nothing appended) when the ledger no longer knows that token, so a
server that remembers tokens still stops a revoked one at once.

Scripts are composed once per process, each when it is first asked for (:func:`source`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from jobledger.ledger.keys import TEMPLATES, lua_inline_keys, lua_prelude

#: The folder that holds ledger/, projections/ and replay/: the repository, or the installed package.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
ENTRY_DIRS = ("ledger/lua", "replay/lua")
APPLY = "projections/lua/apply.lua"
APPLIER_DIR = "projections/lua/apply"
COMMANDS = "ledger/lua/"
#: What the name of every Functions library of jobledger starts with (see :func:`function`).
FUNCTION_PREFIX = "jobledger_"
#: The start of every command's body: the actor and the time it was sent taken off ``ARGV[2]`` and
#: ``ARGV[3]``, and ``now`` (``ARGV[1]``)
#: raised to the ledger's clock, once (the clock's own text then, as no number is made text again).
#: ``CLOCK_AT`` is where the clock stands: ``emit`` moves it, and writes it only when it moves.
#: (``+ 0`` makes the numbers: tonumber reads a string twice, once to check and once to convert.)
PRELUDE = (
    "local ACTOR = table.remove(ARGV, 2)\n"
    "local SENT = table.remove(ARGV, 2) + 0\n"
    "local TOKEN = table.remove(ARGV, 2)\n"
    f"if TOKEN ~= '' and redis.call('EXISTS', P .. {TEMPLATES['token'].split('{')[0]!r} .. TOKEN) == 0 then\n"
    "  return redis.error_reply('UNAUTHORIZED unknown or revoked token')\n"
    "end\n"
    "local NOW, CLOCK_AT = ARGV[1] + 0, (CLOCK or 0) + 0\n"
    "if CLOCK_AT > NOW then NOW = CLOCK_AT; ARGV[1] = CLOCK end\n"
)

_INCLUDE = re.compile(r'^--- @include "([^"]*)"', re.MULTILINE)
_APPLIES = re.compile(r'^--- @applies "([^"]*)"', re.MULTILINE)
_COMMENT = re.compile(r"--.*")
_EMIT_CALL = re.compile(r"(?<!function )\bemit\(")
_EMITS = re.compile(r"\bemit\(\s*[^,()]+,\s*'(\w+)'")
_APPLY_CALL = re.compile(r"(?<!function )\bapply\(")
_KEY_USE = re.compile(r"\bK\.(\w+)")
_NAMES = re.compile(r'--\[\[ @names "(\w*)" \]\] \{\}')
_EACH_CALL = re.compile(r'^--- @each_call "(\w+)"', re.MULTILINE)
_SCRATCH = re.compile(r'^--- @scratch "(\w+)"', re.MULTILINE)
_TOP_LOCAL = re.compile(r"^local ((?!function\b)[\w, ]+?) =", re.MULTILINE)
#: A table library call that changes its first argument.
_CHANGES = r"\b(?:table\.insert|table\.remove|table\.sort|rawset)\(\s*"
#: What a statement changes: the targets of an assignment, or a table library call's first argument.
_WRITTEN = re.compile(
    rf"(?<![\w.])(\w+(?:\.\w+|\[[^\]\n]*\])*(?:\s*,\s*[\w.]+(?:\[[^\]\n]*\])*)*)\s*=(?!=)|{_CHANGES}(\w+)\b"
)


class CompositionError(ValueError):
    """The declarations of the Lua files do not compose (a missing include, a cycle, a missing applier)."""


@dataclass(frozen=True)
class Piece:
    path: str  # from the package root
    text: str
    includes: tuple[str, ...]

    @property
    def code(self) -> str:
        """The text without its comments."""
        return _COMMENT.sub("", self.text)

    @cached_property
    def changes(self) -> tuple[str, ...]:
        """The names its code assigns or changes (see :func:`_check_kept`)."""
        return _changes(self.code)


@dataclass(frozen=True)
class Composed:
    """A script in its parts: ``keys``, the code that finds the call's keys and, for a command, its
    now, actor and sent time (run at every call); ``versions``, the table of event versions;
    ``helpers``, the shared pieces it reaches; ``body``, its entry file's text; ``fresh``, the
    statements that make again, at every call, what a piece keeps for one call only (declared just
    above its line as ``--- @each_call "NAME"``: the piece's own ``local NAME = ...`` line, run again)."""

    keys: str
    versions: str
    helpers: str
    body: str
    fresh: tuple[str, ...]


class Library:
    """The Lua files under one package root, and the scripts they compose."""

    def __init__(self, root: Path, event_types: Iterable[str] | None = None) -> None:
        from jobledger.ledger.events import EVENT_TYPES

        self.root = root
        self.event_types = list(EVENT_TYPES if event_types is None else event_types)
        self._pieces: dict[str, Piece] = {}

    def piece(self, path: str, declared_by: str | None = None) -> Piece:
        if path not in self._pieces:
            file = self.root / path
            if not file.is_file():
                if declared_by:
                    raise CompositionError(f"{declared_by} includes {path}, which does not exist")
                raise CompositionError(f"{path} does not exist")
            text = _NAMES.sub(lambda m: _names(path, m.group(1)), file.read_text())
            self._pieces[path] = Piece(path, text, tuple(_INCLUDE.findall(text)))
        return self._pieces[path]

    def closure(self, path: str, extra: Mapping[str, Sequence[str]] | None = None) -> list[Piece]:
        """The file at ``path`` after everything it includes, transitively: depth first, each once,
        dependencies first.  ``extra``: more includes of some files, as if declared (the appliers)."""
        extra = extra or {}
        order: list[Piece] = []
        done: set[str] = set()

        def visit(current: str, declared_by: str | None, chain: list[str]) -> None:
            if current in chain:
                cycle = [*chain[chain.index(current) :], current]
                raise CompositionError("include cycle: " + " -> ".join(cycle))
            if current in done:
                return
            piece = self.piece(current, declared_by)
            for include in (*piece.includes, *extra.get(current, ())):
                visit(include, current, [*chain, current])
            done.add(current)
            order.append(piece)

        visit(path, None, [])
        return order

    def appliers(self) -> dict[str, tuple[str, str]]:
        """event type -> (its applier's file, the applier's function name)."""
        found: dict[str, tuple[str, str]] = {}
        for file in sorted((self.root / APPLIER_DIR).glob("*.lua")):
            path = f"{APPLIER_DIR}/{file.name}"
            if file.stem not in self.event_types:
                raise CompositionError(f"{path} is named after no event type")
            for type_ in [file.stem, *_APPLIES.findall(self.piece(path).text)]:
                if type_ not in self.event_types:
                    raise CompositionError(f"{path} applies {type_!r}, which is not an event type")
                if type_ in found:
                    raise CompositionError(f"{type_} has two appliers: {found[type_][0]} and {path}")
                found[type_] = (path, f"apply_{file.stem}")
        missing = [t for t in self.event_types if t not in found]
        if missing:
            raise CompositionError(f"no applier for {', '.join(missing)} in {APPLIER_DIR}")
        return found

    def emitted(self, reached: Sequence[Piece]) -> list[str]:
        """The event types a script of these pieces (its entry last) can emit: those its emit() calls
        name; every type when its entry body calls ``apply`` itself."""
        if _APPLY_CALL.search(reached[-1].code):
            return list(self.event_types)
        found: set[str] = set()
        for piece in reached:
            code = piece.code
            named = _EMITS.findall(code)
            if len(named) != len(_EMIT_CALL.findall(code)):
                raise CompositionError(f"{piece.path} calls emit() with a type that is not a quoted name")
            found.update(named)
        unknown = found - set(self.event_types)
        if unknown:
            raise CompositionError(f"{reached[-1].path} reaches emit() of no event type: {sorted(unknown)}")
        return [t for t in self.event_types if t in found]

    def composed(self, entry: str) -> Composed:
        """The parts of an entry file's script (see :class:`Composed`)."""
        from jobledger.ledger.events import lua_versions  # the models: loaded by the first script composed

        reached = self.closure(entry)
        types = self.emitted(reached)
        extra: dict[str, list[str]] = {}
        table = ""
        if types:
            if APPLY not in {p.path for p in reached}:
                raise CompositionError(f"{entry} emits events but does not reach {APPLY}")
            appliers = self.appliers()
            extra[APPLY] = list(dict.fromkeys(appliers[t][0] for t in types))
            table = ",\n".join(f"  {t} = {appliers[t][1]}" for t in types)
        parts = []
        fresh: list[str] = []
        pieces = self.closure(entry, extra)
        _check_kept(pieces)
        for piece in pieces[:-1]:
            if piece.path == APPLY:
                parts.append("local APPLY = {\n" + table + "\n}\n")
            parts.append(piece.text)
            fresh += [_fresh(piece, name) for name in _EACH_CALL.findall(piece.text)]
        helpers, body = "\n".join(parts), pieces[-1].text
        command = entry.startswith(COMMANDS)
        # a command's emit() reads a version as V[kind] or 1: its table holds only the others
        code = helpers + body
        versions = lua_versions(types, ones=not command) if "V[" in code else ""
        helpers, body = lua_inline_keys(helpers), lua_inline_keys(body)  # the prelude then defines
        # only the fixed keys K uses: those the code uses, not those its comments name (each costs every call)
        used = set(_KEY_USE.findall(_COMMENT.sub("", helpers + body)))
        keys = lua_prelude(used, clock=command) + (PRELUDE if command else "")
        return Composed(keys, versions, helpers, body, tuple(fresh))

    def compose(self, entry: str) -> str:
        """The complete script of an entry file."""
        c = self.composed(entry)
        return c.keys + c.versions + c.helpers + "\n" + c.body

    def entries(self) -> dict[str, str]:
        """script name -> its entry file, for every command and replay step."""
        return {
            file.stem: f"{folder}/{file.name}"
            for folder in ENTRY_DIRS
            for file in sorted((self.root / folder).glob("*.lua"))
        }


def _check_kept(pieces: Sequence[Piece]) -> None:
    """Refuse a script one of whose pieces has a top-level local that some reached code assigns, or
    changes through a field, an index or a table function (itself, or a local made its alias by
    ``local a = NAME`` in the same file), without declaring it: in a library it would keep the last
    call's value into the next call, of any ledger.  ``--- @each_call "NAME"`` makes it again at
    every call; ``--- @scratch "NAME"`` keeps one table from call to call on purpose, for a piece
    that sets each of its fields before it reads it (the event ``apply`` hands to the appliers).  A
    check of the text, so not a proof: a table handed to a function, or aliased otherwise, is not
    followed."""
    owners: dict[str, str] = {}
    for piece in pieces[:-1]:
        declared = {*_EACH_CALL.findall(piece.text), *_SCRATCH.findall(piece.text)}
        for found in _TOP_LOCAL.findall(piece.code):
            owners.update((n.strip(), piece.path) for n in found.split(",") if n.strip() not in declared)
    for piece in pieces:
        for name in piece.changes:
            if name in owners:
                raise CompositionError(
                    f"{piece.path} changes {name}, a top-level local of {owners[name]}, which a library "
                    f'keeps from call to call: declare it --- @each_call "{name}" above its line '
                    f'(made again at every call), or --- @scratch "{name}" (every field set before it '
                    "is read), or keep it constant"
                )


def _changes(code: str) -> tuple[str, ...]:
    """The names a file's code assigns or changes (see :func:`_check_kept`), in order, a local's
    alias (``local a = NAME``) counted as its name; declarations (``local ...``) are not changes."""
    statements = re.split(r"[;\n]", code)
    aliases = {
        made.group(1): made.group(2)
        for statement in statements
        if (made := re.fullmatch(r"\s*local (\w+) = (\w+)\s*", statement))
    }
    found: list[str] = []
    for statement in statements:
        if statement.lstrip().startswith("local "):
            continue  # a declaration (at the top: the local itself; in a function: another)
        for written in _WRITTEN.finditer(statement):
            targets = written.group(1) or written.group(2)
            for target in targets.split(","):
                base = re.match(r"\s*(\w+)", target)
                if base:
                    found.append(aliases.get(base.group(1), base.group(1)))
    return tuple(dict.fromkeys(found))


def _fresh(piece: Piece, name: str) -> str:
    found = re.search(rf"^local {name} = (.*)$", piece.text, re.MULTILINE)
    if found is None:
        raise CompositionError(
            f'{piece.path} declares @each_call "{name}" but has no line "local {name} = ..."'
        )
    return f"{name} = {_COMMENT.sub('', found.group(1)).strip()}"


def _names(path: str, name: str) -> str:
    from jobledger.ledger.option_lists import LISTS, lua_table  # from the models: with the first script

    if name not in LISTS:
        raise CompositionError(f"{path} asks for the names {name!r}: there are {', '.join(LISTS)}")
    return lua_table(name)


@cache
def library() -> Library:
    return Library(PACKAGE_ROOT)


@cache
def entries() -> dict[str, str]:
    """script name -> its entry file, for every command and replay step."""
    return library().entries()


@cache
def commands() -> tuple[str, ...]:
    """The names of the commands: the entries of ``ledger/lua``."""
    return tuple(name for name, entry in entries().items() if entry.startswith(COMMANDS))


@cache
def source(name: str) -> str:
    """The complete script text of ``name`` (KeyError for a name no entry file has)."""
    return library().compose(entries()[name])


@dataclass(frozen=True)
class Function:
    """A command as a Redis Functions library of one function, both named ``name``."""

    name: str
    code: str  # the library's text, for FUNCTION LOAD


def library_code(composed: Composed, name: str) -> str:
    """The text of a library whose one function, ``name``, runs the script ``composed``.

    What the script builds before its body (its pieces' local functions and tables, the versions)
    is built once, when the library is loaded; what changes from call to call (the keys of the
    call's ledger and generation, now, the actor, ``KEYS`` and ``ARGV`` themselves, and what a
    piece keeps for one call) is a local of the library, which every call sets first."""
    per_call = composed.keys
    names = [n.strip() for found in _TOP_LOCAL.findall(per_call) for n in found.split(",")]
    per_call = re.sub(r"^local ", "", per_call, flags=re.MULTILINE)
    fresh = "".join(f"{line}\n" for line in composed.fresh)
    return (
        f"#!lua name={name}\n"
        f"local KEYS, ARGV, {', '.join(dict.fromkeys(names))}\n"
        f"{composed.versions}{composed.helpers}\n"
        f"redis.register_function('{name}', function(keys, args)\n"
        f"KEYS, ARGV = keys, args\n{per_call}{fresh}{composed.body}\nend)\n"
    )


@cache
def function(name: str) -> Function:
    """The command ``name`` as a Functions library (KeyError for a name no entry file has, ValueError
    for a replay step: those run as scripts).  Its name ends with a digest of its text, so a library
    changed by an upgrade is another library and a server running the older code keeps its own."""
    entry = entries()[name]
    if not entry.startswith(COMMANDS):
        raise ValueError(f"{name} is a replay step, run as a script, not a command")
    composed = library().composed(entry)
    digest = hashlib.sha1(library_code(composed, "").encode()).hexdigest()[:16]
    full = f"{FUNCTION_PREFIX}{name}_{digest}"
    return Function(full, library_code(composed, full))


@cache
def sources() -> dict[str, str]:
    """name -> complete script text, for every command and replay entry."""
    return {name: source(name) for name in entries()}

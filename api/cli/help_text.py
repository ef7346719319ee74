"""Help texts as a reader wants them: no type placeholders (``<bool>`` on a flag, ``<str>``) and no
reST literals (a docstring's double backquotes) in ``--help``.

Typer shows each option's type as its metavar unless it has one, and takes a command's help from its
docstring, written for the API documentation.  :class:`PlainHelpGroup`, the root group of the
command line, tidies every command it hands out, once: a flag takes no metavar, another option its
name in capitals, and the double backquotes go.  Rich markup in a help text is left as written: a
literal ``[`` in one is escaped where it is written.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

#: Marks a command already tidied (the tree is walked once).
_DONE = "_jobledger_plain_help"


def _plain(text: str | None) -> str | None:
    return None if text is None else text.replace("``", "")


def _placeholder(opts: list[str]) -> str:
    """An option's value as its help names it: its long name in capitals (``--max-pending``:
    ``MAX_PENDING``)."""
    return max(opts, key=len).lstrip("-").replace("-", "_").upper()


def tidy(command: Any) -> None:
    """``command`` (typer's own click) and every command under it, tidied as the module says; its
    parameters are those its help shows, ``--help`` too."""
    if getattr(command, _DONE, False):
        return
    setattr(command, _DONE, True)
    command.help = _plain(command.help)
    command.short_help = _plain(command.short_help)
    for param in command.get_params(command.context_class(command)):
        if param.param_type_name == "option":
            param.help = _plain(param.help)
            if param.metavar is None:
                param.metavar = "" if param.is_flag else _placeholder(param.opts)
    for child in getattr(command, "commands", {}).values():
        tidy(child)


class PlainHelpGroup(TyperGroup):
    """The root group: tidies itself, and each command before it runs or shows its help."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            tidy(found)
        return found

    def format_help(self, ctx: Any, formatter: Any) -> None:
        tidy(self)
        super().format_help(ctx, formatter)

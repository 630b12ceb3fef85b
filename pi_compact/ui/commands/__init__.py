"""Slash commands: ``COMMANDS`` are the rows of ``ui.command_table`` with their handlers, in ``/help``'s order.

``dispatch`` runs one against the ``ReplState``; handlers live by topic in this package's modules, and
work that talks to the model goes through ``state.run`` so Esc and Ctrl-C cancel it like a turn.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from importlib import import_module

from rich.table import Table
from rich.text import Text

from pi_compact.llm.thinking import LEVELS
from pi_compact.ui.command_table import ALIASES, ROWS
from pi_compact.ui.commands import config
from pi_compact.ui.state import Command, Outcome, ReplState, Runner, Runtimes

_COMMAND = re.compile(r"^/[A-Za-z][\w-]*$")


# A first word like ``/name``; a path such as ``/usr/bin/env is missing`` is a prompt for the model.
def is_command(text: str) -> bool:
    return bool(_COMMAND.match(text.strip().split(maxsplit=1)[0])) if text.strip() else False


# An unknown command prints a one-line hint; nothing is ever sent to the model by a command except the summary
# request of ``/compact`` (and a compaction ``/model`` needs before switching).
def dispatch(state: ReplState, text: str) -> Outcome:
    name, *rest = text.strip().split(maxsplit=1)  # instructions may start on the next line
    arg = rest[0] if rest else ""
    command = BY_NAME.get(name.lower())
    if command is None:
        state.say(unknown_command_hint(name), "yellow")
        return "continue"
    if arg.strip() and not command.args:
        state.say(f"{command.name} takes no arguments; type {command.name} alone. Nothing was run.", "yellow")
        return "continue"
    return command.handler(state, arg.strip())


def unknown_command_hint(name: str) -> str:
    """One line for a command that does not exist, naming the closest real one when there is one."""
    close = difflib.get_close_matches(name.lower(), list(BY_NAME), n=1, cutoff=0.6)
    guess = f"did you mean {close[0]}? " if close else "type /help for the list. "
    return f"Unknown command {name}; {guess}Nothing was sent to the model."


def argument_options(state: ReplState, command: str) -> Sequence[str]:
    """What may follow ``command`` (for completion)."""
    if command == "/autocompact":
        return ("on", "off")
    if command == "/settings":
        return ("reload",)
    if command == "/model":
        return config.model_names(state)
    if command == "/thinking":
        return LEVELS
    return ()


def _help(state: ReplState, arg: str) -> Outcome:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for command in COMMANDS:
        table.add_row(Text(f"{command.name} {command.args}".strip()), Text(command.help))
    state.console.print(table)
    keys = Table.grid(padding=(0, 2))
    keys.add_column(style="bold", no_wrap=True)
    keys.add_column()
    for key, meaning in KEYS_HELP:
        keys.add_row(Text(key), Text(meaning))
    state.console.print(Text("\nKeys", style="bold"))
    state.console.print(keys)
    prefixes = Table.grid(padding=(0, 2))
    prefixes.add_column(style="bold", no_wrap=True)
    prefixes.add_column()
    for prefix, meaning in PREFIXES_HELP:
        prefixes.add_row(Text(prefix), Text(meaning))
    state.console.print(Text("\nIn a message", style="bold"))
    state.console.print(prefixes)
    return "continue"


def _quit(state: ReplState, arg: str) -> Outcome:
    return "quit"


_OWN = {"help": _help, "quit": _quit}


def _handler(address: str) -> Callable[[ReplState, str], Outcome]:
    """The function a row of the table names (``topic.function``, or one of this module's own)."""
    topic, _, function = address.rpartition(".")
    if not topic:
        return _OWN[function]
    handler: Callable[[ReplState, str], Outcome] = getattr(import_module(f"{__name__}.{topic}"), function)
    return handler


KEYS_HELP: tuple[tuple[str, str], ...] = (
    ("Enter", "send the message"),
    ("Alt-Enter (Esc, Enter) or Ctrl-J", "insert a new line (pasting several lines also works)"),
    ("Esc or Ctrl-C", "cancel the running turn or compaction (nothing is written for a cancelled compaction)"),
    ("Ctrl-C twice at an empty prompt, Ctrl-D", "quit"),
    ("Up / Down", "previous / next input from the history"),
    ("Tab", "complete a /command and its argument"),
    ("Ctrl-O", "show the last collapsed tool output in full"),
    ("Shift+Tab", "next thinking level the model can do"),
)

# What a message may start with or contain besides text (not keys, so listed apart).
PREFIXES_HELP: tuple[tuple[str, str], ...] = (
    ("!cmd", "run a shell command in the project and add it and its output to the conversation"),
    ("!!cmd", "run a shell command without adding it to the conversation"),
    ("@path", "attach that file's text to the message (Tab completes the name)"),
)

COMMANDS: tuple[Command, ...] = tuple(Command(row.name, row.args, row.help, _handler(row.handler)) for row in ROWS)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
BY_NAME |= {alias: BY_NAME[name] for alias, name in ALIASES.items()}

__all__ = [
    "BY_NAME",
    "COMMANDS",
    "KEYS_HELP",
    "Command",
    "Outcome",
    "ReplState",
    "Runner",
    "Runtimes",
    "argument_options",
    "dispatch",
    "is_command",
    "unknown_command_hint",
]

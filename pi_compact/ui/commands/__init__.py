"""Slash commands: ``COMMANDS`` is the one table of them, in the order ``/help`` lists them.

``dispatch`` runs one against the ``ReplState``; handlers live by topic in this package's modules, and
work that talks to the model goes through ``state.run`` so Esc and Ctrl-C cancel it like a turn.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from pi_compact.llm.thinking import LEVELS
from pi_compact.ui.commands import compaction, config, context, history, output, resume, session, thinking, tree
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

COMMANDS: tuple[Command, ...] = (
    Command("/compact", "[--keep N] [instructions]", "summarize older messages now, optionally with a focus or "
            "keeping only about N recent tokens", compaction.compact),
    Command("/context", "", "tokens now, window, threshold, estimator, last usage, breakdown", context.context),
    Command("/summary", "[--diff]", "show the latest compaction summary in full (--diff: what it added, "
                                          "changed and dropped)", compaction.summary),
    Command("/settings", "[reload]", "every effective setting and where it came from; reload re-reads files",
            config.settings),
    Command("/autocompact", "on|off", "turn automatic compaction on or off for this session", compaction.autocompact),
    Command("/model", "[name]", "show the model, or switch (compacts first if the new window needs it)", config.model),
    Command("/thinking", "[level]", "show the thinking level and the model's levels, or set one", thinking.thinking),
    Command("/session", "", "the session file, its entries and size", session.session),
    Command("/new", "", "start a fresh session file", session.new),
    Command("/uncompact", "[--force]", "undo the latest compaction (the context before it comes back)",
            history.uncompact),
    Command("/pin", "[text]", "pin a note (or your last message) that every request carries verbatim", history.pin),
    Command("/pins", "", "the pinned notes, numbered, with their sizes", history.pins),
    Command("/unpin", "N", "remove pin N", history.unpin),
    Command("/tree", "[N [--summary [focus] | --no-summary]]", "the session's branches; move to node N", tree.tree),
    Command("/fork", "[N]", "start a new session file from user message N", tree.fork),
    Command("/clone", "", "copy the current branch into a new session file", tree.clone),
    Command("/name", "[name]", "name the session (or show its name)", tree.name),
    Command("/resume", "[filter]", "pick another session of this project (newest first, typing filters) and open it",
            resume.resume),
    Command("/expand", "", "show the last collapsed tool output in full (also Ctrl-O)", output.expand),
    Command("/copy", "", "copy the last answer to the clipboard (OSC 52: works over ssh and in tmux)", output.copy),
    Command("/export", "[file]", "write the session as a self-contained HTML page", output.export),
    Command("/help", "", "this list", _help),
    Command("/quit", "", "leave (also Ctrl-D)", _quit),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS} | {"/exit": COMMANDS[-1]}

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

"""The slash commands as data, in the order ``/help`` lists them: name, arguments, help, handler's address.

Light on purpose (no rich, no session): the prompt completes names from it while the session is still
loading, and ``ui.commands`` turns each row into a ``Command`` with its handler. Adding a command is a
row here and its function in a topic module of ``ui/commands/`` (the README's command table says it too).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CommandRow:
    """One command; ``handler`` is ``topic.function`` (a function of ``ui/commands/<topic>.py``), or a bare
    name for one of ``ui.commands`` itself (``/help``, which lists this table)."""

    name: str
    args: str
    help: str
    handler: str


ROWS: tuple[CommandRow, ...] = (
    CommandRow("/compact", "[--keep N] [instructions]", "summarize older messages now, optionally with a focus or "
               "keeping only about N recent tokens", "compaction.compact"),
    CommandRow("/context", "", "tokens now, window, threshold, estimator, last usage, breakdown", "context.context"),
    CommandRow("/summary", "[--diff]", "show the latest compaction summary in full (--diff: what it added, "
               "changed and dropped)", "compaction.summary"),
    CommandRow("/settings", "[reload]", "every effective setting and where it came from; reload re-reads files",
               "config.settings"),
    CommandRow("/autocompact", "on|off", "turn automatic compaction on or off for this session",
               "compaction.autocompact"),
    CommandRow("/model", "[name]", "show the model, or switch (compacts first if the new window needs it)",
               "config.model"),
    CommandRow("/thinking", "[level]", "show the thinking level and the model's levels, or set one",
               "thinking.thinking"),
    CommandRow("/session", "", "the session file, its entries and size", "session.session"),
    CommandRow("/new", "", "start a fresh session file", "session.new"),
    CommandRow("/uncompact", "[--force]", "undo the latest compaction (the context before it comes back)",
               "history.uncompact"),
    CommandRow("/pin", "[text]", "pin a note (or your last message) that every request carries verbatim",
               "history.pin"),
    CommandRow("/pins", "", "the pinned notes, numbered, with their sizes", "history.pins"),
    CommandRow("/unpin", "N", "remove pin N", "history.unpin"),
    CommandRow("/tree", "[N [--summary [focus] | --no-summary]]", "the session's branches; move to node N",
               "tree.tree"),
    CommandRow("/fork", "[N]", "start a new session file from user message N", "tree.fork"),
    CommandRow("/clone", "", "copy the current branch into a new session file", "tree.clone"),
    CommandRow("/name", "[name]", "name the session (or show its name)", "tree.name"),
    CommandRow("/resume", "[filter]", "pick another session of this project (newest first, typing filters) and open it",
               "resume.resume"),
    CommandRow("/expand", "", "show the last collapsed tool output in full (also Ctrl-O)", "output.expand"),
    CommandRow("/copy", "",
               "copy the last answer to the clipboard (OSC 52: works over ssh; tmux needs set-clipboard on)",
               "output.copy"),
    CommandRow("/export", "[file]", "write the session as a self-contained HTML page", "output.export"),
    CommandRow("/help", "", "this list", "help"),
    CommandRow("/quit", "", "leave (also Ctrl-D)", "quit"),
)
ALIASES = {"/exit": "/quit"}  # other spellings of a command
NAMES = tuple(row.name for row in ROWS)

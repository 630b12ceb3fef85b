"""Slash commands: ``/compact``, ``/context``, ``/settings``, ``/model`` and the rest.

Contract:
- ``is_command(text)`` says whether input is meant as a command: a first word like ``/name``. A path
  such as ``/usr/bin/env is missing`` is a prompt for the model.
- ``dispatch`` runs one command against the ``ReplState`` and returns "quit" or "continue". An
  unknown command prints a one-line hint; nothing is ever sent to the model by a command except the
  summary request of ``/compact`` (and a compaction ``/model`` needs before switching).
- Work that talks to the model goes through ``state.run``, the REPL's cancellable runner, so Ctrl-C
  and Esc cancel it like a turn.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pi_compact.agent.session import AgentSession
from pi_compact.app import AppOptions, Runtime, build_runtime, model_factory
from pi_compact.cancel import CancelToken
from pi_compact.errors import PiCompactError
from pi_compact.llm.protocol import ChatModel
from pi_compact.settings.files import LoadedSettings, load_settings
from pi_compact.ui.compaction_view import summary_renderable
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.status import (
    context_report,
    gather_status,
    model_ready,
    session_table,
    settings_table,
    status_text,
)

Outcome = Literal["continue", "quit"]
Runner = Callable[[Callable[[CancelToken], Any]], Any]
_COMMAND = re.compile(r"^/[A-Za-z][\w-]*$")


@dataclass
class ReplState:
    """What commands act on; ``runtime`` is replaced by ``/new``, ``loaded`` by ``/settings reload``."""

    console: Console
    renderer: TerminalRenderer
    options: AppOptions
    loaded: LoadedSettings
    runtime: Runtime
    run: Runner
    model_name: str  # the model's name before it has resolved (litellm may still be importing)

    @property
    def session(self) -> AgentSession:
        return self.runtime.session

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style))

    def print_status(self) -> None:
        self.console.print(status_text(gather_status(self.session, self.model_name)))


@dataclass(frozen=True)
class Command:
    name: str
    args: str
    help: str
    handler: Callable[[ReplState, str], Outcome]


def is_command(text: str) -> bool:
    return bool(_COMMAND.match(text.strip().split(maxsplit=1)[0])) if text.strip() else False


def dispatch(state: ReplState, text: str) -> Outcome:
    name, *rest = text.strip().split(maxsplit=1)  # instructions may start on the next line
    arg = rest[0] if rest else ""
    command = BY_NAME.get(name.lower())
    if command is None:
        state.say(f"Unknown command {name}; type /help for the list. Nothing was sent to the model.", "yellow")
        return "continue"
    return command.handler(state, arg.strip())


def argument_options(state: ReplState, command: str) -> Sequence[str]:
    """What may follow ``command`` (for completion)."""
    if command == "/autocompact":
        return ("on", "off")
    if command == "/settings":
        return ("reload",)
    if command == "/model":
        return model_names(state)
    return ()


def model_names(state: ReplState) -> list[str]:
    names = [name for name, _override in state.session.settings.models]
    current = state.session.model.info.model if model_ready(state.session.model) else state.model_name
    known = {*names, current, *([state.options.model] if state.options.model else [])}
    return sorted(name for name in known if name and not name.startswith("("))  # not "(no model)"


# ---- commands ------------------------------------------------------------------------------------


def _compact(state: ReplState, arg: str) -> Outcome:
    messages = sum(1 for e in state.runtime.store.entries if e.get("type") == "message")
    if messages < 2:
        state.say("Nothing to compact (no messages yet).", "yellow")
        return "continue"
    try:
        state.run(lambda token: state.session.compact(arg or None, token))
    except PiCompactError as exc:
        state.say(str(exc), "red")
    state.print_status()
    return "continue"


def _context(state: ReplState, arg: str) -> Outcome:
    state.console.print(context_report(state.session, state.model_name))
    return "continue"


def _summary(state: ReplState, arg: str) -> Outcome:
    entry = next((e for e in reversed(state.runtime.store.branch()) if e.get("type") == "compaction"), None)
    if entry is None:
        state.say("No compaction yet: /compact makes one.", "yellow")
    else:
        state.console.print(summary_renderable(str(entry.get("summary", "")), int(entry.get("tokensBefore") or 0)))
    return "continue"


def _settings(state: ReplState, arg: str) -> Outcome:
    if arg == "reload":
        loaded = load_settings(state.options.cwd, {})
        for warning in loaded.warnings:
            state.say(f"warning: {warning}", "yellow")
        auto = state.session.auto_compact
        state.loaded = loaded
        state.session.set_settings(loaded.settings)
        if not auto:
            state.session.set_auto_compaction(False)  # a /autocompact off or --no-auto-compact outlives a reload
        state.renderer.show_thinking = loaded.settings.show_thinking
        count = len(loaded.warnings)
        state.say(f"Settings reloaded ({count} warning{'' if count == 1 else 's'}).", "green")
        return "continue"
    if arg:
        state.say("Usage: /settings or /settings reload.", "yellow")
        return "continue"
    state.console.print(settings_table(state.loaded, state.options, state.session, state.model_name))
    return "continue"


def _autocompact(state: ReplState, arg: str) -> Outcome:
    if arg not in ("on", "off"):
        current = "on" if state.session.auto_compact and state.session.settings.compaction.enabled else "off"
        state.say(f"Auto-compaction is {current}. Usage: /autocompact on|off.")
        return "continue"
    state.session.set_auto_compaction(arg == "on")
    state.say(f"Auto-compaction {arg}.", "green")
    return "continue"


def _model(state: ReplState, arg: str) -> Outcome:
    session = state.session
    if not arg:
        if model_ready(session.model):
            info = session.model.info
            output = f"{info.max_output_tokens:,}" if info.max_output_tokens else "unknown"
            state.say(f"Model {info.model}: window {info.context_window:,} tokens, max output {output}.")
        else:
            state.say(f"Model {state.model_name} (still loading).")
        others = [name for name in model_names(state) if name != state.model_name]
        if others:
            state.say("Switch with /model NAME; configured: " + ", ".join(others), "dim")
        return "continue"
    try:
        state.renderer.working(f"Loading {arg}…")
        try:
            model: ChatModel = model_factory(state.options, session.settings, arg)()
        finally:
            state.renderer.close()
        state.run(lambda token: session.set_model(model, token))
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.model_name = model.info.model
    state.say(f"Switched to {model.info.model} (window {model.info.context_window:,} tokens).", "green")
    state.print_status()
    return "continue"


def _session(state: ReplState, arg: str) -> Outcome:
    state.console.print(session_table(state.runtime.store, state.session.compactions))
    return "continue"


def _new(state: ReplState, arg: str) -> Outcome:
    old = state.session
    old.store.close()  # let other programs write the old file again
    options = replace(state.options, session=None, continue_recent=False)
    state.runtime = build_runtime(options, old.settings, state.renderer, model=old.model)
    if state.session.auto_compact != old.auto_compact:
        state.session.set_auto_compaction(old.auto_compact)
    path = state.runtime.store.path
    state.say(f"New session: {path if path is not None else 'in memory'}", "green")
    return "continue"


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
)

COMMANDS: tuple[Command, ...] = (
    Command("/compact", "[instructions]", "summarize older messages now, optionally with a focus", _compact),
    Command("/context", "", "tokens now, window, threshold, estimator, last usage, breakdown", _context),
    Command("/summary", "", "show the latest compaction summary in full", _summary),
    Command("/settings", "[reload]", "every effective setting and where it came from; reload re-reads files",
            _settings),
    Command("/autocompact", "on|off", "turn automatic compaction on or off for this session", _autocompact),
    Command("/model", "[name]", "show the model, or switch (compacts first if the new window needs it)", _model),
    Command("/session", "", "the session file, its entries and size", _session),
    Command("/new", "", "start a fresh session file", _new),
    Command("/help", "", "this list", _help),
    Command("/quit", "", "leave (also Ctrl-D)", _quit),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS} | {"/exit": COMMANDS[-1]}

__all__ = ["BY_NAME", "COMMANDS", "ReplState", "argument_options", "dispatch", "is_command"]

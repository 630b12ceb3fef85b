"""Slash commands for getting back what compaction summarized, and for pi's session tree.

``/uncompact``, ``/pin``, ``/pins``, ``/unpin``, ``/tree``, ``/fork``, ``/clone``, ``/name``: each is a
``Command`` of the slash table (``history_commands()`` is appended to it). They write only through the
store (one entry each: a pin, an unpin, a move, a branch summary, a session name, the uncompact
marker) or by starting a new session file (``/fork``, ``/clone``); a refusal or a cancel writes nothing.
Work that may call the model (a branch summary) runs through ``state.run``, so Esc and Ctrl-C cancel it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pi_compact.agent.navigator import Navigator, TreeEnd, TreeEvent, TreeStart
from pi_compact.agent.tree_hooks import tree_hooks_for
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.errors import PiCompactError
from pi_compact.paths import new_session_file, new_session_id
from pi_compact.session.pins import budget_warning, fold_pins, last_user_text, pin_budget, pin_fields, unpin_fields
from pi_compact.session.store import SessionStore
from pi_compact.session.tree import abandoned_entries, fork_points, name_fields, session_name, tree_nodes
from pi_compact.ui.status import model_ready
from pi_compact.ui.tree_view import fork_table, pins_table, tree_end_renderable, tree_table, uncompact_block

if TYPE_CHECKING:
    from pi_compact.ui.slash import Command, Outcome, ReplState

SUMMARY_FLAGS = ("--summary", "-s")
NO_SUMMARY_FLAGS = ("--no-summary", "-n")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _tokens(state: ReplState) -> Callable[[str], int]:
    name = state.session.settings.compaction.token_estimator
    return lambda text: estimate_text_tokens(text, name)


def _window(state: ReplState) -> int | None:
    """The model's window, or None when the model cannot be used (or is not loaded yet)."""
    try:
        return state.session.model.info.context_window
    except PiCompactError:
        return None


def _number(arg: str, count: int, what: str, state: ReplState) -> int | None:
    """The 1-based number in ``arg`` as a 0-based index, or None after saying why it is not one."""
    try:
        number = int(arg)
    except ValueError:
        number = 0
    if not 1 <= number <= count:
        state.say(f"{what} takes a number from 1 to {count}, got {arg!r}." if count else
                  f"There is nothing to pick for {what} yet.", "yellow")
        return None
    return number - 1


# ---- /uncompact ------------------------------------------------------------------------------------


def _uncompact(state: ReplState, arg: str) -> Outcome:
    if arg not in ("", "--force"):
        state.say("Usage: /uncompact or /uncompact --force.", "yellow")
        return "continue"
    session = state.session
    force = arg == "--force"
    window = state.run(lambda token: _window(state))  # may wait for the model to load; Esc cancels
    if window is None and not force:
        state.say("The window is unknown (no usable model), so the restored context cannot be checked; "
                  "/uncompact --force restores it unchecked.", "yellow")
        return "continue"
    try:
        navigator = Navigator(session.store, None, session.fitted_settings())
        outcome = navigator.uncompact(force=force, context_window=window)
    except PiCompactError as exc:
        state.say(str(exc).replace("Use --force", "Use /uncompact --force"), "red")
        return "continue"
    session.reload_context()
    state.console.print(uncompact_block(outcome))
    state.print_status()
    return "continue"


# ---- pins ------------------------------------------------------------------------------------------


def _budget(state: ReplState) -> int | None:
    """The pin budget in tokens (None while the window it depends on is unknown)."""
    setting = state.session.settings.compaction.pin_budget
    if setting is not None:
        return setting
    window = _window(state) if model_ready(state.session.model) else None
    return pin_budget(None, window) if window else None


def _pin(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    source = None
    text = arg
    if not text:
        last = last_user_text(store.branch())
        if last is None:
            state.say("No message of yours to pin yet; /pin TEXT pins a note.", "yellow")
            return "continue"
        source, text = last
    try:
        store.append(pin_fields(text, source), _now_ms())
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    pins = fold_pins(store.branch())
    tokens = _tokens(state)
    state.say(f"Pinned as pin {len(pins)} (~{tokens(text):,} tokens): it is sent to the model with every "
              "request, whatever compaction summarizes.", "green")
    budget = _budget(state)
    warning = budget_warning(pins, budget, tokens) if budget is not None else None
    if warning is not None:
        state.say(warning, "yellow")
    return "continue"


def _pins(state: ReplState, arg: str) -> Outcome:
    tokens = _tokens(state)
    budget = _budget(state)
    state.console.print(pins_table(fold_pins(state.session.store.branch()), tokens, budget or 0))
    return "continue"


def _unpin(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    pins = fold_pins(store.branch())
    index = _number(arg, len(pins), "/unpin", state)
    if index is None:
        return "continue"
    try:
        store.append(unpin_fields(pins[index]), _now_ms())
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.say(f"Unpinned pin {index + 1}; {len(pins) - 1} left.", "green")
    return "continue"


# ---- the tree --------------------------------------------------------------------------------------


def _ask_summary(state: ReplState, count: int) -> tuple[bool, str | None] | None:
    """pi's "Summarize branch?" question: (summarize, focus), or None to stay where we are."""
    if not sys.stdin.isatty():
        state.say("Not summarized (add --summary [focus] to summarize the branch you leave).", "dim")
        return (False, None)
    from prompt_toolkit import prompt

    try:
        answer = prompt(f"Summarize the branch you leave ({count} entries)? [N]o / [y]es / [f]ocus: ").strip().lower()
        if answer in ("f", "focus"):
            focus = prompt("Focus for the summary: ").strip()
            return (True, focus or None)
    except (KeyboardInterrupt, EOFError):
        return None
    if answer in ("", "n", "no"):
        return (False, None)
    if answer in ("y", "yes"):
        return (True, None)
    return None


def _tree(state: ReplState, arg: str) -> Outcome:
    session = state.session
    store = session.store
    nodes = tree_nodes(store.entries, store.leaf_id)
    if not arg:
        state.console.print(tree_table(nodes))
        return "continue"
    number, _, rest = arg.partition(" ")
    index = _number(number, len(nodes), "/tree", state)
    if index is None:
        return "continue"
    target = nodes[index].entry_id
    if target == store.leaf_id:
        state.say("You are already there.", "dim")
        return "continue"
    flag, _, focus = rest.strip().partition(" ")
    leaving = len(abandoned_entries(store.by_id, store.leaf_id, target))
    if flag in SUMMARY_FLAGS:
        choice: tuple[bool, str | None] | None = (True, focus.strip() or None)
    elif flag in NO_SUMMARY_FLAGS or not leaving:
        choice = (False, None)
    elif flag:
        state.say("Usage: /tree N [--summary [focus] | --no-summary].", "yellow")
        return "continue"
    else:
        choice = _ask_summary(state, leaving)
    if choice is None:
        state.say("Nothing changed.", "yellow")
        return "continue"
    summarize, instructions = choice

    def show(event: TreeEvent) -> None:
        if isinstance(event, TreeStart) and event.summarize:
            state.renderer.working("Summarizing the branch you leave…")
        elif isinstance(event, TreeEnd):
            state.renderer.close()
            state.console.print(tree_end_renderable(event))

    navigator = Navigator(store, session.model if summarize else None, session.fitted_settings(), show,
                          tree_hooks_for(session.hooks))
    try:
        outcome = state.run(lambda token: navigator.navigate(target, summarize=summarize, instructions=instructions,
                                                             cancel=token))
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    if outcome is not None:
        session.reload_context()
        state.print_status()
    return "continue"


def _switch(state: ReplState, clone: SessionStore, what: str) -> None:
    """Continue in the new session file ``clone`` (as ``/new`` does, keeping the model)."""
    from pi_compact.app import build_runtime  # with issue 14 this is the UI's runtime factory

    path = clone.path
    clone.close()  # the runtime opens it again and holds its lock
    old = state.session
    old.store.close()
    options = replace(state.options, session=path, continue_recent=False, no_session=False)
    state.runtime = build_runtime(options, old.settings, state.renderer, model=old.model)
    if state.session.auto_compact != old.auto_compact:
        state.session.set_auto_compaction(old.auto_compact)
    written = "" if path is not None and path.exists() else " (written with the first answer)"
    state.say(f"{what}: now in {path}{written}; the previous file is unchanged.", "green")


def _new_file(state: ReplState) -> tuple[Path, str] | None:
    store = state.session.store
    if store.path is None:
        state.say("This session has no file (--no-session), so it cannot be copied to a new one.", "yellow")
        return None
    now = datetime.now(timezone.utc)
    session_id = new_session_id(now)
    return new_session_file(state.options.cwd, now, session_id=session_id, directory=store.path.parent), session_id


def _fork(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    points = fork_points(store.entries)
    if not arg:
        state.console.print(fork_table(points))
        return "continue"
    index = _number(arg, len(points), "/fork", state)
    target = store.by_id.get(points[index][0]) if index is not None else None
    made = _new_file(state) if target is not None else None
    if target is None or made is None:
        return "continue"
    parent = target.get("parentId")
    try:
        clone = store.clone_branch(made[0], parent if isinstance(parent, str) else None, _now_ms(), made[1])
        _switch(state, clone, "Forked")
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.say("The message you forked from, to send again or change:", "dim")
    state.say(points[index][1] if index is not None else "")
    return "continue"


def _clone(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    if store.leaf_id is None:
        state.say("Nothing to clone yet.", "yellow")
        return "continue"
    made = _new_file(state)
    if made is None:
        return "continue"
    try:
        _switch(state, store.clone_branch(made[0], store.leaf_id, _now_ms(), made[1]), "Cloned")
    except PiCompactError as exc:
        state.say(str(exc), "red")
    return "continue"


def _name(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    if not arg:
        current = session_name(store.entries)
        state.say(f"Session name: {current}" if current else "Usage: /name NAME (the session has no name yet).",
                  "dim" if current else "yellow")
        return "continue"
    try:
        store.append(name_fields(arg), _now_ms())
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.say(f"Session named {session_name(store.entries)!r}.", "green")
    return "continue"


COMMAND_NAMES = ("/uncompact", "/pin", "/pins", "/unpin", "/tree", "/fork", "/clone", "/name")


def history_commands() -> list[Command]:
    """The commands of this module, for the slash table (the seam's class, imported when the table is built)."""
    from pi_compact.ui.slash import Command

    return [
        Command("/uncompact", "[--force]", "undo the latest compaction (the context before it comes back)", _uncompact),
        Command("/pin", "[text]", "pin a note (or your last message) that every request carries verbatim", _pin),
        Command("/pins", "", "the pinned notes, numbered, with their sizes", _pins),
        Command("/unpin", "N", "remove pin N", _unpin),
        Command("/tree", "[N [--summary [focus] | --no-summary]]", "the session's branches; move to node N", _tree),
        Command("/fork", "[N]", "start a new session file from user message N", _fork),
        Command("/clone", "", "copy the current branch into a new session file", _clone),
        Command("/name", "[name]", "name the session (or show its name)", _name),
    ]


__all__ = ["COMMAND_NAMES", "history_commands"]

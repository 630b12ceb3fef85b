"""``/tree``, ``/fork``, ``/clone``, ``/name``: pi's session tree, its branches and new files from it.

A move writes one entry (a position entry or a branch summary) through ``AgentSession.navigate``; ``/name`` one
name entry; ``/fork`` and ``/clone`` start a new session file and continue there (the runtime factory
opens it, as ``/new`` does). A refusal or a cancel writes nothing. A branch summary may call the model,
so it runs through ``state.run``: Esc and Ctrl-C cancel it.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

from pi_compact.clock import now_ms
from pi_compact.errors import PiCompactError
from pi_compact.paths import new_session_file, new_session_id
from pi_compact.session.store import SessionStore
from pi_compact.session.tree import abandoned_entries, fork_points, session_name, tree_nodes
from pi_compact.ui.commands.history import pick_number
from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.tree_view import fork_table, tree_table

SUMMARY_FLAGS = ("--summary", "-s")
NO_SUMMARY_FLAGS = ("--no-summary", "-n")


def _ask_summary(state: ReplState, count: int) -> tuple[bool, str | None] | None:
    """pi's "Summarize branch?" question: (summarize, focus), or None to stay where we are."""
    if not sys.stdin.isatty():
        state.say("Not summarized (add --summary [focus] to summarize the branch you leave).", "dim")
        return (False, None)
    from prompt_toolkit import prompt

    try:
        answer = prompt(f"Summarize the branch you leave ({count} {'entry' if count == 1 else 'entries'})? "
                        "[N]o / [y]es / [f]ocus: ").strip().lower()
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


def tree(state: ReplState, arg: str) -> Outcome:
    session = state.session
    store = session.store
    nodes = tree_nodes(store.entries, store.leaf_id)
    if not arg:
        state.console.print(tree_table(nodes))
        return "continue"
    number, _, rest = arg.partition(" ")
    index = pick_number(number, len(nodes), "/tree", state)
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
    try:
        outcome = state.run(lambda token: session.navigate(target, summarize=summarize, instructions=instructions,
                                                           cancel=token))
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    if outcome is not None:
        state.print_status()
    return "continue"


def _switch(state: ReplState, clone: SessionStore, what: str) -> None:
    """Continue in the new session file ``clone`` (as ``/new`` does, keeping the model)."""
    path = clone.path
    old = state.session
    old.close()
    if path is not None and path.exists():
        clone.close()  # the runtime opens it again and holds its lock
        state.session = state.runtimes.build(old.settings, state.renderer, model=old.model, path=path)
    else:
        # Not written before its first answer (as pi): opening the path would start another session,
        # without the header's parentSession and id or the copied entries. The store itself goes on.
        state.session = state.runtimes.build(old.settings, state.renderer, model=old.model, store=clone)
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


def fork(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    points = fork_points(store.entries)
    if not arg:
        state.console.print(fork_table(points))
        return "continue"
    index = pick_number(arg, len(points), "/fork", state)
    target = store.by_id.get(points[index][0]) if index is not None else None
    made = _new_file(state) if target is not None else None
    if target is None or made is None:
        return "continue"
    parent = target.get("parentId")
    try:
        clone = store.clone_branch(made[0], parent if isinstance(parent, str) else None, now_ms(), made[1])
        _switch(state, clone, "Forked")
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.say("The message you forked from, to send again or change:", "dim")
    state.say(points[index][1] if index is not None else "")
    return "continue"


def clone(state: ReplState, arg: str) -> Outcome:
    store = state.session.store
    if store.leaf_id is None:
        state.say("Nothing to clone yet.", "yellow")
        return "continue"
    made = _new_file(state)
    if made is None:
        return "continue"
    try:
        _switch(state, store.clone_branch(made[0], store.leaf_id, now_ms(), made[1]), "Cloned")
    except PiCompactError as exc:
        state.say(str(exc), "red")
    return "continue"


def name(state: ReplState, arg: str) -> Outcome:
    if not arg:
        current = session_name(state.session.store.entries)
        state.say(f"Session name: {current}" if current else "Usage: /name NAME (the session has no name yet).",
                  "dim" if current else "yellow")
        return "continue"
    try:
        named = state.session.rename(arg)
    except PiCompactError as exc:
        state.say(str(exc), "red")
        return "continue"
    state.say(f"Session named {named!r}.", "green")
    return "continue"

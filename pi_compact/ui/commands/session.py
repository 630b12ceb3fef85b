"""``/session`` and ``/new``: the session file and its size, and starting a fresh one."""

from __future__ import annotations

from dataclasses import replace

from pi_compact.app import build_runtime
from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.status import session_table


def session(state: ReplState, arg: str) -> Outcome:
    state.console.print(session_table(state.runtime.store, state.session.compactions))
    return "continue"


def new(state: ReplState, arg: str) -> Outcome:
    old = state.session
    old.store.close()  # let other programs write the old file again
    options = replace(state.options, session=None, continue_recent=False)
    state.runtime = build_runtime(options, old.settings, state.renderer, model=old.model)
    if state.session.auto_compact != old.auto_compact:
        state.session.set_auto_compaction(old.auto_compact)
    path = state.runtime.store.path
    state.say(f"New session: {path if path is not None else 'in memory'}", "green")
    return "continue"

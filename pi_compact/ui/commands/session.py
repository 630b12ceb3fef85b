"""``/session`` and ``/new``: the session file and its size, and starting a fresh one."""

from __future__ import annotations

from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.status import session_table


def session(state: ReplState, arg: str) -> Outcome:
    state.console.print(session_table(state.session.store, state.session.compactions))
    return "continue"


def new(state: ReplState, arg: str) -> Outcome:
    old = state.session
    old.close()  # let other programs write the old file again
    state.session = state.runtimes.build(old.settings, state.renderer, model=old.model, fresh=True)
    state.session.approval = old.approval  # the approval mode and its "always" answers stay
    if state.session.auto_compact != old.auto_compact:
        state.session.set_auto_compaction(old.auto_compact)
    path = state.session.store.path
    state.say(f"New session: {path if path is not None else 'in memory'}", "green")
    return "continue"

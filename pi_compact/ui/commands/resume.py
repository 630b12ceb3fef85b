"""``/resume``: pick another session of this project and continue it here.

The current session is closed only once the chosen one is open, so a session that cannot be opened
(held by another pi-compact, not a session file) leaves everything as it was, with one line saying why.
"""

from __future__ import annotations

from pathlib import Path

from pi_compact.errors import Cancelled, PiCompactError
from pi_compact.paths import resolve_session_dir
from pi_compact.session.catalog import list_sessions
from pi_compact.ui.session_picker import pick_session
from pi_compact.ui.state import Outcome, ReplState
from pi_compact.ui.transcript import show_recent


def sessions_dir(state: ReplState) -> Path:
    """This project's session directory (``--session-dir``, the environment, ``sessionDir``, pi's default)."""
    return resolve_session_dir(state.options.cwd, flag=state.options.session_dir,
                               setting=state.loaded.settings.session_dir)


def resume(state: ReplState, arg: str) -> Outcome:
    directory = sessions_dir(state)
    sessions = list_sessions(directory)
    if not sessions:
        state.say(f"No sessions in {directory} yet.", "yellow")
        return "continue"
    chosen = pick_session(sessions, text=arg)  # `/resume lexer` starts with that filter
    if chosen is None:
        state.say("Nothing opened.", "dim")
        return "continue"
    open_session(state, chosen)
    return "continue"


def open_session(state: ReplState, path: Path) -> None:
    """Switch the REPL to the session file ``path`` and show its recent conversation."""
    old = state.session
    if old.store.path is not None and old.store.path.resolve() == path.resolve():
        state.say("That session is already open.", "dim")
        return
    old.close()  # release its lock first: the next step may fail and then reopen it
    try:
        state.session = state.runtimes.build(old.settings, state.renderer, model=old.model, path=path)
    except PiCompactError as exc:
        state.session = state.runtimes.build(old.settings, state.renderer, model=old.model,
                                             path=old.store.path) if old.store.path else old
        state.say(str(exc), "red")
        return
    state.session.approval = old.approval
    state.say(f"Resumed {path}: {len(state.session.messages)} messages in context.", "cyan", path=True)
    show_recent(state)


def pick_at_start(directory: Path) -> Path | None:
    """``-r``: choose a session before the terminal starts (None: there is none, so a new one starts).

    Raises ``Cancelled`` when the user leaves the picker (Esc, Ctrl-C): they chose no session, and a new
    one is not what they asked for either."""
    from prompt_toolkit import print_formatted_text

    sessions = list_sessions(directory)
    if not sessions:
        print_formatted_text(f"No sessions to resume in {directory}; starting a new one.")
        return None
    picked = pick_session(sessions)
    if picked is None:
        raise Cancelled("No session chosen; nothing was opened.")
    return picked


__all__ = ["open_session", "pick_at_start", "resume", "sessions_dir"]

"""``/expand``, ``/copy`` and ``/export``: get at output that the terminal shows only in part.

- ``/expand`` (also Ctrl-O at the prompt) prints the last collapsed tool output in full.
- ``/copy`` puts the last answer of the model on the clipboard with OSC 52, the escape sequence
  terminals (and tmux with ``set-clipboard on``, and ssh sessions, since it travels in the output)
  understand, so it works where no local clipboard tool can be reached.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.messages import text_of
from pi_compact.ui.state import Outcome, ReplState


def osc52(text: str) -> str:
    """The escape sequence that sets the system clipboard to ``text``."""
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\x07"


def last_answer(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The text of the newest assistant message that has some (None when there is none)."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            text = text_of(message.get("content")).strip()
            if text:
                return text
    return None


def expand(state: ReplState, arg: str) -> Outcome:
    if not state.renderer.expand_last():
        state.say("No collapsed tool output to expand yet.", "dim")
    return "continue"


def copy(state: ReplState, arg: str) -> Outcome:
    text = last_answer(state.session.messages)
    if text is None:
        state.say("No answer to copy yet.", "yellow")
        return "continue"
    state.console.file.write(osc52(text))
    state.console.file.flush()
    lines = text.count("\n") + 1
    state.say(f"Copied the last answer ({lines} line{'' if lines == 1 else 's'}, {len(text)} characters) "
              "to the clipboard (OSC 52).", "dim")
    return "continue"




def export(state: ReplState, arg: str) -> Outcome:
    """``/export [file]``: write the session as an HTML page (default: next to the cwd, named after it)."""
    from pathlib import Path

    from pi_compact.ui.export_html import session_html

    source = state.session.store.path
    name = source.stem if source is not None else "session"
    target = Path(arg).expanduser() if arg else state.options.cwd / f"{name}.html"
    target = target if target.is_absolute() else state.options.cwd / target
    try:
        target.write_text(session_html(state.session.store.branch(), f"pi-compact session {name}"), encoding="utf-8")
    except OSError as exc:
        state.say(f"Could not write {target}: {exc.strerror or exc}; pass another path to /export.", "red")
        return "continue"
    state.say(f"Exported the session to {target}", "green")
    return "continue"


__all__ = ["copy", "expand", "export", "last_answer", "osc52"]

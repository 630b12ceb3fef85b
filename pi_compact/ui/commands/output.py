"""``/expand``, ``/copy`` and ``/export``: get at output that the terminal shows only in part.

- ``/expand`` (also Ctrl-O at the prompt) prints the last collapsed tool output in full.
- ``/copy`` puts the last answer of the model on the clipboard with OSC 52, the escape sequence
  terminals (and tmux with ``set-clipboard on``, and ssh sessions, since it travels in the output)
  understand, so it works where no local clipboard tool can be reached.
- ``/export [file]`` writes the branch as HTML, mode 0600 (it holds the whole transcript): by default
  next to the session files (not into the working tree), and never over an existing file without a
  yes on the terminal.
"""

from __future__ import annotations

import base64
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pi_compact.messages import text_of
from pi_compact.paths import ensure_private_dir, resolve_session_dir
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
    # Inside tmux the sequence reaches the clipboard only with tmux's set-clipboard on: say so where it matters.
    where = " (in tmux only with `set -g set-clipboard on`)" if os.environ.get("TMUX") else ""
    state.say(f"Copied the last answer ({lines} line{'' if lines == 1 else 's'}, {len(text)} characters) "
              f"to the clipboard (OSC 52){where}.", "dim")
    return "continue"




def _export_target(state: ReplState, arg: str, name: str) -> Path:
    """The file ``/export`` writes: the path given (relative to the cwd), else ``<name>.html`` next to the
    session files, which are private, not in the working tree (it may be committed or shared)."""
    if arg:
        target = Path(arg).expanduser()
        return target if target.is_absolute() else state.options.cwd / target
    source = state.session.store.path
    folder = source.parent if source is not None else resolve_session_dir(
        state.options.cwd, flag=state.options.session_dir, setting=state.session.settings.session_dir)
    return folder / f"{name}.html"


def _may_overwrite(state: ReplState, target: Path) -> bool:
    """Whether to replace the existing ``target``: asked on a terminal, else no."""
    if not sys.stdin.isatty():
        state.say(f"{target} exists; not overwritten. Pass another path to /export.", "yellow")
        return False
    from prompt_toolkit import prompt

    try:
        answer = prompt(f"{target} exists. Overwrite it? [y/N] ").strip().lower()
    except (KeyboardInterrupt, EOFError):
        answer = ""
    if answer not in ("y", "yes"):
        state.say("Not exported; the file is unchanged.", "yellow")
        return False
    return True


def write_private(target: Path, text: str, *, replace: bool) -> None:
    """Write ``text`` to ``target`` readable by the user only (0600); a new file is created exclusively
    (an existing file or symlink raises ``FileExistsError``) unless ``replace``."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if replace else os.O_EXCL)
    fd = os.open(target, flags, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an existing file keeps its mode through O_TRUNC otherwise
        handle.write(text)


def export(state: ReplState, arg: str) -> Outcome:
    """``/export [file]``: write the session as an HTML page, 0600, never over a file without asking."""
    from pi_compact.ui.export_html import session_html

    source = state.session.store.path
    name = source.stem if source is not None else "session"
    target = _export_target(state, arg, name)
    try:
        if not arg:
            ensure_private_dir(target.parent)
        replace = target.exists() or target.is_symlink()
        if replace and not _may_overwrite(state, target):
            return "continue"
        write_private(target, session_html(state.session.store.branch(), f"pi-compact session {name}"),
                      replace=replace)
    except OSError as exc:
        state.say(f"Could not write {target}: {exc.strerror or exc}; pass another path to /export.", "red")
        return "continue"
    state.say(f"Exported the session to {target}", "green")
    return "continue"


__all__ = ["copy", "expand", "export", "last_answer", "osc52"]

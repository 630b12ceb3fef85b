"""The terminal's side of the approval mode: show what a call would do and ask yes / no / always.

Contract:
- ``KeyTap`` sits between the keyboard watcher of a running turn (``TurnKeys``) and a question: while
  a question waits, the keys go to it instead of the type-ahead; otherwise nothing changes.
- ``TerminalAsk`` is the ``Ask`` of ``agent.approval.ApprovalGate``: it runs on the turn's worker thread,
  ends the spinner, prints the diff (``edit``/``write``) or the command (``bash``) and the question, and
  waits for ``y``, ``n`` or ``a`` (always for this session). Esc or Ctrl-C cancel the turn, which counts
  as "no"; nothing is run.
"""

from __future__ import annotations

import difflib
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from pi_compact.agent.approval import ApprovalGate, Decision
from pi_compact.cancel import CancelToken
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.tool_view import diff_view, read_before_write, write_diff

if TYPE_CHECKING:
    from pi_compact.agent.session import AgentSession

QUESTION = "y yes · n no · a always for this session · Esc cancel the turn"
_ANSWERS: dict[str, Decision] = {"y": "yes", "n": "no", "a": "always"}


class KeyTap:
    """Keys for a waiting question (thread-safe: fed by the key watcher, read by the worker)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = False
        self._keys: queue.Queue[str] = queue.Queue()

    def __call__(self, data: bytes) -> bool:
        """Offer typed bytes; True when a question took them."""
        with self._lock:
            if not self._open:
                return False
            self._keys.put(data.decode("utf-8", errors="ignore"))
            return True

    def opened(self, is_open: bool) -> None:
        with self._lock:
            self._open = is_open
            while not self._keys.empty():
                self._keys.get_nowait()

    def next_key(self, timeout: float) -> str | None:
        try:
            return self._keys.get(timeout=timeout)
        except queue.Empty:
            return None


def preview(tool_name: str, args: Mapping[str, Any], cwd: Path) -> Text:
    """What the call would do: a diff for ``edit``/``write``, the command for ``bash``."""
    path = str(args.get("path", ""))
    if tool_name == "edit":
        old, new = str(args.get("oldText", "")), str(args.get("newText", ""))
        diff = "".join(f"{line.rstrip(chr(10))}\n" for line in difflib.unified_diff(
            old.splitlines(), new.splitlines(), fromfile=f"a/{path}", tofile=f"b/{path}", lineterm=""))
        return diff_view(diff, f"edit {path}", limit=40)
    if tool_name == "write":
        content = str(args.get("content", ""))
        return diff_view(write_diff(path, read_before_write(args, cwd), content), f"write {path}", limit=40)
    command = Text("  $ ", style="dim")
    command.append(str(args.get("command", "")), style="bold")
    return command


class TerminalAsk:
    """Asks on the terminal; ``read_key(timeout)`` gives the next key typed (None when none came yet)."""

    def __init__(
        self, console: Console, renderer: TerminalRenderer, cwd: Path, tap: KeyTap,
        read_key: Callable[[float], str | None] | None = None,
    ) -> None:
        self._console = console
        self._renderer = renderer
        self._cwd = cwd
        self._tap = tap
        self._read_key = read_key or tap.next_key

    def __call__(self, tool_name: str, args: Mapping[str, Any], cancel: CancelToken | None) -> Decision:
        self._renderer.close()
        self._console.print(preview(tool_name, args, self._cwd))
        self._console.print(Text(f"Allow this {tool_name}? {QUESTION}", style="bold yellow"))
        self._tap.opened(True)
        try:
            decision = self._wait(cancel)
        finally:
            self._tap.opened(False)
        said = {"yes": "Allowed.", "always": f"Allowed; {tool_name} will not be asked about again in this "
                "session.", "no": "Declined; the model is told the call was not run."}[decision]
        self._console.print(Text(said, style="green" if decision != "no" else "yellow"))
        return decision

    def _wait(self, cancel: CancelToken | None) -> Decision:
        while cancel is None or not cancel.cancelled:
            key = self._read_key(0.1)
            if key is not None and key.strip().lower()[:1] in _ANSWERS:
                return _ANSWERS[key.strip().lower()[:1]]
        return "no"


def install(session: AgentSession, mode: str, console: Console, renderer: TerminalRenderer, cwd: Path) -> KeyTap | None:
    """Give ``session`` the approval gate of ``mode`` asking on this terminal; the tap for the turn's keys."""
    if mode == "none":
        return None
    tap = KeyTap()
    session.approval = ApprovalGate(mode, TerminalAsk(console, renderer, cwd, tap))
    return tap


__all__ = ["QUESTION", "KeyTap", "TerminalAsk", "install", "preview"]

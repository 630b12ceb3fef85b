"""The terminal's side of the approval mode: show what a call would do and ask yes / no / always.

Contract:
- ``KeyTap`` sits between the keyboard watcher of a running turn (``TurnKeys``) and a question: while
  a question waits it takes a key only when the key is deliberate — a single key pressed after the
  keyboard was still for ``QUIET_S`` (counted from the question's appearance too). Keys typed before the
  question was on screen, or in the same burst of typing, and pastes stay the turn's type-ahead
  (the next prompt's text): they never answer.
- ``TerminalAsk`` is the ``Ask`` of ``agent.approval.ApprovalGate``: it runs on the turn's worker thread,
  ends the spinner, prints what the call would do (``ui.approval_preview``) and the question, and waits
  for ``y`` or ``n``; ``a`` (always, for this tool, for the rest of the session) must be confirmed by a
  second ``a``, since ordinary words start with it; ``v``, ``e`` or Ctrl-O print everything in full
  first. Esc or Ctrl-C cancel the turn, which counts as "no"; nothing is run.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from pi_compact.agent.approval import ApprovalGate, Decision
from pi_compact.cancel import CancelToken
from pi_compact.ui.approval_preview import PREVIEW_LINES, preview, target
from pi_compact.ui.renderer import TerminalRenderer

if TYPE_CHECKING:
    from pi_compact.agent.session import AgentSession

QUESTION = "y yes · n no · a always for this session · v view all · Esc cancel the turn"
_ANSWERS: dict[str, Decision] = {"y": "yes", "n": "no"}
ALWAYS_KEY = "a"
_VIEW_KEYS = ("v", "e", "\x0f")  # v, e or Ctrl-O: print the whole diff or content, then ask again
# A person reads a question before answering it; keys closer than this to the one before (or to the
# question's appearance) are someone still typing what they meant for the prompt.
QUIET_S = 0.4


class KeyTap:
    """Keys for a waiting question (thread-safe: fed by the key watcher, read by the worker).
    ``clock`` is injectable for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, quiet_s: float = QUIET_S) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._quiet_s = quiet_s
        self._open = False
        self._last = float("-inf")  # when the last key came, or the question's text was last shown
        self._keys: queue.Queue[str] = queue.Queue()

    def __call__(self, data: bytes) -> bool:
        """Offer typed bytes (every read of the keyboard, question or not); True when a question took them."""
        now = self._clock()
        with self._lock:
            deliberate = now - self._last >= self._quiet_s
            self._last = now
            key = data.decode("utf-8", errors="ignore")
            if not (self._open and deliberate and len(key) == 1):
                return False  # typing, a paste or no question: type-ahead
            self._keys.put(key)
            return True

    def opened(self, is_open: bool) -> None:
        """A question waits (its text just shown: keys count from now on) or no longer does."""
        with self._lock:
            self._open = is_open
            self._reset()

    def shown(self) -> None:
        """The question's text was shown again (after ``v``, or as a confirmation): keys count from now."""
        with self._lock:
            self._reset()

    def _reset(self) -> None:
        self._last = max(self._last, self._clock())
        while not self._keys.empty():
            self._keys.get_nowait()

    def next_key(self, timeout: float) -> str | None:
        try:
            return self._keys.get(timeout=timeout)
        except queue.Empty:
            return None


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
            decision = self._wait(tool_name, cancel, lambda: self._console.print(preview(tool_name, args, self._cwd,
                                                                                          None)))
        finally:
            self._tap.opened(False)
        said = {"yes": "Allowed.", "always": f"Allowed; {tool_name} will not be asked about again in this "
                "session.", "no": "Declined; the model is told the call was not run."}[decision]
        self._console.print(Text(said, style="green" if decision != "no" else "yellow"))
        return decision

    def _ask_again(self, text: str) -> None:
        self._console.print(Text(text, style="bold yellow"))
        self._tap.shown()

    def _wait(self, tool_name: str, cancel: CancelToken | None, show_all: Callable[[], None]) -> Decision:
        confirming = False
        while cancel is None or not cancel.cancelled:
            key = self._read_key(0.1)
            choice = key.lower() if key is not None and len(key) == 1 else ""
            if not choice:
                continue
            if confirming:  # only a second, deliberate "a" makes it "always"; any other key goes back
                if choice == ALWAYS_KEY:
                    return "always"
                confirming = False
                self._ask_again(f"Not always. Allow this {tool_name}? {QUESTION}")
            elif choice in _ANSWERS:
                return _ANSWERS[choice]
            elif choice == ALWAYS_KEY:
                confirming = True
                self._ask_again(f"Allow every {tool_name} call for the rest of this session without asking? "
                                f"Press {ALWAYS_KEY} again to confirm; any other key goes back to the question.")
            elif choice in _VIEW_KEYS:
                show_all()
                self._ask_again(f"Allow this {tool_name}? {QUESTION}")
        return "no"


def install(session: AgentSession, mode: str, console: Console, renderer: TerminalRenderer, cwd: Path) -> KeyTap | None:
    """Give ``session`` the approval gate of ``mode`` asking on this terminal; the tap for the turn's keys."""
    if mode == "none":
        return None
    tap = KeyTap()
    session.approval = ApprovalGate(mode, TerminalAsk(console, renderer, cwd, tap))
    return tap


__all__ = ["ALWAYS_KEY", "PREVIEW_LINES", "QUESTION", "QUIET_S", "KeyTap", "TerminalAsk", "install", "preview",
           "target"]

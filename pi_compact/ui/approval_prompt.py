"""The terminal's side of the approval mode: show what a call would do and ask yes / no / always.

Contract:
- ``KeyTap`` sits between the keyboard watcher of a running turn (``TurnKeys``) and a question: while
  a question waits, the keys go to it instead of the type-ahead; otherwise nothing changes.
- ``TerminalAsk`` is the ``Ask`` of ``agent.approval.ApprovalGate``: it runs on the turn's worker thread,
  ends the spinner, prints the diff (``edit``/``write``) or the command (``bash``) and the question, and
  waits for ``y``, ``n`` or ``a`` (always for this session); ``v``, ``e`` or Ctrl-O print the whole diff
  or content first. Esc or Ctrl-C cancel the turn, which counts as "no"; nothing is run.
- Everything shown is stripped of control and bidi characters, and a ``write``/``edit`` names the file it
  really writes: resolved as the tool resolves it, a symlink's target named.
"""

from __future__ import annotations

import difflib
import os
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.text import Text

from pi_compact.agent.approval import ApprovalGate, Decision
from pi_compact.agent.tools.base import resolve_path
from pi_compact.cancel import CancelToken
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.renderer_text import clean
from pi_compact.ui.tool_view import diff_view, read_before_write, write_diff

if TYPE_CHECKING:
    from pi_compact.agent.session import AgentSession

QUESTION = "y yes · n no · a always for this session · v view all · Esc cancel the turn"
_ANSWERS: dict[str, Decision] = {"y": "yes", "n": "no", "a": "always"}
_VIEW_KEYS = ("v", "e", "\x0f")  # v, e or Ctrl-O: print the whole diff or content, then ask again
PREVIEW_LINES = 40


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


def target(raw: str, cwd: Path) -> str:
    """The file a ``write``/``edit`` of ``raw`` changes, resolved as the tool resolves it (``@``, ``~``,
    NFC/NFD names), with the file a symlink (of it or of a folder above it) really leads to."""
    path = resolve_path(raw, cwd)
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        real = path
    if path.is_symlink():
        return f"{path} (a symlink to {real})"
    return str(path) if real == path else f"{path} (really {real})"


def preview(tool_name: str, args: Mapping[str, Any], cwd: Path, limit: int | None = PREVIEW_LINES) -> Group:
    """What the call would do: a diff for ``edit``/``write`` and the file it writes (a line of its own
    that wraps, so a long path is never cut), the command for ``bash``; control and bidi characters
    removed from all of it (``clean``)."""
    path = str(args.get("path", ""))
    if tool_name in ("edit", "write"):
        writes = Text("  writes ", style="dim")
        writes.append(clean(target(path, cwd)) if path else "(no path given)", style="bold")
        if tool_name == "edit":
            old, new = str(args.get("oldText", "")), str(args.get("newText", ""))
            if old == new:  # an empty diff would look like nothing to approve, or a broken preview
                note = Text(f"  edit {clean(path)}: no change (oldText and newText are the same)", style="yellow")
                return Group(note, writes)
            diff = edit_diff(path, old, new, cwd)
        else:
            diff = write_diff(path, read_before_write(args, cwd), str(args.get("content", "")))
        return Group(diff_view(diff, f"{tool_name} {clean(path)}", limit=limit), writes)
    command = Text("  $ ", style="dim")
    command.append(clean(str(args.get("command", ""))), style="bold")
    return Group(command)


def edit_diff(path: str, old: str, new: str, cwd: Path) -> str:
    """The edit as a diff of the file, so hunk headers give the file's line numbers; the snippets' own diff
    when the file cannot be read or ``old`` is not in it exactly once (the tool will then refuse the call)."""
    try:
        file = resolve_path(path, cwd)
        before = file.read_text(encoding="utf-8") if file.stat().st_size <= _MAX_DIFF_BYTES else ""
    except (OSError, UnicodeDecodeError, ValueError):
        before = ""
    if old and before.count(old) == 1:
        after = before.replace(old, new, 1)
        lines = difflib.unified_diff(before.splitlines(), after.splitlines(), fromfile=f"a/{path}",
                                     tofile=f"b/{path}", lineterm="")
    else:
        lines = difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=f"a/{path}", tofile=f"b/{path}",
                                     lineterm="")
    return "".join(f"{line.rstrip(chr(10))}\n" for line in lines)


_MAX_DIFF_BYTES = 2_000_000  # a bigger file is previewed by its snippets: reading it would stall the question


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
            decision = self._wait(cancel, lambda: self._console.print(preview(tool_name, args, self._cwd, None)))
        finally:
            self._tap.opened(False)
        said = {"yes": "Allowed.", "always": f"Allowed; {tool_name} will not be asked about again in this "
                "session.", "no": "Declined; the model is told the call was not run."}[decision]
        self._console.print(Text(said, style="green" if decision != "no" else "yellow"))
        return decision

    def _wait(self, cancel: CancelToken | None, show_all: Callable[[], None]) -> Decision:
        while cancel is None or not cancel.cancelled:
            key = self._read_key(0.1)
            choice = key.strip(" \r\n").lower()[:1] if key is not None else ""
            if choice in _ANSWERS:
                return _ANSWERS[choice]
            if choice and choice in _VIEW_KEYS:
                show_all()
                self._console.print(Text(QUESTION, style="bold yellow"))
        return "no"


def install(session: AgentSession, mode: str, console: Console, renderer: TerminalRenderer, cwd: Path) -> KeyTap | None:
    """Give ``session`` the approval gate of ``mode`` asking on this terminal; the tap for the turn's keys."""
    if mode == "none":
        return None
    tap = KeyTap()
    session.approval = ApprovalGate(mode, TerminalAsk(console, renderer, cwd, tap))
    return tap


__all__ = ["QUESTION", "KeyTap", "TerminalAsk", "install", "preview", "target"]

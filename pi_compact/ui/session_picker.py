"""Choosing a session to resume (``-r``/``--resume`` and ``/resume``).

Contract: ``pick_session(sessions, ask, show, now_s)`` lists up to ``SHOWN`` sessions, newest first,
one line each (number, when, name or first message, size, compactions) and asks for a number; any
other text filters the list (case-insensitive, on the name, first message and file name); an empty
answer cancels. It returns the chosen path or None. ``ask``/``show`` are the terminal's prompt and
printer, so the picker itself does no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pi_compact.clock import now_ms
from pi_compact.session.catalog import SessionSummary

SHOWN = 20
QUESTION = "Open which session? number · text to filter · Enter to cancel: "


def when(modified_s: float, now_s: float) -> str:
    """How long ago, in the largest whole unit."""
    ago = max(0, int(now_s - modified_s))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if ago >= size:
            return f"{ago // size} {unit} ago"
    return "just now"


def size_text(size: int) -> str:
    return f"{size / 1_048_576:.1f} MB" if size >= 1_048_576 else f"{max(1, round(size / 1024))} KB"


def row(index: int, summary: SessionSummary, now_s: float, width: int = 60) -> str:
    title = summary.title if len(summary.title) <= width else summary.title[: width - 1] + "…"
    compacted = f" · compacted {summary.compactions}×" if summary.compactions else ""
    return f"{index:>3}. {when(summary.modified_s, now_s):>11}  {title}  ({size_text(summary.size)}{compacted})"


def matches(summary: SessionSummary, text: str) -> bool:
    needle = text.casefold()
    return any(needle in part.casefold() for part in (summary.name or "", summary.first_message, summary.path.name))


def pick_session(
    sessions: Sequence[SessionSummary], ask: Callable[[str], str], show: Callable[[str], None],
    now_s: float | None = None,
) -> Path | None:
    """The session the user chose (None when they cancelled or there is none)."""
    now = now_ms() / 1000 if now_s is None else now_s
    shown = list(sessions[:SHOWN])
    while True:
        if not shown:
            show("No session matches.")
            shown = list(sessions[:SHOWN])
        for index, summary in enumerate(shown, 1):
            show(row(index, summary, now))
        if len(sessions) > len(shown):
            show(f"     … type text to filter the other {len(sessions) - len(shown)}")
        answer = ask(QUESTION).strip()
        if not answer:
            return None
        if answer.isdigit() and 1 <= int(answer) <= len(shown):
            return shown[int(answer) - 1].path
        shown = [s for s in sessions if matches(s, answer)][:SHOWN]


__all__ = ["QUESTION", "SHOWN", "matches", "pick_session", "row", "when"]

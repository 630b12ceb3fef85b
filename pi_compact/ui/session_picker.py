"""Choosing a session to resume (``-r``/``--resume`` and ``/resume``).

Contract: ``pick_session(sessions)`` lists up to ``SHOWN`` sessions, newest first, one line each
(number, when, name or first message, size, compactions) above one input line, and returns the chosen
path or None. Every key typed filters the list at once (case-insensitive, on the name, first message
and file name); a number alone marks that row of the unfiltered list; Up and Down move the mark; Enter
opens the marked session; Esc, Ctrl-C or Ctrl-D cancel. ``Choice`` is the list's state, pure; the
prompt (prompt_toolkit, on the terminal unless ``input``/``output`` are given) only draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.output import Output

from pi_compact.clock import now_ms
from pi_compact.session.catalog import SessionSummary

SHOWN = 20
QUESTION = "Open which session? type to filter · number · ↑↓ · Enter open · Esc cancel: "


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


class Choice:
    """The rows shown for a filter text and which one is marked (None: none, e.g. no row matches)."""

    def __init__(self, sessions: Sequence[SessionSummary], now_s: float) -> None:
        self.sessions = list(sessions)
        self.now_s = now_s
        self._text = ""
        self._mark: int | None = 0 if sessions else None

    def shown(self, text: str) -> list[SessionSummary]:
        needle = text.strip()
        if not needle or needle.isdigit():  # a number picks from the list as it stands unfiltered
            return self.sessions[:SHOWN]
        return [s for s in self.sessions if matches(s, needle)][:SHOWN]

    def mark(self, text: str) -> int | None:
        if text != self._text:  # a new filter marks its first row, a number its row
            self._text, count = text, len(self.shown(text))
            number = int(text.strip()) if text.strip().isdigit() else 1
            self._mark = number - 1 if 1 <= number <= count else None
        return self._mark

    def move(self, text: str, step: int) -> None:
        count, mark = len(self.shown(text)), self.mark(text)
        if count:
            self._mark = min(count - 1, max(0, (mark if mark is not None else -step) + step))

    def chosen(self, text: str) -> Path | None:
        mark = self.mark(text)
        return self.shown(text)[mark].path if mark is not None else None

    def lines(self, text: str) -> FormattedText:
        shown, mark = self.shown(text), self.mark(text)
        fragments: list[tuple[str, str]] = []
        for index, summary in enumerate(shown):
            fragments.append(("reverse" if index == mark else "", row(index + 1, summary, self.now_s)))
            fragments.append(("", "\n"))
        if not shown:
            fragments.append(("ansiyellow", "No session matches.\n"))
        elif len(self.sessions) > len(shown) and not text.strip():
            more = len(self.sessions) - len(shown)
            fragments.append(("ansibrightblack", f"     … type text to filter the other {more}\n"))
        fragments.append(("bold", QUESTION))
        return FormattedText(fragments)


def pick_session(
    sessions: Sequence[SessionSummary], now_s: float | None = None, *, text: str = "", input: Input | None = None,
    output: Output | None = None,
) -> Path | None:
    """The session the user chose (None when they cancelled or there is none); ``text`` starts the filter."""
    if not sessions:
        return None
    choice = Choice(sessions, now_ms() / 1000 if now_s is None else now_s)
    picked: list[Path] = []
    keys = KeyBindings()

    @keys.add("up")
    @keys.add("down")
    def _move(event: KeyPressEvent) -> None:
        choice.move(event.current_buffer.text, -1 if event.key_sequence[0].key == "up" else 1)

    @keys.add("enter")
    def _open(event: KeyPressEvent) -> None:
        chosen = choice.chosen(event.current_buffer.text)
        if chosen is not None:  # Enter on a filter that matches nothing waits for more typing
            picked.append(chosen)
            event.app.exit(result="")

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    @keys.add("c-d")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result="")

    prompt: PromptSession[str] = PromptSession(input=input, output=output)
    prompt.prompt(lambda: choice.lines(prompt.default_buffer.text), key_bindings=keys, default=text)
    return picked[0] if picked else None


__all__ = ["QUESTION", "SHOWN", "Choice", "matches", "pick_session", "row", "when"]

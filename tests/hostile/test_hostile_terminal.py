"""Escape sequences in session text never reach the terminal through /summary, /tree or /pins (an OSC 52
sequence in a summary would set the user's clipboard)."""

from __future__ import annotations

from pathlib import Path

from builders import structured_summary
from ui_harness import FakeModel, chat, make_state

from pi_compact.ui.commands import dispatch

OSC52 = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
HIDDEN = ("\x1b", "\x07", "\u202e", "\x9b")


def _clean(text: str) -> bool:
    return not any(char in text for char in HIDDEN)


def test_summary_and_its_diff_strip_escapes(project: Path) -> None:
    hostile = structured_summary(f"ONE {OSC52}\u202e\x9b2J")
    model = FakeModel("a " * 300, "b " * 300, "c " * 300, "d " * 300, summary=hostile)
    state, buffer = make_state(project, model)
    chat(state, "one " * 100, "two " * 100)
    dispatch(state, "/compact")
    buffer.seek(0)
    buffer.truncate(0)
    dispatch(state, "/summary")
    assert "Ship the feature ONE" in buffer.getvalue() and _clean(buffer.getvalue())
    chat(state, "three " * 100, "four " * 100)
    model.summary = hostile.replace("- [ ] more", f"- [ ] the lexer {OSC52}")
    dispatch(state, "/compact")
    buffer.seek(0)
    buffer.truncate(0)
    dispatch(state, "/summary --diff")
    assert "the lexer" in buffer.getvalue() and _clean(buffer.getvalue())


def test_tree_and_pins_strip_escapes(project: Path) -> None:
    state, buffer = make_state(project, FakeModel("fine"))
    chat(state, f"look here {OSC52} now\u202e")
    dispatch(state, f"/pin remember {OSC52} this")
    buffer.seek(0)
    buffer.truncate(0)
    dispatch(state, "/tree")
    assert "look here" in buffer.getvalue() and _clean(buffer.getvalue())
    buffer.seek(0)
    buffer.truncate(0)
    dispatch(state, "/pins")
    assert "remember" in buffer.getvalue() and _clean(buffer.getvalue())

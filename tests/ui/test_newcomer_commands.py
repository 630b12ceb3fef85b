"""Small things a newcomer meets first: ``/help`` lists the input prefixes, ``/unpin`` with no pins."""

from __future__ import annotations

from pathlib import Path

from ui_harness import FakeModel, make_state

from pi_compact.ui.commands import dispatch


def test_help_lists_the_shell_and_file_prefixes(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/help")
    lines = [" ".join(line.split()) for line in buffer.getvalue().splitlines()]
    assert any(line.startswith("!cmd run a shell command") for line in lines), lines
    assert any(line.startswith("!!cmd run a shell command without adding it") for line in lines)
    assert any(line.startswith("@path attach that file's text") for line in lines)


def test_unpin_with_no_pins_says_there_are_none_and_how_to_pin(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/unpin")
    assert " ".join(buffer.getvalue().split()) == (
        "No pins on this branch: /pin pins your last message (or /pin TEXT), /pins lists them.")

"""Issue 35.3: after the loop guard stops automatic compaction, every place that shows the switch says "off",
and ``/settings`` shows the approval mode the ``--approve`` flag set."""

from __future__ import annotations

import io
from pathlib import Path

from ui_harness import FakeModel, chat, make_state

from pi_compact.settings.files import load_settings
from pi_compact.ui.commands import dispatch
from pi_compact.ui.state import ReplState

STOPPED = "stopped by the loop guard for this session; /autocompact on turns it back on"


def _stopped(project: Path) -> tuple[ReplState, io.StringIO]:
    # Every reply reports 7,000 tokens, past the 6,000 threshold: each compaction is refilled at once,
    # so the guard stops automatic compaction after two.
    state, buffer = make_state(project, FakeModel(input_tokens=7000))
    for i in range(6):
        chat(state, f"question {i} " * 30)
        if state.session.compaction_stopped:
            break
    assert state.session.compaction_stopped and state.session.auto_compact
    return state, buffer


def test_autocompact_says_off_and_why_after_the_guard_stopped_it(project: Path) -> None:
    state, buffer = _stopped(project)
    dispatch(state, "/autocompact")
    assert f"Auto-compaction is off ({STOPPED}). Usage: /autocompact on|off." in buffer.getvalue()


def test_settings_says_off_with_the_loop_guard_as_the_source(project: Path) -> None:
    state, buffer = _stopped(project)
    dispatch(state, "/settings")
    row = next(line for line in buffer.getvalue().splitlines() if "auto-compaction (now)" in line)
    assert " ".join(row.split()) == f"auto-compaction (now) off {STOPPED}"


def test_the_status_line_says_off_instead_of_tokens_left(project: Path) -> None:
    state, buffer = _stopped(project)
    start = len(buffer.getvalue())
    state.print_status()
    status = buffer.getvalue()[start:]
    assert "auto-compaction off" in status and "left before auto-compaction" not in status


def test_autocompact_on_restarts_it_and_every_place_says_on_again(project: Path) -> None:
    state, buffer = _stopped(project)
    dispatch(state, "/autocompact on")
    start = len(buffer.getvalue())
    dispatch(state, "/autocompact")
    state.print_status()
    shown = buffer.getvalue()[start:]
    assert "Auto-compaction is on. Usage" in shown and "auto-compaction off" not in shown


def test_settings_shows_the_approve_flag_in_force(project: Path) -> None:
    state, buffer = make_state(project, FakeModel(), approve="all")
    state.loaded = load_settings(project, state.options.settings_overrides())  # as the start-up loads them
    dispatch(state, "/settings")
    row = next(line for line in buffer.getvalue().splitlines() if line.strip().startswith("approve "))
    assert row.split()[1:] == ['"all"', "CLI", "flag"]


def test_uncompact_does_not_promise_a_compaction_that_the_stopped_guard_will_not_run(project: Path) -> None:
    state, buffer = _stopped(project)
    start = len(buffer.getvalue())
    dispatch(state, "/uncompact --force")  # (the turns after the compaction leave the context)
    shown = " ".join(buffer.getvalue()[start:].replace("│", " ").split())
    assert "uncompacted: compaction" in shown
    assert "Auto-compaction is off, so it stays uncompacted (/compact compacts it)." in shown
    assert "will compact again" not in shown and "auto-compaction may compact it again" not in shown

"""Issue 35.3 in a real terminal: once the loop guard stops automatic compaction, ``/autocompact``,
``/settings`` and the status line all say "off" (not "on", not "0 left before auto-compaction")."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import structured_summary
from scripted_server import Reply, ScriptedServer
from terminal_harness import CLI, LONG, Terminal

from pi_compact.compaction.prompts import SYSTEM_PROMPT

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

STOPPED = "stopped by the loop guard for this session; /autocompact on turns it back on"


@pytest.fixture
def terminal(tmp_path: Path, server: ScriptedServer) -> Iterator[Terminal]:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    term = Terminal(tmp_path, server)
    try:
        term.wait_for("pi>", timeout=LONG)
        yield term
    finally:
        term.close()


def _is_summary_request(body: dict[str, object]) -> bool:
    messages = body.get("messages")
    return isinstance(messages, list) and bool(messages) and messages[0].get("content") == SYSTEM_PROMPT


def test_after_the_guard_stops_every_place_says_off(terminal: Terminal, server: ScriptedServer) -> None:
    # Every answer reports 3,500 tokens, past the 3,000 threshold: each compaction is refilled at once.
    server.route = lambda body: Reply(text=structured_summary("guard")) if _is_summary_request(body) else \
        Reply(text="An answer.", prompt_tokens=3_500)
    start = terminal.mark()
    for i in range(6):
        since = terminal.mark()
        terminal.type(f"question {i} " + "about the parser " * 20)
        screen = terminal.wait_prompt(since=since, timeout=LONG)
        if "Automatic compaction is off" in screen:
            break
    else:
        raise AssertionError(terminal.screen()[start:])
    assert "left before auto-compaction" not in screen.split("Automatic compaction is off", 1)[1]
    assert "auto-compaction off" in screen.split("Automatic compaction is off", 1)[1]

    since = terminal.mark()
    terminal.type("/autocompact")
    screen = terminal.wait_prompt(since=since)
    assert f"Auto-compaction is off ({STOPPED})." in " ".join(screen.split())

    since = terminal.mark()
    terminal.type("/settings")
    screen = terminal.wait_prompt(since=since)
    [row] = [line for line in screen.splitlines() if "auto-compaction (now)" in line]
    # (the source column wraps at the pane's width)
    assert " ".join(row.split()).startswith("auto-compaction (now) off stopped by the loop guard for this session")

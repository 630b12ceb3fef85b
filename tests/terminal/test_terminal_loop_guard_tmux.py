"""The loop guard as the terminal shows it (issue 35.4): one reply with 16 identical calls is one line
naming the call and the count, not 16 "Not run" lines; the next prompt's request tells the model why."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer, ToolCallReply
from terminal_harness import CLI, LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.fixture(scope="module")
def terminal(tmp_path_factory: pytest.TempPathFactory, server: ScriptedServer) -> Iterator[Terminal]:
    # Wide enough for the stop line on one row; the checkout under test first on the CLI's path.
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    checkout = str(Path(__file__).resolve().parents[2])
    term = Terminal(tmp_path_factory.mktemp("tty"), server, width=220, env={"PYTHONPATH": checkout})
    try:
        term.wait_for("pi>", timeout=LONG)
        yield term
    finally:
        term.close()


def test_sixteen_identical_calls_in_one_reply_show_one_stop_line(terminal: Terminal, server: ScriptedServer) -> None:
    grep = ToolCallReply("grep", {"pattern": "refill_rate"})
    server.enqueue(Reply(tool_calls=(grep,) * 16, prompt_tokens=500),
                   Reply(text="It is in limits.py.", prompt_tokens=600))
    start = terminal.mark()
    terminal.type("where is refill_rate set?")
    screen = terminal.wait_prompt(since=start, timeout=LONG)
    assert screen.count("Stopped: the model called `grep refill_rate` 16 times in a row with the same arguments; "
                        "none of the 16 calls of its last reply ran.") == 1, screen
    assert "Not run" not in screen
    start = terminal.mark()
    terminal.type("go on")
    terminal.wait_for("It is in limits.py.", timeout=LONG, since=start)
    results = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 16
    assert "the loop guard stopped this turn before this call because `grep refill_rate` was called 16 times" in str(
        results[0]["content"])

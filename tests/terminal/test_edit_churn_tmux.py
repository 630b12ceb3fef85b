"""Edit churn in the real terminal (issue 44, item 5): a model changing the test when asked to fix the
code is stopped before the edit with a question, and an answer that lets the test change lets it go on."""

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
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    checkout = str(Path(__file__).resolve().parents[2])
    term = Terminal(tmp_path_factory.mktemp("tty"), server, width=200, env={"PYTHONPATH": checkout})
    (term.project / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(2, 4) == 6\n")
    try:
        term.wait_for("pi>", timeout=LONG)
        yield term
    finally:
        term.close()


def test_editing_the_test_when_asked_for_a_fix_stops_and_asks(terminal: Terminal, server: ScriptedServer) -> None:
    edit = ToolCallReply("edit", {"path": "test_calc.py", "oldText": "== 6", "newText": "== 16"})
    server.enqueue(Reply(tool_calls=(edit,), prompt_tokens=500))
    start = terminal.mark()
    terminal.type("The test fails. Fix the bug in calc.py.")
    screen = terminal.wait_prompt(since=start, timeout=LONG)
    assert "Stopped before the model changed the test test_calc.py: you asked for a fix" in screen, screen
    assert "Is the test wrong?" in screen
    assert "== 6" in (terminal.project / "test_calc.py").read_text()


def test_saying_the_test_is_wrong_lets_the_edit_run(terminal: Terminal, server: ScriptedServer) -> None:
    edit = ToolCallReply("edit", {"path": "test_calc.py", "oldText": "== 6", "newText": "== 16"})
    server.enqueue(Reply(tool_calls=(edit,), prompt_tokens=600), Reply(text="Changed the test.", prompt_tokens=700))
    start = terminal.mark()
    terminal.type("The test is wrong, change it.")
    terminal.wait_for("Changed the test.", timeout=LONG, since=start)
    assert "== 16" in (terminal.project / "test_calc.py").read_text()

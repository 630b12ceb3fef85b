"""``/uncompact`` and ``/tree`` in a real terminal: the CLI runs in tmux against the scripted server.

One conversation shared by the tests of this module, in file order: two turns, ``/compact``,
``/uncompact`` (its block, then ``/context``), ``/tree`` (the rows), and a move answered through the
"Summarize the branch?" question with a focus. Skipped when tmux is missing.
"""

from __future__ import annotations

import json

import pytest
from builders import structured_summary
from scripted_server import Reply, ScriptedServer
from terminal_harness import LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(__import__("shutil").which("tmux") is None, reason="tmux is not installed"),
]


def entries(terminal: Terminal) -> list[dict[str, object]]:
    return [json.loads(line) for line in terminal.session_file.read_text(encoding="utf-8").splitlines()]


def test_two_turns_then_a_compaction(terminal: Terminal, server: ScriptedServer) -> None:
    for number, question in enumerate(("explain the lexer " * 40, "and the parser " * 40)):
        server.enqueue(Reply(text=f"Answer {number}.", prompt_tokens=400))
        start = terminal.mark()
        terminal.type(question)
        terminal.wait_for(f"Answer {number}.", timeout=LONG, since=start)
        terminal.wait_prompt(since=start)
    server.enqueue(Reply(text=structured_summary("tty")))
    start = terminal.mark()
    terminal.type("/compact")
    assert "[compaction]" in terminal.wait_prompt(since=start, timeout=LONG)


def test_uncompact_shows_its_block_and_context_says_uncompacted(terminal: Terminal) -> None:
    start = terminal.mark()
    terminal.type("/uncompact")
    screen = terminal.wait_prompt(since=start)
    assert "[uncompacted]" in screen and "undone" in screen
    assert "Nothing was deleted: the compaction stays in the file on a side branch" in screen
    assert entries(terminal)[-1]["customType"] == "pi-compact.uncompact"
    start = terminal.mark()
    terminal.type("/context")
    screen = terminal.wait_prompt(since=start)
    assert "Uncompacted" in screen and "was undone (/uncompact)" in screen


def test_tree_lists_the_branches_with_the_compaction_and_the_current_position(terminal: Terminal) -> None:
    start = terminal.mark()
    terminal.type("/tree")
    screen = terminal.wait_prompt(since=start)
    rows = [line.strip() for line in screen.splitlines() if line.strip()[:1].isdigit()]
    assert rows[0].startswith("1 explain the lexer")
    assert any("[compaction] compaction of" in row for row in rows)
    assert sum("← you are here" in row for row in rows) == 1


def test_a_move_asks_whether_to_summarize_and_takes_a_focus(terminal: Terminal, server: ScriptedServer) -> None:
    server.enqueue(Reply(text=structured_summary("branch"), delay_s=1.0))
    start = terminal.mark()
    terminal.type("/tree 1")
    terminal.wait_for("Summarize the branch you leave", since=start)
    terminal.type("f")
    terminal.wait_for("Focus for the summary:", since=start)
    terminal.type("the parser only")
    terminal.wait_for("Summarizing the branch you leave…", since=start)
    screen = terminal.wait_prompt(since=start, timeout=LONG)
    assert "[tree]" in screen and "summarized by the model" in screen
    assert "explain the lexer" in screen  # the message moved to, to send again
    lines = entries(terminal)
    last, position = lines[-1], next(e for e in lines if e.get("id") == lines[-1]["parentId"])
    assert last["type"] == "branch_summary" and last["fromId"] == position["id"]
    assert position["type"] == "thinking_level_change"  # the entry before the first message
    assert "the parser only" in json.dumps(server.requests[-1]["messages"])

"""Tool-result clearing in a real terminal: one line says when old tool results leave the request, and the
status line shows the tool tokens cleared (4,000-token window, threshold 3,000: clearing protects the
newest 750 tokens of tool output and clears at least 375 at a time)."""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest
from builders import structured_summary
from scripted_server import Reply, ScriptedServer, ToolCallReply
from terminal_harness import LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

FILES = 6


def _route(body: dict[str, Any]) -> Reply:
    if not body.get("tools"):  # a summary request offers no tools
        return Reply(text=structured_summary("clearing"), count_tokens=True)
    last = (body.get("messages") or [{}])[-1]
    done = int(str(last.get("tool_call_id", "call--1")).rsplit("-", 1)[1]) if last.get("role") == "tool" else -1
    if done + 1 >= FILES:
        return Reply(text="All read.", count_tokens=True)
    return Reply(tool_calls=(ToolCallReply("read", {"path": f"f{done + 1}.txt"}, f"call-{done + 1}"),),
                 count_tokens=True)


def test_a_clearing_is_one_line_and_the_status_line_counts_the_cleared_tokens(
        terminal: Terminal, server: ScriptedServer) -> None:
    for i in range(FILES):
        (terminal.project / f"f{i}.txt").write_text(f"file {i} " + "lorem ipsum dolor sit amet " * 90)
    server.route = _route
    since = terminal.mark()
    terminal.type("Read the files f0.txt to f5.txt.")
    screen = terminal.wait_prompt(since=since, timeout=LONG)
    flat = " ".join(screen.split())
    assert re.search(r"Cleared 2 old tool results from the context \(~[\d,]+ tokens; now ~[\d,]+\)\. The session "
                     r"file keeps them word for word", flat), flat
    assert re.search(r"tokens \(\d+%\) · [\d,]+ tool tokens cleared · ", flat), flat
    assert "Compacting" not in flat and "compacted" not in flat.lower()

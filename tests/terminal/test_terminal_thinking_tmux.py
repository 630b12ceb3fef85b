"""Shift+Tab at the prompt of the real CLI (tmux): the next thinking level, said above the prompt and recorded
as one ``thinking_level_change`` entry; the status line shows the level."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer
from terminal_harness import CLI, LONG, WINDOW, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(not CLI.exists(), reason=f"{CLI} is not installed (pip install -e .)"),
]


def test_shift_tab_cycles_the_thinking_level(tmp_path: Path) -> None:
    server = ScriptedServer().start()
    # gpt-5 reasons (minimal..high, never off) and litellm's data knows it; the scripted server answers for it.
    args = f"--model openai/gpt-5 --api-base {server.base_url} --api-key x --context-window {WINDOW}"
    terminal = Terminal(tmp_path, server, model_args=args)
    try:
        terminal.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(text="Hello."))
        start = terminal.mark()
        terminal.type("hi")
        status = terminal.wait_prompt(since=start, timeout=LONG)
        assert "openai/gpt-5 · thinking medium · " in status
        terminal.key("BTab")
        terminal.wait_for("Thinking level high.")  # printed above the prompt, which is redrawn below it
        lines = [json.loads(line) for line in terminal.session_file.read_text(encoding="utf-8").splitlines()]
        assert [e["thinkingLevel"] for e in lines if e.get("type") == "thinking_level_change"] == ["medium", "high"]
    finally:
        terminal.close()
        server.stop()

"""In a real terminal: a read too big for the window that the provider refuses twice, the second time
with the result already cut, is retried with less of it and answered (issue 44, the second walk, where
that second refusal ended the prompt with "Context overflow recovery failed")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer, ToolCallReply, error_reply
from terminal_harness import LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]
CHECKOUT = str(Path(__file__).resolve().parents[2])
WINDOW = 10_000


def _overflow(stated: int) -> Reply:
    return error_reply(400, f"request ({stated} tokens) exceeds the available context size ({WINDOW} tokens), "
                            "try increasing it")


def test_a_second_overflow_with_the_read_cut_is_retried_with_less_of_it_and_answered(
    server: ScriptedServer, tmp_path: Path,
) -> None:
    args = f"--model openai/scripted --api-base {server.base_url} --api-key x --context-window {WINDOW}"
    term = Terminal(tmp_path, server, model_args=args, width=160, env={"PYTHONPATH": CHECKOUT},
                    settings={"compaction": {"reserveTokens": 2000, "keepRecentTokens": 150}})
    try:
        term.wait_for("pi>", timeout=LONG)
        (term.project / "NOTES.md").write_text(
            "\n".join(f"- meeting {n}: 3 4 5 6 7 8 9 notes of the day" for n in range(1, 481)))
        server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), prompt_tokens=300),
                       _overflow(16_500), _overflow(11_000), Reply(text="Meeting 2 took notes.", prompt_tokens=7_000))
        start = term.mark()
        term.type("What happened at meeting 2 in NOTES.md?")
        term.wait_prompt(since=start, timeout=LONG)
        screen = " ".join(term.screen().split())
        assert "Context overflow (the provider counted 11,000 tokens): retrying with less of the newest tool " \
               "result, cut to fit." in screen
        assert "Meeting 2 took notes." in screen
        assert "recovery failed" not in screen
    finally:
        term.close()

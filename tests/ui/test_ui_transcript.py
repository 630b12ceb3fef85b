"""The recent conversation printed when a session is reopened."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from pi_compact.ui.transcript import recent_transcript


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def answer(text: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}, *calls], "stopReason": "stop"}


def render(messages: list[dict[str, Any]], turns: int = 3) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None)
    for part in recent_transcript(messages, turns):
        console.print(part)
    return buffer.getvalue()


def test_the_last_turns_are_shown_and_earlier_ones_are_one_line() -> None:
    summary = {"role": "compactionSummary", "summary": "## Goal\nsecret summary", "tokensBefore": 900}
    messages: list[dict[str, Any]] = [summary]
    for n in range(1, 6):
        messages += [user(f"question {n}"), answer(f"answer {n}")]
    screen = render(messages, turns=2)
    assert "… 6 earlier messages not shown (/context for the totals)" in screen
    assert "question 3" not in screen and "secret summary" not in screen
    assert screen.index("pi> question 4") < screen.index("answer 4") < screen.index("pi> question 5")


def test_tool_calls_and_results_look_as_they_did() -> None:
    call = {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "make test"}}
    result = {"role": "toolResult", "toolCallId": "t1", "toolName": "bash", "isError": True,
              "content": [{"type": "text", "text": "\n".join(f"line {i}" for i in range(9)) + "\nFAILED"}]}
    shell = {"role": "bashExecution", "command": "ls", "output": "a.py", "exitCode": 0}
    screen = render([user("run the tests"), answer("Running.", call), result, answer("One failed."), shell])
    assert "▸ bash make test" in screen
    assert "… 6 earlier lines (Ctrl-O to expand)" in screen and "FAILED" in screen
    assert "$ ls" in screen and "a.py" in screen
    assert "earlier message" not in screen


def test_an_empty_context_shows_nothing() -> None:
    assert recent_transcript([]) == []


def test_a_reply_the_loop_guard_stopped_reopens_as_one_call_line_and_one_stop_line() -> None:
    calls = [{"type": "toolCall", "id": f"g{n}", "name": "grep", "arguments": {"pattern": "refill_rate"}}
             for n in range(16)]
    refused = [{"role": "toolResult", "toolCallId": f"g{n}", "toolName": "grep", "isError": True,
                "details": {"loopStop": True}, "content": [{"type": "text", "text": "Not run: the loop guard …"}]}
               for n in range(16)]
    screen = render([user("where is refill_rate set?"), answer("Searching.", *calls), *refused, user("go on")])
    lines = [line.strip() for line in screen.splitlines() if line.strip()]
    assert lines == ["pi> where is refill_rate set?", "Searching.", "▸ grep refill_rate ×16",
                     "⎿ Not run: stopped by the loop guard (16 calls)", "pi> go on"]

"""One context figure: estimates count what the provider counts (system prompt, tools, messages), so
the figure shown after a compaction, or before the first reply, matches the next reported usage."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_harness import AGENT_SYSTEM, INFO, SETTINGS, SUMMARY, padded

from pi_compact.agent.events import CompactionEnd, SessionEvent
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.cancel import CancelToken
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.llm.protocol import ChatRequest, StreamEvent
from pi_compact.llm.scripted import ScriptedModel, ScriptedReply
from pi_compact.session.store import SessionStore


def _text_of(message: Any) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for block in content or ():
        if block.get("type") == "toolCall":
            parts.append(json.dumps(block.get("arguments")))
        else:
            parts.append(str(block.get("text") or block.get("thinking") or ""))
    return "".join(parts)


def counted(request: ChatRequest) -> int:
    """chars / 4 of everything the request carries: system prompt, tool definitions and messages."""
    tools = json.dumps([{"name": t.name, "description": t.description, "parameters": t.parameters}
                        for t in request.tools])
    return (len(request.system) + len(tools) + sum(len(_text_of(m)) for m in request.messages)) // 4


class CountingModel(ScriptedModel):
    """A provider whose usage counts the whole request, as real ones do; summaries come when asked for."""

    def __init__(self, *answers: str) -> None:
        super().__init__(INFO)
        self.answers = list(answers)
        self.reported: list[int] = []

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        text = SUMMARY if request.system == SYSTEM_PROMPT else self.answers.pop(0)
        if request.tools:
            self.reported.append(counted(request))
        self.enqueue(ScriptedReply(text=text, prompt_tokens=counted(request)))
        return super().stream(request, cancel)


def _session(tmp_path: Path, model: CountingModel, events: list[SessionEvent]) -> AgentSession:
    cwd = tmp_path / "work"
    cwd.mkdir()
    return AgentSession(store=SessionStore.create(tmp_path / "s.jsonl", str(cwd), 1_700_000_000_000), model=model,
                        settings=SETTINGS, tools=default_tools(), system_prompt=AGENT_SYSTEM, cwd=cwd,
                        emit=events.append, auto_compact=False)


def test_the_after_of_a_compaction_is_within_ten_percent_of_the_next_reported_usage(tmp_path: Path) -> None:
    model = CountingModel(*(padded(f"ANSWER-{n}", 300) for n in range(3)), "final")
    events: list[SessionEvent] = []
    session = _session(tmp_path, model, events)
    for n in range(3):
        session.prompt(padded(f"QUESTION-{n}", 300))
    assert session.compact() is not None
    [end] = [e for e in events if isinstance(e, CompactionEnd)]
    assert end.result is not None
    after = int(end.result["estimatedTokensAfter"])
    shown_now = session.context_usage().tokens  # the status line right after the compaction
    session.prompt("next")
    reported = model.reported[-1] - counted_prompt("next")
    assert abs(after - reported) <= 0.10 * reported, (after, reported)
    assert abs(shown_now - reported) <= 0.10 * reported, (shown_now, reported)


def counted_prompt(text: str) -> int:
    return len(text) // 4


def test_a_fresh_session_counts_the_system_prompt_and_tools_before_the_first_reply(tmp_path: Path) -> None:
    model = CountingModel("hello")
    session = _session(tmp_path, model, [])
    before = session.context_usage()
    assert not before.from_usage
    session.prompt("hi")
    first = model.reported[0]
    assert before.tokens > 0
    assert abs(before.tokens - first) <= 0.10 * first, (before.tokens, first)

"""Cancelling a prompt (Ctrl-C / the API's cancel) during a model call or an automatic compaction."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

from agent_harness import (
    OVER_THRESHOLD,
    UNDER_THRESHOLD,
    assert_compactions_paired,
    make_harness,
    padded,
    summary_reply,
    two_finished_turns,
)
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.cancel import CancelToken
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.llm.protocol import ChatModel, ChatRequest, ModelInfo, StreamEvent


class _Canceller(threading.Thread):
    """Cancels once the server has received ``requests`` requests (the last one is then in flight),
    and notes when, so tests measure the reaction time and not litellm's first import."""

    def __init__(self, server: ScriptedServer, token: CancelToken, requests: int) -> None:
        super().__init__(daemon=True)
        self.server, self.token, self.requests = server, token, requests
        self.cancelled_at = float("inf")
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + 30
        while len(self.server.requests) < self.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        self.cancelled_at = time.monotonic()
        self.token.cancel()


def test_cancel_during_a_model_call_returns_promptly(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(Reply(text="too late", delay_s=10))
    token = CancelToken()
    watcher = _Canceller(scripted_server, token, requests=1)
    final = h.session.prompt("Slow question", token)
    assert time.monotonic() - watcher.cancelled_at < 2
    assert final is not None and final["stopReason"] == "aborted"
    assert h.of_type("compaction_start") == []


def test_cancel_during_threshold_compaction_writes_nothing(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(
        *(Reply(text=padded(f"ANSWER-{i}"), prompt_tokens=UNDER_THRESHOLD) for i in range(2)),
    )
    for i in range(2):
        h.session.prompt(padded(f"QUESTION-{i}"))
    scripted_server.enqueue(Reply(text="BIG-ANSWER", prompt_tokens=OVER_THRESHOLD), summary_reply(delay_s=10))
    token = CancelToken()
    watcher = _Canceller(scripted_server, token, requests=4)
    final = h.session.prompt(padded("QUESTION-2"), token)
    assert time.monotonic() - watcher.cancelled_at < 2
    assert final is not None and final["content"] == [{"type": "text", "text": "BIG-ANSWER"}]
    assert scripted_server.requests[-1]["messages"][0]["content"] == SYSTEM_PROMPT  # it was the summarizer
    assert not any(e["type"] == "compaction" for e in h.entries())
    assert h.entries()[-1]["message"]["content"] == [{"type": "text", "text": "BIG-ANSWER"}]
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result, e.aborted) for s, e in pairs] == [("threshold", None, True)]


def test_cancel_during_compaction_between_tool_turns_stops_the_whole_turn(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(
        Reply(text=padded("CALLING"), tool_calls=(ToolCallReply("ls", {}),), prompt_tokens=OVER_THRESHOLD),
        summary_reply(delay_s=10, repeat=True),
    )
    token = CancelToken()
    _Canceller(scripted_server, token, requests=4)  # 2 finished turns + the tool call + the first summary request
    final = h.session.prompt(padded("LONG-TASK"), token)
    assert final is not None and final["stopReason"] == "toolUse"
    # The cancelled compaction is the only one: no second summary request, no second cancel report.
    assert len(h.summarizer_requests()) == 1
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.aborted) for s, e in pairs] == [("threshold", True)]
    assert not any(e["type"] == "compaction" for e in h.entries())


class _CountingModel(ChatModel):
    """The harness's real model, counting ``stream`` calls (a request starts with the call)."""

    def __init__(self, model: ChatModel) -> None:
        self.model, self.calls = model, 0

    @property
    def info(self) -> ModelInfo:
        return self.model.info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.calls += 1
        return self.model.stream(request, cancel)


def test_compaction_with_a_cancelled_token_sends_no_request(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    counting = _CountingModel(h.session.model)
    h.session.set_model(counting)
    token = CancelToken()
    token.cancel()
    assert h.session.compact(cancel=token) is None
    assert counting.calls == 0
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.aborted) for s, e in pairs] == [("manual", True)]

"""Overflow recovery and rate limits in a real AgentSession (provider errors over real HTTP)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from agent_harness import (
    SETTINGS,
    WINDOW,
    Harness,
    assert_compactions_paired,
    make_harness,
    outside_summary,
    padded,
    request_text,
    summary_in,
    summary_reply,
    two_finished_turns,
)
from scripted_server import (
    Reply,
    ScriptedServer,
    anthropic_prompt_too_long_reply,
    openai_context_overflow_reply,
    rate_limit_reply,
)

from pi_compact.agent.compaction.reasons import OVERFLOW_GIVE_UP
from pi_compact.agent.events import CompactionEnd, CompactionStart, Notice, Retry
from pi_compact.llm.protocol import ModelInfo
from pi_compact.session.store import SessionStore

OVERFLOWS = {
    "openai": openai_context_overflow_reply(window=10_000, requested=12_000),
    "anthropic": anthropic_prompt_too_long_reply(tokens=12_000, maximum=10_000),
}




def _compaction_events(h: Harness) -> list[CompactionStart | CompactionEnd]:
    return [e for e in h.events if isinstance(e, (CompactionStart, CompactionEnd))]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_overflow_compacts_and_retries_once(
    provider: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS[provider], summary_reply(), Reply(text="RETRY-ANSWER"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result is not None, e.will_retry, e.aborted) for s, e in pairs] == [
        ("overflow", True, True, False)
    ]
    assert len(h.agent_requests()) == 4  # 2 history + the overflowing one + exactly one retry
    assert len(scripted_server.requests) == 5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_overflow_retry_request_has_summary_and_no_failed_reply(
    provider: str, scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS[provider], summary_reply(), Reply(text="RETRY-ANSWER"))
    h.session.prompt("NEW-QUESTION")
    retried = h.agent_requests()[-1]
    assert summary_in(retried)
    assert "NEW-QUESTION" in request_text(retried)
    assert "EARLY-QUESTION" not in outside_summary(retried)  # the summary quotes it (issue 41)
    assert retried["messages"][-1]["role"] == "user"  # the failed assistant reply is not sent
    assert [m["role"] for m in retried["messages"]].count("assistant") == 1  # only the kept LATER-ANSWER
    assert not any(m.get("stopReason") == "error" for m in h.session.messages)


def test_failed_overflow_reply_stays_in_the_session_file(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS["openai"], summary_reply(), Reply(text="RETRY-ANSWER"))
    h.session.prompt("NEW-QUESTION")
    kinds = [
        e["message"]["stopReason"] if e["type"] == "message" and e["message"]["role"] == "assistant" else e["type"]
        for e in h.entries()[7:]  # header, opening entries, two turns
    ]
    assert kinds == ["message", "error", "compaction", "stop"]


def test_persistent_overflow_retries_once_then_gives_up(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS["openai"], summary_reply(), OVERFLOWS["openai"], Reply(text="NEVER-SENT"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["stopReason"] == "error"
    assert len(h.agent_requests()) == 4  # the overflowing call and one retry, nothing more
    assert scripted_server.pending == 1
    events = _compaction_events(h)
    assert [type(e).__name__ for e in events] == ["CompactionStart", "CompactionEnd", "CompactionEnd"]
    give_up = events[-1]
    assert isinstance(give_up, CompactionEnd)
    assert (give_up.reason, give_up.result, give_up.aborted, give_up.will_retry, give_up.error_message) == (
        "overflow", None, False, False, OVERFLOW_GIVE_UP
    )
    assert_compactions_paired(h.events)


def test_persistent_overflow_does_not_compact_again_on_the_next_prompt(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS["openai"], summary_reply(), OVERFLOWS["openai"], Reply(text="FRESH-ANSWER"))
    h.session.prompt("NEW-QUESTION")
    final = h.session.prompt("SMALLER-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "FRESH-ANSWER"}]
    assert len(h.of_type("compaction_start")) == 1
    assert_compactions_paired(h.events)


def test_rate_limit_is_retried_not_compacted(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(rate_limit_reply(), Reply(text="AFTER-RATE-LIMIT"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "AFTER-RATE-LIMIT"}]
    assert _compaction_events(h) == []
    retries = [e for e in h.events if isinstance(e, Retry)]
    assert len(retries) == 1 and "rate limit" in retries[0].error_message
    assert len(h.agent_requests()) == 4
    assert h.summarizer_requests() == []


def test_overflow_still_compacts_when_compaction_is_disabled(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, enabled=False))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS["openai"], summary_reply(), Reply(text="RETRY-ANSWER"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    assert [(s.reason, e.will_retry) for s, e in assert_compactions_paired(h.events)] == [("overflow", True)]


def test_overflow_is_not_compacted_when_auto_compaction_is_off(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path, auto_compact=False)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS["openai"], Reply(text="NEVER-SENT"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["stopReason"] == "error"
    assert "context length exceeded" in final["errorMessage"]
    assert _compaction_events(h) == []
    assert len(scripted_server.requests) == 3


def test_session_toggle_turns_overflow_compaction_off(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    h.session.set_auto_compaction(False)
    scripted_server.enqueue(OVERFLOWS["anthropic"], Reply(text="NEVER-SENT"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["stopReason"] == "error"
    assert _compaction_events(h) == []
    assert scripted_server.pending == 1


def test_silent_overflow_keeps_the_answer_and_compacts_without_retry(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    # The provider answered although the prompt was larger than the window (usage.input > window).
    scripted_server.enqueue(Reply(text="BIG-ANSWER", prompt_tokens=WINDOW + 100), summary_reply())
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "BIG-ANSWER"}]
    assert [(s.reason, e.will_retry, e.result is not None) for s, e in assert_compactions_paired(h.events)] == [
        ("overflow", False, True)
    ]
    assert len(h.agent_requests()) == 3  # no retry of an answer that arrived
    assert h.session.messages[-1]["content"] == [{"type": "text", "text": "BIG-ANSWER"}]


def test_length_overflow_retry_leaves_the_empty_reply_out_of_the_context(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    full = Reply(text="", finish_reason="length", prompt_tokens=WINDOW - 10, completion_tokens=0)
    scripted_server.enqueue(full, summary_reply(), Reply(text="RETRY-ANSWER"))
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    retried = h.agent_requests()[-1]
    assert summary_in(retried)
    assert retried["messages"][-1]["role"] == "user" and "NEW-QUESTION" in request_text(retried)
    assert not any(m.get("stopReason") == "length" for m in h.session.messages)  # gone from the live context
    assert [(s.reason, e.will_retry) for s, e in assert_compactions_paired(h.events)] == [("overflow", True)]


def test_resumed_session_ending_in_an_overflow_compacts_before_the_prompt(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    first = make_harness(scripted_server, tmp_path)
    two_finished_turns(first)
    scripted_server.enqueue(summary_reply())
    assert first.session.compact() is not None
    first.session.set_auto_compaction(False)
    scripted_server.enqueue(Reply(text="THIRD-ANSWER"), OVERFLOWS["openai"])
    first.session.prompt(padded("THIRD-QUESTION"))
    first.session.prompt(padded("OVERFLOWING-QUESTION"))
    resumed = make_harness(scripted_server, tmp_path,
                           store=SessionStore.open(first.path, str(first.cwd), 1_700_000_000_000))
    scripted_server.enqueue(summary_reply(), Reply(text="FRESH-ANSWER"))
    final = resumed.session.prompt("NEXT-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "FRESH-ANSWER"}]
    assert [(s.reason, e.result is not None, e.will_retry) for s, e in assert_compactions_paired(resumed.events)] == [
        ("overflow", True, False)
    ]


def test_usage_of_the_retried_reply_counts_after_overflow_recovery(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    scripted_server.enqueue(OVERFLOWS["openai"], summary_reply(), Reply(text="RETRY-ANSWER", prompt_tokens=3000))
    h.session.prompt("NEW-QUESTION")
    usage = h.session.context_usage()
    assert (usage.tokens, usage.from_usage) == (3005, True)


def test_overflow_reported_by_another_model_is_not_compacted_before_the_prompt(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    other = ModelInfo("openai/tiny-model", "openai", 4_000, None)
    first = make_harness(scripted_server, tmp_path, info=other, auto_compact=False)
    two_finished_turns(first)
    scripted_server.enqueue(OVERFLOWS["openai"])
    first.session.prompt("TOO-BIG-FOR-TINY")
    resumed = make_harness(scripted_server, tmp_path,
                           store=SessionStore.open(first.path, str(first.cwd), 1_700_000_000_000))
    scripted_server.enqueue(Reply(text="BIG-MODEL-ANSWER"))
    final = resumed.session.prompt("NEXT-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "BIG-MODEL-ANSWER"}]
    assert _compaction_events(resumed) == []
    assert resumed.summarizer_requests() == []


def test_overflow_with_nothing_to_compact_hints_that_the_window_may_be_wrong(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(openai_context_overflow_reply(window=4_000, requested=5_000))
    final = h.session.prompt("FIRST-QUESTION")
    assert final is not None and final["stopReason"] == "error"
    assert "maximum context length is 4000" in final["errorMessage"]
    assert [(n.text, n.level) for n in h.events if isinstance(n, Notice)] == [(
        "The provider reports a context overflow and there is nothing to compact: the context window known for "
        'openai/scripted is 10,000 tokens; if the provider\'s real limit is smaller, set models["openai/scripted"]'
        ".contextWindow in ~/.pi/agent/settings.json or pass --context-window.",
        "warning",
    )]
    assert _compaction_events(h) == []
    assert len(scripted_server.requests) == 1


def test_overflow_with_one_message_larger_than_the_window_names_it_instead_of_the_window_setting(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # Issue 35.2: a smaller contextWindow would not help here; the message is what has to go.
    h = make_harness(scripted_server, tmp_path)
    scripted_server.enqueue(openai_context_overflow_reply(window=10_000, requested=12_500))
    h.session.prompt(padded("HUGE-PASTE", 12_000))
    [notice] = [n for n in h.events if isinstance(n, Notice)]
    user_id = next(e["id"] for e in h.entries() if e.get("type") == "message" and e["message"]["role"] == "user")
    assert notice.level == "warning"
    assert notice.text == (
        "The provider reports a context overflow and there is nothing to compact: the user message, entry "
        f"{user_id[:8]}…, 12,000 tokens alone is larger than the 10,000-token context window of openai/scripted. "
        "Start a /new session, or ask for a smaller output next time (e.g. head or grep instead of cat)."
    )
    assert "contextWindow" not in notice.text
    assert _compaction_events(h) == []

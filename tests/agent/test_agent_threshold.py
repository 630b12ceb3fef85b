"""Threshold compaction in a real AgentSession: after a run, between tool-loop turns, and its switches."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import (
    OVER_THRESHOLD,
    SETTINGS,
    SUMMARY,
    UNDER_THRESHOLD,
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
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.events import CompactionEnd, CompactionStart
from pi_compact.compaction.kept import without_blocks
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.protocol import ModelInfo
from pi_compact.session.store import SessionStore


def _three_turns(h: Harness, last_prompt_tokens: int, *, compacts: bool = False) -> None:
    """Three prompts; the third reply reports ``last_prompt_tokens`` of context."""
    h.server.enqueue(
        Reply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        Reply(text=padded("ANSWER-TWO"), prompt_tokens=UNDER_THRESHOLD + 500),
        Reply(text=padded("ANSWER-THREE"), prompt_tokens=last_prompt_tokens),
        *([summary_reply()] if compacts else []),
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO", "QUESTION-THREE"):
        final = h.session.prompt(padded(marker))
        assert final is not None and final["stopReason"] == "stop"


def test_threshold_crossed_by_a_run_compacts_once_after_it(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    _three_turns(h, OVER_THRESHOLD, compacts=True)
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.reason, e.aborted, e.will_retry, e.error_message) for s, e in pairs] == [
        ("threshold", "threshold", False, False, None)
    ]
    result = pairs[0][1].result
    assert result is not None and without_blocks(result["summary"]) == SUMMARY
    compactions = [e for e in h.entries() if e["type"] == "compaction"]
    assert len(compactions) == 1 and compactions[0]["summary"] == result["summary"]
    assert len(h.summarizer_requests()) == 1


def test_request_after_threshold_compaction_holds_summary_and_tail_only(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    _three_turns(h, OVER_THRESHOLD, compacts=True)
    scripted_server.enqueue(Reply(text="FOURTH-ANSWER", prompt_tokens=UNDER_THRESHOLD))
    final = h.session.prompt("QUESTION-FOUR")
    assert final is not None and final["content"] == [{"type": "text", "text": "FOURTH-ANSWER"}]
    request = h.agent_requests()[-1]
    text = request_text(request)
    assert summary_in(request)
    for kept in ("QUESTION-THREE", "ANSWER-THREE", "QUESTION-FOUR"):
        assert kept in text
    for summarized in ("QUESTION-ONE", "ANSWER-ONE", "QUESTION-TWO", "ANSWER-TWO"):
        assert summarized not in outside_summary(request)  # the summary quotes the questions (issue 41)
    assert "ANSWER-ONE" not in text
    assert [m["role"] for m in request["messages"]] == ["system", "user", "user", "assistant", "user"]
    assert len(h.of_type("compaction_start")) == 1  # the fourth prompt did not compact again


def test_run_under_the_threshold_does_not_compact(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    _three_turns(h, OVER_THRESHOLD - 600)
    assert h.of_type("compaction_start") == [] and h.of_type("compaction_end") == []
    assert h.summarizer_requests() == []


def _tool_loop_script(server: ScriptedServer, tool_call_tokens: int, *, compacts: bool = True) -> None:
    """A long task: two tool calls, the first reply already past the threshold, then the answer."""
    server.enqueue(
        Reply(tool_calls=(ToolCallReply("bash", {"command": "echo STEP-ONE-OUTPUT"}),),
              prompt_tokens=tool_call_tokens),
        *([summary_reply()] if compacts else []),
        Reply(tool_calls=(ToolCallReply("bash", {"command": "echo STEP-TWO-OUTPUT"}),),
              prompt_tokens=UNDER_THRESHOLD),
        Reply(text="TASK-DONE", prompt_tokens=UNDER_THRESHOLD + 200),
    )



def test_threshold_crossed_mid_tool_loop_compacts_before_the_next_model_call(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    _tool_loop_script(scripted_server, OVER_THRESHOLD)
    h.session.prompt("Run the two steps.")
    agent = h.agent_requests()
    # The request that follows the first tool result is the first one after the compaction.
    after_tool = agent[3]
    assert "STEP-ONE-OUTPUT" in request_text(after_tool)
    assert summary_in(after_tool)
    assert "EARLY-QUESTION" not in outside_summary(after_tool)
    requests = scripted_server.requests
    assert requests.index(h.summarizer_requests()[0]) == requests.index(after_tool) - 1
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result is not None) for s, e in pairs] == [("threshold", True)]


def test_task_continues_to_its_answer_after_a_mid_loop_compaction(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    two_finished_turns(h)
    _tool_loop_script(scripted_server, OVER_THRESHOLD)
    final = h.session.prompt("Run the two steps.")
    assert final is not None and final["content"] == [{"type": "text", "text": "TASK-DONE"}]
    assert final["stopReason"] == "stop"
    assert len(h.agent_requests()) == 5  # 2 history prompts + 3 calls of the task, no new user prompt
    assert "STEP-TWO-OUTPUT" in request_text(h.agent_requests()[-1])
    assert scripted_server.pending == 0
    user_texts = [m["content"] for m in h.agent_requests()[-1]["messages"] if m["role"] == "user"]
    assert sum("Run the two steps." in str(t) for t in user_texts) <= 1


def test_compaction_disabled_skips_threshold(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, enabled=False))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    two_finished_turns(h)
    _tool_loop_script(scripted_server, OVER_THRESHOLD, compacts=False)
    final = h.session.prompt("Run the two steps.")
    assert final is not None and final["content"] == [{"type": "text", "text": "TASK-DONE"}]
    assert [e for e in h.events if isinstance(e, (CompactionStart, CompactionEnd))] == []
    assert h.summarizer_requests() == []


def test_auto_compaction_off_skips_threshold(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, auto_compact=False)
    _three_turns(h, OVER_THRESHOLD)
    assert [e for e in h.events if isinstance(e, (CompactionStart, CompactionEnd))] == []
    assert h.summarizer_requests() == []


def test_resumed_session_past_the_threshold_compacts_before_the_prompt(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    first = make_harness(scripted_server, tmp_path)
    _three_turns(first, UNDER_THRESHOLD, compacts=False)
    scripted_server.enqueue(summary_reply())
    assert first.session.compact() is not None
    # A reply after that compaction reports a full context, but this run had auto-compaction off.
    first.session.set_auto_compaction(False)
    scripted_server.enqueue(Reply(text=padded("ANSWER-FOUR"), prompt_tokens=OVER_THRESHOLD))
    first.session.prompt(padded("QUESTION-FOUR"))
    resumed = make_harness(scripted_server, tmp_path,
                           store=SessionStore.open(first.path, str(first.cwd), 1_700_000_000_000))
    scripted_server.enqueue(summary_reply(), Reply(text="FIFTH-ANSWER"))
    final = resumed.session.prompt("QUESTION-FIVE")
    assert final is not None and final["content"] == [{"type": "text", "text": "FIFTH-ANSWER"}]
    assert [(s.reason, e.result is not None) for s, e in assert_compactions_paired(resumed.events)] == [
        ("threshold", True)
    ]
    assert summary_in(resumed.agent_requests()[-1])


def test_switching_to_a_smaller_window_compacts_with_the_new_model(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    _three_turns(h, 5_000)
    small = LiteLLMModel(ModelInfo("openai/small-scripted", "openai", 6_000, None), api_base=scripted_server.base_url,
                         api_key="test", retry=SETTINGS.retry)
    scripted_server.enqueue(summary_reply())
    h.session.set_model(small)
    assert [(s.reason, e.result is not None) for s, e in assert_compactions_paired(h.events)] == [("threshold", True)]
    assert h.summarizer_requests()[0]["model"] == "small-scripted"
    change = [e for e in h.entries() if e["type"] == "model_change"]
    # The model the session opened with, then the switch.
    assert [(e["provider"], e["modelId"]) for e in change] == [("openai", "scripted"), ("openai", "small-scripted")]


def test_nothing_to_compact_in_a_long_loop_stays_silent(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    # One prompt, already past the threshold, with nothing before it that could be summarized.
    scripted_server.enqueue(
        *(Reply(tool_calls=(ToolCallReply("ls", {}),), prompt_tokens=OVER_THRESHOLD) for _ in range(3)),
        Reply(text="FINISHED", prompt_tokens=OVER_THRESHOLD),
    )
    final = h.session.prompt("Look around three times.")
    assert final is not None and final["content"] == [{"type": "text", "text": "FINISHED"}]
    assert [e for e in h.events if isinstance(e, (CompactionStart, CompactionEnd))] == []
    assert h.summarizer_requests() == []


def test_a_reserve_not_below_the_window_is_fitted_and_never_makes_the_threshold_negative(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, reserve_tokens=20_000))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    two_finished_turns(h)  # 1,000 tokens each: far under a working threshold
    usage = h.session.context_usage()
    assert (usage.context_window, usage.threshold) == (10_000, 7_500)  # reserve: a quarter of the window
    assert [e for e in h.events if isinstance(e, (CompactionStart, CompactionEnd))] == []
    assert h.summarizer_requests() == []
    big = LiteLLMModel(ModelInfo("openai/big-scripted", "openai", 100_000, None), api_base=scripted_server.base_url,
                       api_key="test", retry=SETTINGS.retry)
    h.session.set_model(big)  # the setting as given fits this window: it applies again
    assert h.session.context_usage().threshold == 80_000

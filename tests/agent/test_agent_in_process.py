"""Agent behaviour on the in-process ``ScriptedModel``: examples of fast feature tests.

A few of the HTTP-harness tests (threshold, mid-loop, overflow, cancel) written again against the
in-process model, plus what the UI may read from a session. Same session, store, tools and files;
only the model differs. The HTTP versions stay: they also cover what litellm makes of each request.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
from agent_harness import (
    OVER_THRESHOLD,
    SETTINGS,
    SUMMARY,
    UNDER_THRESHOLD,
    ModelHarness,
    assert_compactions_paired,
    chat_request_text,
    make_model_harness,
    outside_summary,
    padded,
    scripted_summary,
    summary_leads,
)

from pi_compact.agent.compaction.reasons import OVERFLOW_GIVE_UP
from pi_compact.agent.events import CompactionEnd
from pi_compact.cancel import CancelToken
from pi_compact.compaction.kept import without_blocks
from pi_compact.compaction.tokens import estimate_tokens_auto, estimate_tokens_chars4
from pi_compact.errors import AuthError
from pi_compact.llm.scripted import NO_SCRIPTED_REPLY, ScriptedCall, ScriptedReply
from pi_compact.settings import CompactionSettings

OVERFLOW = ScriptedReply(error="prompt is too long: 12000 tokens > 10000 maximum", prompt_tokens=0)


def _two_finished_turns(h: ModelHarness) -> None:
    h.model.enqueue(
        ScriptedReply(text=padded("EARLY-ANSWER"), prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text=padded("LATER-ANSWER"), prompt_tokens=UNDER_THRESHOLD),
    )
    h.session.prompt(padded("EARLY-QUESTION"))
    h.session.prompt(padded("LATER-QUESTION"))


def test_threshold_crossed_by_a_run_compacts_once_after_it(tmp_path: Path) -> None:
    h = make_model_harness(
        tmp_path,
        ScriptedReply(text=padded("ANSWER-ONE"), prompt_tokens=UNDER_THRESHOLD),
        ScriptedReply(text=padded("ANSWER-TWO"), prompt_tokens=OVER_THRESHOLD),
        scripted_summary(),
    )
    for marker in ("QUESTION-ONE", "QUESTION-TWO"):
        assert (h.session.prompt(padded(marker)) or {}).get("stopReason") == "stop"
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result is not None, e.error_message) for s, e in pairs] == [("threshold", True, None)]
    assert [without_blocks(e["summary"]) for e in h.entries() if e["type"] == "compaction"] == [SUMMARY]
    assert len(h.summarizer_requests()) == 1
    assert "QUESTION-ONE" in chat_request_text(h.summarizer_requests()[0])


def test_threshold_crossed_mid_tool_loop_compacts_before_the_next_model_call(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path)
    _two_finished_turns(h)
    h.model.enqueue(
        ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": "echo STEP-ONE-OUTPUT"}),),
                      prompt_tokens=OVER_THRESHOLD),
        scripted_summary(),
        ScriptedReply(text="TASK-DONE", prompt_tokens=UNDER_THRESHOLD),
    )
    final = h.session.prompt("Run the step.")
    assert final is not None and final["content"] == [{"type": "text", "text": "TASK-DONE"}]
    after_tool = h.agent_requests()[-1]
    assert summary_leads(after_tool)
    assert "STEP-ONE-OUTPUT" in chat_request_text(after_tool)
    assert "EARLY-QUESTION" not in outside_summary(after_tool)
    assert h.model.history.index(h.summarizer_requests()[0]) == h.model.history.index(after_tool) - 1


def test_overflow_compacts_and_retries_once_without_the_failed_reply(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path)
    _two_finished_turns(h)
    h.model.enqueue(OVERFLOW, scripted_summary(), "RETRY-ANSWER")
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["content"] == [{"type": "text", "text": "RETRY-ANSWER"}]
    pairs = assert_compactions_paired(h.events)
    assert [(s.reason, e.result is not None, e.will_retry) for s, e in pairs] == [("overflow", True, True)]
    retried = h.agent_requests()[-1]
    assert len(h.agent_requests()) == 4  # 2 history + the overflowing one + exactly one retry
    assert summary_leads(retried) and retried.messages[-1]["role"] == "user"


def test_persistent_overflow_retries_once_then_gives_up(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path)
    _two_finished_turns(h)
    h.model.enqueue(OVERFLOW, scripted_summary(), OVERFLOW, "NEVER-SENT")
    final = h.session.prompt("NEW-QUESTION")
    assert final is not None and final["stopReason"] == "error"
    assert len(h.agent_requests()) == 4
    ends = [e for e in h.events if isinstance(e, CompactionEnd)]
    assert [(e.result is None, e.error_message) for e in ends] == [(False, None), (True, OVERFLOW_GIVE_UP)]


def test_a_cancelled_compaction_writes_nothing(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path)
    _two_finished_turns(h)
    before = h.path.read_bytes()
    h.model.enqueue(scripted_summary(delay_s=30))
    token = CancelToken()
    threading.Timer(0.2, token.cancel).start()
    assert h.session.compact(cancel=token) is None
    assert h.path.read_bytes() == before
    assert [(e.reason, e.aborted) for e in h.of_type("compaction_end")] == [("manual", True)]


def test_a_model_error_raised_before_sending_is_recorded_as_a_failed_reply(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, AuthError("Set OPENAI_API_KEY to use openai/scripted."))
    final = h.session.prompt("hello")
    assert final is not None and (final["stopReason"], final["errorMessage"]) == (
        "error", "Set OPENAI_API_KEY to use openai/scripted.")
    assert h.session.messages[-1] == final


def test_an_empty_queue_answers_with_a_placeholder_and_records_the_request(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path)
    final = h.session.prompt("anything")
    assert final is not None and final["content"] == [{"type": "text", "text": NO_SCRIPTED_REPLY}]
    assert [m["role"] for m in h.model.history[0].messages] == ["user"]


# ---- what the UI reads ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["store", "model", "settings", "messages", "compactions", "auto_compact"])
def test_the_session_state_the_ui_reads_cannot_be_assigned(tmp_path: Path, name: str) -> None:
    h = make_model_harness(tmp_path)
    with pytest.raises(AttributeError):
        setattr(h.session, name, getattr(h.session, name))


def test_the_session_has_one_estimator_which_follows_the_settings(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path)  # the harness settings say chars4
    assert h.session.estimator is estimate_tokens_chars4
    h.session.set_settings(replace(SETTINGS, compaction=CompactionSettings(token_estimator="auto")))
    assert h.session.estimator is estimate_tokens_auto


def test_reload_context_picks_up_what_was_appended_to_the_file(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, "first answer")
    h.session.prompt("first question")
    note = {"role": "user", "content": [{"type": "text", "text": "WRITTEN-ELSEWHERE"}], "timestamp": 1}
    h.session.store.append_message(note, 2)
    assert h.session.messages[-1] != note
    h.session.reload_context()
    assert h.session.messages[-1] == note

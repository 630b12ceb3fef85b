"""The summary asked on the last chat request's prefix (``compaction.reuse``, issue 24): which prefix,
what the request carries, and the one fall back to the serialized way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from builders import (
    assistant,
    chain,
    coding_session,
    compaction,
    compaction_settings,
    split_turn_session,
    structured_summary,
    user,
)

from pi_compact.agent.request import request_overhead
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.prompts import (
    HISTORY_HEADINGS,
    SPLIT_TURN_SEPARATOR,
    SYSTEM_PROMPT,
    TURN_PREFIX_HEADINGS,
    history_instruction,
    turn_instruction,
)
from pi_compact.compaction.reuse import PrefixShape, reusable_prefix
from pi_compact.compaction.summarize import CompactionResult, SummaryBudget, summarize
from pi_compact.compaction.tokens import estimate_text_tokens, estimate_tokens_auto
from pi_compact.llm.protocol import ChatRequest, ModelInfo, ToolSpec
from pi_compact.llm.scripted import ScriptedCall, ScriptedModel, ScriptedReply
from pi_compact.messages import Message
from pi_compact.session.context import project_path
from pi_compact.session.entries import Entry

INFO = ModelInfo("openai/scripted", "openai", 128_000, None)
TOOLS = (ToolSpec("read", "Read a file.", {"type": "object"}),)
BUDGET = SummaryBudget.for_model(128_000, None, 1000)
TURN_SUMMARY = "## Original Request\nRun the tests.\n\n## Early Progress\n- ran them\n\n## Context for Suffix\n- (none)"


def _plan(entries: list[Entry]) -> tuple[CompactionPlan, list[Message]]:
    plan = prepare_compaction(entries, compaction_settings().compaction)
    assert plan is not None
    return plan, list(project_path(entries).messages)


def _sent(context: Sequence[Message], extra: Sequence[Message] = ()) -> ChatRequest:
    """The chat request made after ``context`` (what ``Requests.next`` would have built)."""
    return ChatRequest("You are the agent.", [*with_recall_hint(context, False), *extra], TOOLS, None,
                       thinking="medium", cache="long", session_id="session-1")


def _shape(entries: list[Entry]) -> tuple[CompactionPlan, PrefixShape]:
    plan, context = _plan(entries)
    # The reply came after the request: the request held everything but the last message.
    shape = reusable_prefix(_sent(context[:-1]), context, plan, lambda ms: with_recall_hint(ms, False))
    assert shape is not None
    return plan, shape


def _summarize(plan: CompactionPlan, model: ScriptedModel, shape: PrefixShape | None) -> CompactionResult:
    return summarize(plan, model, BUDGET, shape=shape, run_parallel=lambda a, b: (a(), b()))


def _last_text(request: ChatRequest) -> str:
    return "".join(part.get("text", "") for part in request.messages[-1]["content"])


def test_the_reused_prefix_is_the_sent_messages_before_the_cut() -> None:
    plan, context = _plan(coding_session())
    shape = reusable_prefix(_sent(context[:-1]), context, plan, lambda ms: with_recall_hint(ms, False))
    assert shape is not None
    assert list(shape.history) == with_recall_hint(context[:-2], False)  # entries 0-9; [user, assistant] kept
    assert shape.turn == shape.history


def test_no_prefix_without_a_chat_request() -> None:
    plan, context = _plan(coding_session())
    assert reusable_prefix(None, context, plan, lambda ms: with_recall_hint(ms, False)) is None


def test_no_prefix_when_the_chat_request_sent_other_messages() -> None:
    plan, context = _plan(coding_session())
    edited = [*context[:3], user("an edited message"), *context[4:-1]]
    assert reusable_prefix(_sent(edited), context, plan, lambda ms: with_recall_hint(ms, False)) is None


def test_no_prefix_when_the_chat_request_ended_before_the_cut() -> None:
    plan, context = _plan(coding_session())
    assert reusable_prefix(_sent(context[:5]), context, plan, lambda ms: with_recall_hint(ms, False)) is None


def test_a_recalled_attachment_after_the_context_does_not_spoil_the_prefix() -> None:
    plan, context = _plan(coding_session())
    recalled = user("[recalled] the original excerpt")
    shape = reusable_prefix(_sent(context[:-1], [recalled]), context, plan, lambda ms: with_recall_hint(ms, False))
    assert shape is not None and recalled not in shape.history


def test_the_summary_request_continues_the_chat_request() -> None:
    plan, shape = _shape(coding_session())
    model = ScriptedModel(INFO, structured_summary("REUSED"))
    result = _summarize(plan, model, shape)
    [request] = model.history
    assert result.source == "model" and "REUSED" in result.summary
    assert (request.system, tuple(request.tools)) == ("You are the agent.", TOOLS)
    assert (request.thinking, request.cache, request.session_id) == ("medium", "long", "session-1")
    assert list(request.messages[:-1]) == list(shape.history)
    assert request.messages[-1]["role"] == "user" and _last_text(request) == history_instruction(False, None)
    assert request.max_tokens is None  # thinking is on: the chat request's cap and budget, so its cache holds
    assert result.details["summaryRequest"] == {"shape": "prefix", "prefixMessages": len(shape.turn)}


def test_without_thinking_the_summary_request_asks_for_the_summary_budget() -> None:
    plan, shape = _shape(coding_session())
    shape = PrefixShape(replace(shape.request, thinking=None), shape.history, shape.turn)
    model = ScriptedModel(INFO, structured_summary())
    _summarize(plan, model, shape)
    assert [r.max_tokens for r in model.history] == [BUDGET.history_max_tokens]


def test_the_instruction_says_to_stop_and_keeps_the_required_structure() -> None:
    text = history_instruction(False, "focus on the flag")
    assert "do not call any tool" in text and text.endswith("Additional focus: focus on the flag")
    assert all(heading in text for heading in HISTORY_HEADINGS)
    assert all(heading in turn_instruction(None) for heading in TURN_PREFIX_HEADINGS)


def test_a_tool_call_falls_back_to_the_serialized_request_once() -> None:
    plan, shape = _shape(coding_session())
    model = ScriptedModel(INFO, ScriptedReply(tool_calls=(ScriptedCall("read", {"path": "a.py"}),)),
                          structured_summary("SERIAL"))
    result = _summarize(plan, model, shape)
    assert [r.system for r in model.history] == ["You are the agent.", SYSTEM_PROMPT]
    assert "<conversation>" in _last_text(model.history[1]) and "SERIAL" in result.summary
    assert result.details["summaryRequest"] == {
        "shape": "serialized", "prefixNotUsed": "the model called a tool instead of writing the summary"}


def test_a_reply_without_the_sections_falls_back_to_the_serialized_request() -> None:
    plan, shape = _shape(coding_session())
    model = ScriptedModel(INFO, "Sure, I will keep going with the tests.", structured_summary("SERIAL"))
    result = _summarize(plan, model, shape)
    assert [r.system for r in model.history] == ["You are the agent.", SYSTEM_PROMPT]
    assert result.source == "model" and "SERIAL" in result.summary
    assert result.details["summaryRequest"]["prefixNotUsed"] == "the reply lacked the required sections"


def test_a_failed_prefix_request_falls_back_to_the_serialized_request() -> None:
    plan, shape = _shape(coding_session())
    model = ScriptedModel(INFO, ScriptedReply(error="400 invalid request"), structured_summary("SERIAL"))
    result = _summarize(plan, model, shape)
    assert result.source == "model" and len(model.history) == 2
    assert "400 invalid request" in result.details["summaryRequest"]["prefixNotUsed"]


def test_a_prefix_that_leaves_no_room_for_the_answer_is_not_sent() -> None:
    plan, shape = _shape(coding_session())
    text = history_instruction(False, None)
    assert shape.fits(shape.history, text, 1_000, 4_000) and not shape.fits(shape.history, text, 3_100, 4_000)
    small = SummaryBudget(context_window=4_000, history_max_tokens=3_100, prefix_max_tokens=500)
    model = ScriptedModel(INFO, *[structured_summary("SERIAL")] * 6)
    result = summarize(plan, model, small, shape=shape)
    assert all(r.system == SYSTEM_PROMPT for r in model.history)  # nothing was asked on the prefix
    assert "too little room" in result.details["summaryRequest"]["prefixNotUsed"]


def test_an_update_asks_to_update_the_checkpoint_the_prefix_starts_with() -> None:
    # After a compaction that kept entries 10-11, four more turns: the next compaction updates the summary.
    entries = chain(*coding_session(), compaction("## Goal\nOLD-GOAL", "test-id-10"),
                    user("Next: rename the flag. " + "y" * 1600), assistant("Renamed it. " + "z" * 1600),
                    user("Now document it. " + "w" * 1600), assistant("Documented. " + "v" * 1600))
    plan, shape = _shape(entries)
    assert plan.previous_summary is not None and "OLD-GOAL" in plan.previous_summary
    model = ScriptedModel(INFO, structured_summary("UPDATED"))
    _summarize(plan, model, shape)
    first = model.history[0].messages[0]
    assert "OLD-GOAL" in "".join(part.get("text", "") for part in first["content"])
    assert _last_text(model.history[0]) == history_instruction(True, None)


def test_a_split_turn_asks_both_parts_on_their_own_prefixes() -> None:
    plan, shape = _shape(split_turn_session())
    assert plan.is_split_turn and len(shape.turn) > len(shape.history)
    model = ScriptedModel(INFO, structured_summary("HISTORY"), TURN_SUMMARY)
    result = _summarize(plan, model, shape)
    history, turn = model.history
    assert list(history.messages[:-1]) == list(shape.history) and list(turn.messages[:-1]) == list(shape.turn)
    assert _last_text(turn) == turn_instruction(None)
    assert SPLIT_TURN_SEPARATOR + TURN_SUMMARY in result.summary and "HISTORY" in result.summary


def test_the_gate_retry_stays_on_the_prefix_and_names_the_problem() -> None:
    plan, shape = _shape(coding_session())
    empty_steps = structured_summary("FIRST").replace("1. continue", "")
    model = ScriptedModel(INFO, empty_steps, structured_summary("SECOND"))
    result = _summarize(plan, model, shape)
    assert [r.system for r in model.history] == ["You are the agent.", "You are the agent."]
    retry = _last_text(model.history[1])
    assert "rejected by the quality check" in retry and "Next Steps is empty" in retry
    assert "SECOND" in result.summary and result.details["summaryRequest"]["shape"] == "prefix"


def test_the_serialized_summary_request_is_not_marked_for_caching() -> None:
    plan, _ = _plan(coding_session())
    model = ScriptedModel(INFO, structured_summary())
    summarize(plan, model, BUDGET)
    assert [r.cache for r in model.history] == ["none"]
    assert all("summaryRequest" not in r for r in [summarize(plan, ScriptedModel(INFO, structured_summary()),
                                                              BUDGET).details])


def test_room_for_the_answer_counts_system_prompt_and_tools_as_the_context_size_does() -> None:
    _, shape = _shape(coding_session())
    text = history_instruction(False, None)
    overhead = request_overhead(shape.request.system, TOOLS, (), estimate_tokens_auto)
    size = overhead + sum(estimate_tokens_auto(m) for m in shape.history) + estimate_text_tokens(text)
    assert shape.fits(shape.history, text, 4_000 - size, 4_000)
    assert not shape.fits(shape.history, text, 4_000 - size + 1, 4_000)

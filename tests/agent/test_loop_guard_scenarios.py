"""Loop guard acceptance: futile automatic compactions stop after two, naming the top consumer.

Each scenario runs a real session over the scripted server (litellm path). Every agent reply reports
``prompt_tokens`` over the 8 000-token threshold, as a provider would when something compaction
cannot shrink fills the window; the guard must stop after at most two summarizer calls and name the
consumer that is really to blame.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

from agent_harness import (
    OVER_THRESHOLD,
    SETTINGS,
    Harness,
    _system_of,
    make_harness,
    padded,
    summary_reply,
)
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.compaction.guard import LoopGuard
from pi_compact.agent.events import CompactionEnd, Notice
from pi_compact.agent.system_prompt import build_system_prompt
from pi_compact.compaction.prompts import SYSTEM_PROMPT


def _route_summaries(server: ScriptedServer) -> None:
    """Every summarizer request (history or turn prefix) gets the scripted summary."""
    server.route = lambda body: summary_reply() if _system_of(body) == SYSTEM_PROMPT else None


def _prompts(h: Harness, server: ScriptedServer, count: int, tokens: int) -> list[Notice]:
    """``count`` one-turn prompts of about ``tokens`` each, every reply reporting a context over the threshold."""
    _route_summaries(server)
    server.enqueue(*(Reply(text=f"answer {i}", prompt_tokens=OVER_THRESHOLD) for i in range(count)))
    for i in range(count):
        h.session.prompt(padded(f"QUESTION-{i}", tokens))
    return _stop_notices(h)


def _stop_notices(h: Harness) -> list[Notice]:
    return [e for e in h.events if isinstance(e, Notice) and "Automatic compaction is off" in e.text]


def _assert_stopped_naming(h: Harness, notices: list[Notice], consumer: str, *, requests: int = 2) -> None:
    assert len(h.summarizer_requests()) <= requests
    assert len(h.of_type("compaction_start")) <= 2
    assert len(notices) == 1, [e.text for e in h.events if isinstance(e, Notice)]
    largest = notices[0].text.split("Largest: ", 1)[1]
    assert largest.startswith(consumer), largest


def _agents_md_system(tmp_path: Path) -> str:
    return build_system_prompt(str(tmp_path), date(2026, 1, 1), ["bash"], padded("RULES", 7_000))


def test_huge_agents_md_in_the_system_prompt_is_named(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, system_prompt=_agents_md_system(tmp_path))
    notices = _prompts(h, scripted_server, 6, 400)
    _assert_stopped_naming(h, notices, "AGENTS.md in the system prompt, 7,0")


def test_keep_recent_tokens_close_to_the_window_is_named(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    settings = replace(SETTINGS, compaction=replace(SETTINGS.compaction, keep_recent_tokens=6_000))
    h = make_harness(scripted_server, tmp_path, settings=settings)
    notices = _prompts(h, scripted_server, 8, 2_000)
    _assert_stopped_naming(h, notices, "keepRecentTokens 6,000 of a 10,000 window")


def test_giant_tool_output_every_tool_turn_is_compacted_turn_by_turn_and_the_loop_finishes(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # The model reads the whole build log every tool turn: the newest message is always a huge tool
    # result and no cut point follows it. Issue 35.2: the cut goes before it, so each check summarizes
    # the reads before it (one summarizer call a turn), the context stays bounded and the guard stays off.
    # Tool-result clearing off: with it the older reads leave the request and fewer compactions run
    # (tests/agent/test_tool_clearing.py); this is about what compaction does on its own.
    no_clearing = replace(SETTINGS, compaction=replace(SETTINGS.compaction, clear_tool_results=False))
    h = make_harness(scripted_server, tmp_path, settings=no_clearing)
    (h.cwd / "build.log").write_text("".join(f"line {i:05d} of the build output ......\n" for i in range(600)))
    _route_summaries(scripted_server)
    cat = Reply(tool_calls=(ToolCallReply("bash", {"command": "cat build.log"}),), prompt_tokens=3_000)
    scripted_server.enqueue(cat, cat, cat, Reply(text="DONE", prompt_tokens=3_000))
    final = h.session.prompt("Build it. " + padded("q", 100))
    assert final is not None and final["content"] == [{"type": "text", "text": "DONE"}]
    written = [e.result for e in h.events if isinstance(e, CompactionEnd) and e.result is not None]
    assert len(written) == 3 and len(h.summarizer_requests()) == 3
    assert all(result["details"]["keptOverBudget"] is True for result in written)
    assert _stop_notices(h) == [] and h.session.auto_compact and not h.session.compaction_stopped
    assert scripted_server.pending == 0


def test_after_the_guard_stops_no_automatic_compaction_starts(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path, system_prompt=_agents_md_system(tmp_path))
    _prompts(h, scripted_server, 6, 400)
    starts = len(h.of_type("compaction_start"))
    scripted_server.enqueue(Reply(text="again", prompt_tokens=OVER_THRESHOLD))
    h.session.prompt("next")
    assert len(h.of_type("compaction_start")) == starts
    assert scripted_server.pending == 0


# ---- the guard's rules ---------------------------------------------------------------------------


def test_guard_stops_after_two_futile_compactions_in_a_row() -> None:
    guard = LoopGuard()
    guard.compacted(10_000, 9_000, 8_000)  # frees 10 %: futile
    assert not guard.should_stop
    guard.compacted(10_000, 9_500, 8_000)
    assert guard.should_stop


def test_a_compaction_that_holds_for_two_turns_resets_the_streak() -> None:
    guard = LoopGuard()
    guard.futile()
    guard.compacted(10_000, 2_000, 8_000)
    guard.observe(1, 3_000, 8_000)
    guard.observe(2, 4_000, 8_000)
    guard.futile()
    assert guard.streak == 1 and not guard.should_stop


def test_refill_within_two_turns_is_futile() -> None:
    guard = LoopGuard()
    guard.compacted(10_000, 2_000, 8_000)
    guard.observe(1, 8_500, 8_000)
    guard.compacted(10_000, 2_000, 8_000)
    guard.observe(2, 7_000, 8_000)
    guard.observe(2, 7_000, 8_000)  # the same turn seen twice counts once
    guard.observe(3, 8_600, 8_000)
    assert guard.should_stop


def test_no_gain_on_an_automatic_compaction_is_skipped_with_the_diagnosis(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    system = build_system_prompt(str(tmp_path), date(2026, 1, 1), ["bash"], padded("RULES", 7_000))
    h = make_harness(scripted_server, tmp_path, system_prompt=system)
    _route_summaries(scripted_server)
    # A tiny history: the summary would not be smaller than what it replaces.
    scripted_server.enqueue(Reply(text="hi"), Reply(text="ok", prompt_tokens=OVER_THRESHOLD))
    h.session.prompt("hello")
    h.session.prompt(padded("MORE", 200))
    ends = [e for e in h.events if isinstance(e, CompactionEnd)]
    assert [e.skipped for e in ends] == ["no_gain"]
    assert ends[0].error_message is not None and "Largest: AGENTS.md in the system prompt" in ends[0].error_message


def test_declared_window_far_larger_than_the_providers_is_corrected_from_its_error(tmp_path: Path) -> None:
    # Declared 200 000, the provider's real limit 8 192: its overflow error states it, so the window is
    # learned and named, one compaction makes room and the retry succeeds (one summarizer call).
    from agent_harness import make_model_harness, scripted_summary

    from pi_compact.llm.learned import LearningModel
    from pi_compact.llm.protocol import ModelInfo
    from pi_compact.llm.scripted import ScriptedReply

    h = make_model_harness(tmp_path, info=ModelInfo("openai/scripted", "openai", 200_000, None))
    told: list[str] = []
    h.session.set_model(LearningModel(h.model, told.append))
    h.model.enqueue(ScriptedReply(text="one", prompt_tokens=3_000), ScriptedReply(text="two", prompt_tokens=6_000),
                    ScriptedReply(error="This model's maximum context length is 8192 tokens. However, your "
                                        "messages resulted in 9000 tokens.", prompt_tokens=0),
                    scripted_summary(), ScriptedReply(text="three", prompt_tokens=2_000))
    for i in range(3):
        h.session.prompt(padded(f"QUESTION-{i}", 1_500))
    assert h.session.model.info.context_window == 8192
    assert len(h.summarizer_requests()) == 1
    assert len(told) == 1 and "8,192-token context window" in told[0] and "not 200,000" in told[0]
    assert [m for m in h.session.messages if m.get("role") == "assistant"][-1]["content"][0]["text"] == "three"


def test_a_huge_call_argument_is_named_as_the_largest_consumer_not_a_small_tool_result() -> None:
    from pi_compact.agent.compaction.guard import top_consumers
    from pi_compact.compaction.budgets import Budgets
    from pi_compact.compaction.tokens import estimator_for
    from pi_compact.settings import Settings

    arguments = {"path": "notes.md", "content": "x" * 400_000}
    call = {"type": "toolCall", "id": "c1", "name": "write", "arguments": arguments}
    branch = [
        {"type": "message", "id": "u1", "message": {"role": "user", "content": [{"type": "text", "text": "go"}]}},
        {"type": "message", "id": "a1", "message": {"role": "assistant", "content": [call], "stopReason": "toolUse"}},
        {"type": "message", "id": "t1", "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "write",
                                                    "content": [{"type": "text", "text": "wrote it"}]}},
    ]
    top = top_consumers("system", branch, estimator_for("chars4"), Budgets.of(Settings().compaction, 200_000))
    assert top[0][1].startswith("arguments of the `write notes.md` call, entry a1")


def test_an_over_budget_compaction_left_past_the_threshold_is_not_futile_when_it_freed_enough() -> None:
    # Kept more than keepRecentTokens because nothing after the big newest message could be cut: it did
    # all it could, and the next message gives the cut a place. Twice in a row must not stop compaction.
    guard = LoopGuard()
    guard.compacted(14_000, 7_000, 6_384, kept_over_budget=True)
    guard.compacted(14_000, 7_000, 6_384, kept_over_budget=True)
    guard.observe(1, 7_500, 6_384)
    assert guard.streak == 0 and not guard.should_stop


def test_an_over_budget_compaction_that_freed_little_is_still_futile() -> None:
    guard = LoopGuard()
    guard.compacted(10_000, 9_500, 8_000, kept_over_budget=True)
    guard.compacted(10_000, 9_500, 8_000, kept_over_budget=True)
    assert guard.should_stop and guard.whys == ["freed_little", "freed_little"]

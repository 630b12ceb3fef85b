"""Issue 44 item 6: "a compaction that gains 147 tokens, then advice that cannot help" (13,630 -> ~13,483, then
"Lower compaction.keepRecentTokens" with it at 2,000 and one 11,579-token message in the way). Clearing runs
first; a compaction runs only when it can still help; no setting is advised that would not change the outcome."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from agent_harness import SUMMARY, _system_of, make_harness
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.compaction.guard import still_too_full
from pi_compact.agent.events import Notice
from pi_compact.compaction.prompts import SYSTEM_PROMPT
from pi_compact.compaction.tokens import ContextUsage, estimate_tokens_chars4
from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

# The newcomer's walk: the embedded model's 16,384 window, reserveTokens 3,000, keepRecentTokens 2,000.
LOCAL = ModelInfo("openai/local", "openai", 16_384, 1_024)
NEWCOMER = Settings(retry=RetrySettings(enabled=False), compaction=CompactionSettings(
    reserve_tokens=3_000, keep_recent_tokens=2_000, token_estimator="chars4"))
NOTES = "".join(f"{i:04d} ## Meeting {i // 40}: discussed the release plan and who owns each step.\n"
                for i in range(640))  # ~12k tokens through ``read``


def route_summaries(server: ScriptedServer) -> None:
    server.route = lambda body: Reply(text=SUMMARY) if _system_of(body) == SYSTEM_PROMPT else None


def test_a_compaction_that_cannot_help_is_not_asked_for_nor_a_keep_figure_advised(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path, settings=NEWCOMER, info=LOCAL)
    (h.cwd / "NOTES.md").write_text(NOTES, encoding="utf-8")
    route_summaries(scripted_server)
    scripted_server.enqueue(Reply(text="Hello.", count_tokens=True),
                            Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), count_tokens=True),
                            Reply(text="Not found in the notes.", count_tokens=True))
    h.session.prompt("hi")
    final = h.session.prompt("What codename was decided at meeting 137? It is in NOTES.md.")
    assert final is not None and final["content"] == [{"type": "text", "text": "Not found in the notes."}]
    assert h.of_type("compaction_start") == [] and h.summarizer_requests() == []
    texts = [e.text for e in h.events if isinstance(e, Notice)]
    assert not any("Lower compaction.keepRecentTokens" in text for text in texts)
    [skipped] = [i for i, text in enumerate(texts) if text.startswith("Automatic compaction skipped")]
    assert "whatever compaction.keepRecentTokens is" in texts[skipped]
    # Once the model has answered from it, the read is an old tool result: clearing takes it out of the requests.
    assert any(text.startswith("Cleared 1 old tool result") for text in texts[skipped + 1:])


def _usage(tokens: int, threshold: int) -> ContextUsage:
    return ContextUsage(tokens, 16_384, threshold, True)


def test_the_keep_figure_is_advised_only_where_a_smaller_one_would_bring_the_context_under_the_threshold() -> None:
    summary = {"role": "compactionSummary", "summary": "s" * 400, "tokensBefore": 9_000, "timestamp": 1}
    talk = [{"role": "user" if i % 2 == 0 else "assistant", "content": [{"type": "text", "text": "x" * 4_000}],
             "timestamp": i} for i in range(2, 8)]
    # Six 1,000-token messages kept: a smaller keep would drop them and bring 6,200 under 6,000.
    advised = still_too_full(_usage(6_200, 6_000), [summary, *talk], estimate_tokens_chars4, 6_000)
    assert "Lower compaction.keepRecentTokens (now 6,000)" in advised
    # One 11,500-token prompt: no keep figure changes what is kept.
    prompt = {"role": "user", "content": [{"type": "text", "text": "y" * 46_000}], "timestamp": 9}
    refused = still_too_full(_usage(13_483, 13_384), [summary, prompt], estimate_tokens_chars4, 2_000)
    assert "keepRecentTokens" in refused and "Lower compaction.keepRecentTokens" not in refused


def test_a_kept_newest_tool_result_in_the_way_is_said_to_go_out_cut_without_advice_that_cannot_help() -> None:
    # The walk: "... use a model with a larger window" after the compaction beside the NOTES.md read, when the
    # request was about to carry the read cut to what fits.
    summary = {"role": "compactionSummary", "summary": "s" * 400, "tokensBefore": 9_000, "timestamp": 1}
    ask = {"role": "user", "content": [{"type": "text", "text": "Read NOTES.md."}], "timestamp": 7}
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read",
                                              "arguments": {"path": "NOTES.md"}}], "timestamp": 8}
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
              "content": [{"type": "text", "text": "y" * 46_000}], "timestamp": 9}
    said = still_too_full(_usage(14_239, 13_384), [summary, ask, call, result], estimate_tokens_chars4, 2_000)
    assert "could not bring" not in said and "larger window" not in said and "keepRecentTokens" not in said
    assert said.startswith("The turn's newest tool result (read, about 11,500 tokens)")
    assert "carries it cut to what fits" in said and said.count(". ") == 0


def test_a_compaction_that_frees_enough_still_runs(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    # The same read after a long chat: summarizing the chat frees most of the context, so the compaction runs.
    settings = replace(NEWCOMER, compaction=replace(NEWCOMER.compaction, clear_tool_results=False))
    h = make_harness(scripted_server, tmp_path, settings=settings, info=LOCAL)
    (h.cwd / "NOTES.md").write_text(NOTES[: len(NOTES) // 2], encoding="utf-8")
    route_summaries(scripted_server)
    for i in range(6):
        scripted_server.enqueue(Reply(text=f"answer {i} " + "z" * 4_000, count_tokens=True))
        h.session.prompt(f"question {i}")
    scripted_server.enqueue(Reply(tool_calls=(ToolCallReply("read", {"path": "NOTES.md"}),), count_tokens=True),
                            Reply(text="Done.", count_tokens=True))
    h.session.prompt("Read NOTES.md.")
    assert len(h.of_type("compaction_start")) >= 1 and h.summarizer_requests()

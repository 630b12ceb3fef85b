"""The real agent on the fake Anthropic server (issue 21): a tool loop grows the context to the compaction
threshold of a 200k window with no request refused (the output cap shrinks instead of overflowing at ~136k),
the threshold compaction runs there, and every request carries pi's cache breakpoints."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_harness import SUMMARY, make_harness
from fakes.anthropic_cache import cost
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, text_reply
from fakes.cost_session import GrowingSession

from pi_compact.compaction.prompts import SYSTEM_PROMPT as SUMMARIZER_SYSTEM
from pi_compact.compaction.prompts import turn_instruction
from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
THRESHOLD = 200_000 - 16_384 - 4_000  # medium's cap (its budget and 8,192 for the answer) and the estimate's margin


# Tool-result clearing off: these are about the threshold compaction of a tool loop; with clearing the old
# reads leave the request instead (tests/agent/test_tool_clearing.py, benchmarks/bench_tool_clearing.py).
NO_CLEARING = CompactionSettings(clear_tool_results=False)


def test_the_agent_fills_to_the_threshold_without_a_refused_request(tmp_path: Path) -> None:
    settings = Settings(retry=RetrySettings(enabled=False), compaction=NO_CLEARING)
    with FakeAnthropicServer().start() as server:
        harness = make_harness(server, tmp_path, settings=settings, info=SONNET)  # type: ignore[arg-type]
        session = GrowingSession(harness.cwd, 195_000)
        summaries: list[dict[str, Any]] = []

        def route(body: dict[str, Any]) -> AnthropicReply:
            system = "".join(part.get("text", "") for part in body.get("system") or [])
            if SUMMARIZER_SYSTEM[:60] in system:
                summaries.append(body)
                return text_reply(SUMMARY)
            if summaries:  # compacted: the task ends here (reading on would fill the window again)
                return text_reply("Stopping after the compaction.")
            return session.route(body)

        server.route = route
        harness.session.prompt("Read part_000.txt, then each next part file, one at a time, until told to stop.")
        records = server.records
    assert [record.error for record in records if record.error is not None] == []
    starts = [event for event in harness.events if getattr(event, "type", "") == "compaction_start"]
    assert [event.reason for event in starts] == ["threshold"] and len(summaries) == 1
    agent = [record for record in records if record.body not in summaries]
    before = [record.prompt_tokens for record in agent]
    peak = max(before)
    assert THRESHOLD - 6_000 < peak <= 200_000 - 1024  # the fill ran up to the threshold, not to ~136k
    assert all(record.prompt_tokens + record.body["max_tokens"] <= 200_000 for record in records)
    # pi's three breakpoints; past the soft threshold a fourth at the planned compaction cut (issue 34)
    assert [count_cache_breakpoints(record.body) for record in agent if record.prompt_tokens < 100_000] == \
        [3] * len([record for record in agent if record.prompt_tokens < 100_000])
    assert {count_cache_breakpoints(record.body) for record in agent if record.prompt_tokens > 140_000} == {4}
    # One cap and one budget for the conversation (issue 43), before the compaction and after it: the 8,192 of
    # "medium" (the level a session runs Sonnet at by default, as pi does) and 8,192 for the answer after it.
    assert {r.body["max_tokens"] for r in agent} == {16_384}
    assert {r.body["thinking"]["budget_tokens"] for r in agent} == {8_192}


TURN_SUMMARY = ("## Original Request\nRead the part files.\n\n## Early Progress\n- read them\n\n"
                "## Context for Suffix\n- (none)")


def _compaction_cost(tmp_path: Path, reuse: str, talk: bool = False) -> tuple[float, list[Any]]:
    """Grow a session to a 150k threshold (reserve 50,000 on the 200k window) and compact there; the
    dollars of the summary requests at Sonnet prices (the fake's simulated cache), and their records.

    The session is one tool loop reading ~5k-token files, or with ``talk`` ~5k-token answers to one
    prompt after another (text the serialized way cannot truncate, as it does tool results)."""
    settings = Settings(retry=RetrySettings(enabled=False),
                        compaction=replace(NO_CLEARING, reserve_tokens=50_000, reuse_prefix=reuse))
    with FakeAnthropicServer().start() as server:
        harness = make_harness(server, tmp_path, settings=settings, info=SONNET)  # type: ignore[arg-type]
        session = GrowingSession(harness.cwd, 160_000)
        asked: list[dict[str, Any]] = []

        def route(body: dict[str, Any]) -> AnthropicReply:
            system = "".join(part.get("text", "") for part in body.get("system") or [])
            last = body["messages"][-1]["content"]
            text = "".join(p.get("text", "") for p in last) if isinstance(last, list) else str(last)
            if SUMMARIZER_SYSTEM[:60] in system or text.startswith(turn_instruction(None)[:60]):
                asked.append(body)
                return text_reply(TURN_SUMMARY if "too large to keep whole" in text else SUMMARY, output_tokens=600)
            if asked:
                return text_reply("Stopping after the compaction.")
            if talk:
                return text_reply(f"{text}: " + "lorem ipsum dolor sit amet " * 740, output_tokens=5_000)
            return session.route(body)

        server.route = route
        if talk:
            for part in range(40):
                if asked:
                    break
                harness.session.prompt(f"Write part {part} of the essay.")
        else:
            harness.session.prompt("Read part_000.txt, then each next part file, one at a time, until told to stop.")
        records = [r for r in server.records if r.body in asked]
    assert [e.reason for e in harness.events if getattr(e, "type", "") == "compaction_start"] == ["threshold"]
    assert [r.error for r in records] == [None] * len(records) and records
    return sum(cost(r.usage) for r in records), records


def test_a_threshold_compaction_at_150k_on_the_cached_prefix_costs_under_ten_cents(tmp_path: Path) -> None:
    reused, records = _compaction_cost(tmp_path / "reuse", "auto", talk=True)
    serialized, _ = _compaction_cost(tmp_path / "serialized", "never", talk=True)
    assert 120_000 < records[0].prompt_tokens < 150_000  # the prefix up to the cut (150k less the kept 20k)
    assert records[0].usage["cache_read_input_tokens"] > 0.9 * records[0].prompt_tokens
    assert reused <= 0.10 < 0.40 < serialized


def test_on_a_read_heavy_loop_auto_asks_serialized_which_costs_less_than_the_cached_prefix(tmp_path: Path) -> None:
    # The serialized way cuts each file read to 200 characters; the prefix reads the files whole from the
    # cache, which still costs more (issue 34: $0.065 against $0.030). "auto" prices both and asks serialized.
    auto, _ = _compaction_cost(tmp_path / "auto", "auto")
    prefix, records = _compaction_cost(tmp_path / "prefix", "always")
    serialized, serial_records = _compaction_cost(tmp_path / "serialized", "never")
    assert records[0].prompt_tokens > 10 * serial_records[0].prompt_tokens
    assert records[0].usage["cache_read_input_tokens"] > 0.9 * records[0].prompt_tokens
    assert auto == serialized < prefix

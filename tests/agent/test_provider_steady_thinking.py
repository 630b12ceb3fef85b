"""Issue 34 item 2: near the window a session at ``--thinking high`` keeps one thinking budget on every
request (Anthropic drops the cached messages whenever it changes, and so does the fake server) and compacts
where the budget would no longer fit, so cache reads stay above 90 % of each prompt between compactions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_harness import SUMMARY, make_harness
from cache_harness import asks_summary
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest
from fakes.anthropic_stream import AnthropicReply, text_reply
from fakes.cost_session import GrowingSession

from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)


def grow_towards_the_window(tmp_path: Path, thinking: str) -> tuple[list[RecordedRequest], list[RecordedRequest]]:
    """A read loop grown towards 195k at ``thinking`` (past where a 16,384 budget fits); the chat requests
    before the first compaction and the summary requests."""
    # Clearing off: this is about the thinking budget up to the compaction. With clearing on (and since clearing
    # starts at the same threshold) old reads are cleared instead, and the loop, which grows until a
    # compaction, would never end.
    settings = Settings(retry=RetrySettings(enabled=False), compaction=CompactionSettings(clear_tool_results=False))
    with FakeAnthropicServer().start() as server:
        harness = make_harness(server, tmp_path, settings=settings, info=SONNET, thinking=thinking)
        session = GrowingSession(harness.cwd, 195_000)
        summaries: list[dict[str, Any]] = []

        def route(body: dict[str, Any]) -> AnthropicReply:
            if asks_summary(body):
                summaries.append(body)
                return text_reply(SUMMARY)
            return text_reply("Stopping after the compaction.") if summaries else session.route(body)

        server.route = route
        harness.session.prompt("Read part_000.txt, then each next part file, one at a time, until told to stop.")
        records = list(server.records)
    assert [r.error for r in records if r.error is not None] == []
    assert [e.reason for e in harness.events if getattr(e, "type", "") == "compaction_start"] == ["threshold"]
    first = next(i for i, r in enumerate(records) if r.body in summaries)
    return records[:first], [r for r in records if r.body in summaries]


def test_thinking_high_near_the_window_keeps_one_budget_and_reads_the_cache(tmp_path: Path) -> None:
    chat, _ = grow_towards_the_window(tmp_path, "high")
    assert max(r.prompt_tokens for r in chat) > 165_000  # it got near the window (the threshold: 171,424)
    assert {r.body["thinking"]["budget_tokens"] for r in chat} == {16_384}
    assert {r.body["max_tokens"] for r in chat} == {16_384 + 8_192}  # the plan's cap, on every request
    # Each request adds a ~5.4k file: from ~60k on, what the previous request wrote is over 90 % of a prompt.
    near = [r for r in chat if r.prompt_tokens > 60_000]
    assert len(near) > 20 and all(r.usage["cache_read_input_tokens"] >= 0.9 * r.prompt_tokens for r in near)

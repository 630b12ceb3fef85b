"""The real agent on the fake Anthropic server (issue 21): a tool loop grows the context to the compaction
threshold of a 200k window with no request refused (the output cap shrinks instead of overflowing at ~136k),
the threshold compaction runs there, and every request carries pi's cache breakpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_harness import SUMMARY, make_harness
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, text_reply
from fakes.cost_session import GrowingSession

from pi_compact.compaction.prompts import SYSTEM_PROMPT as SUMMARIZER_SYSTEM
from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import RetrySettings, Settings

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
THRESHOLD = 200_000 - 16_384  # the default reserveTokens


def test_the_agent_fills_to_the_threshold_without_a_refused_request(tmp_path: Path) -> None:
    settings = Settings(retry=RetrySettings(enabled=False))
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
    assert all(count_cache_breakpoints(record.body) == 3 for record in agent)
    after = records[records.index(next(r for r in records if r.body in summaries)) + 1]
    # The kept replies' old usage does not squeeze the cap: back to pi's 32,000 plus the 8,192 budget of
    # "medium", the level a session runs Sonnet at by default (as pi does).
    assert after.body["max_tokens"] == 32_000 + 8_192

"""A request that carries automatic recall's excerpts marks the prompt cache at the context's end, before them
(found measuring issue 43's 40-file task): after a compaction each read loop request carried an excerpt, the last
breakpoint sat after it, and since the next request carries the context but not that excerpt, every request wrote
its whole prompt again (at 1.25x) instead of reading the previous one."""

from __future__ import annotations

from pathlib import Path

from agent_harness import make_harness
from fakes.anthropic_server import FakeAnthropicServer
from plan_harness import ReadFiles, asks_summary

from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

SONNET_60K = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 60_000, 64_000, reasoning=True)
# Clearing off: the compaction is what puts older reads where recall finds them.
SETTINGS = Settings(retry=RetrySettings(enabled=False), compaction=CompactionSettings(clear_tool_results=False))


def test_after_a_compaction_requests_with_recalled_excerpts_still_read_the_last_one_from_the_cache(
    tmp_path: Path,
) -> None:
    with FakeAnthropicServer().start() as server:
        h = make_harness(server, tmp_path, settings=SETTINGS, info=SONNET_60K)
        server.route = ReadFiles(h.cwd, 14, tokens=6_000, linked=True).route
        h.session.prompt("Read part_000.txt, then each next part file, one at a time, until told to stop.")
        records = list(server.records)
    assert [r.error for r in records if r.error is not None] == []
    # Each chat request that follows another reads what that one wrote: all of it but the excerpt it carried.
    pairs = [(before, r) for before, r in zip(records, records[1:], strict=False)
             if not asks_summary(before.body) and not asks_summary(r.body) and before.prompt_tokens < r.prompt_tokens]
    recalled = [(before, r) for before, r in pairs if "Recalled automatically" in str(before.body["messages"][-1])]
    assert len(recalled) >= 2, "automatic recall attached nothing: the case is not exercised"
    assert all(r.usage is not None and r.usage["cache_read_input_tokens"] >= 0.9 * before.prompt_tokens
               for before, r in recalled)

"""A summary asked on the chat request's prefix, as the fake Anthropic and Gemini servers validate it
(issue 24): the signed thinking of the prefix goes back unaltered, the thinking settings stay the chat
request's (Anthropic drops cached messages when they change), and Anthropic serves the prefix from its cache."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_harness import SETTINGS, SUMMARY, Harness, make_harness
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import text_reply, tool_reply
from fakes.gemini_reply import call_reply
from fakes.gemini_reply import text_reply as gemini_text
from fakes.gemini_server import FakeGeminiServer, signatures_in

from pi_compact.compaction.prompts import history_instruction
from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import RetrySettings

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
GEMINI = ModelInfo("gemini/gemini-2.5-pro", "google", 1_048_576, 65_536, reasoning=True)
# "always": these sessions are file reads, which the serialized way cuts short, so "auto" would price
# that way cheaper (``prefix_cost``); the prefix is asked anyway, to see the servers accept it.
SETTINGS_HERE = replace(SETTINGS, retry=RetrySettings(enabled=False),
                        compaction=replace(SETTINGS.compaction, reuse_prefix="always"))
READS = 3
WELCOME = "You're welcome. " + "ok " * 300  # long enough to be the whole kept part: the first turn is summarized


def _two_turns_then_compact(harness: Harness) -> dict[str, Any]:
    for index in range(READS):
        (harness.cwd / f"part_{index}.txt").write_text(f"part {index}: " + "lorem ipsum " * 800, encoding="utf-8")
    harness.session.prompt("Read part_0.txt, part_1.txt and part_2.txt.")
    harness.session.prompt("Thanks.")
    assert harness.session.compact() is not None
    [entry] = [e for e in harness.entries() if e["type"] == "compaction"]
    assert entry["summary"].startswith(SUMMARY)
    details: dict[str, Any] = entry["details"]
    return details


def _instruction_of(messages: list[dict[str, Any]]) -> str:
    content = messages[-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def test_anthropic_reads_the_summary_prefix_from_its_cache_with_the_same_thinking(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        harness = make_harness(server, tmp_path, settings=SETTINGS_HERE, info=SONNET,  # type: ignore[arg-type]
                               thinking="medium")
        server.enqueue(*(tool_reply("read", {"path": f"part_{i}.txt"}, thinking=f"Part {i} next.")
                         for i in range(READS)),
                       text_reply("All three read."), text_reply(WELCOME), text_reply(SUMMARY))
        details = _two_turns_then_compact(harness)
        records = server.records
    assert [r.error for r in records] == [None] * len(records)
    summary_request = records[-1]
    assert _instruction_of(summary_request.body["messages"]) == history_instruction(False, None)
    assert details["summaryRequest"]["shape"] == "prefix"
    assert summary_request.body["thinking"] == records[-2].body["thinking"] == {"type": "enabled",
                                                                                  "budget_tokens": 8192}
    assert summary_request.usage["cache_read_input_tokens"] > 0.8 * summary_request.prompt_tokens


def test_gemini_accepts_the_summary_prefix_with_its_thought_signatures(tmp_path: Path) -> None:
    server = FakeGeminiServer().start()
    try:
        harness = make_harness(server, tmp_path, settings=SETTINGS_HERE, info=GEMINI,  # type: ignore[arg-type]
                               thinking="medium")
        server.enqueue(*(call_reply("read", {"path": f"part_{i}.txt"}, thought=f"Part {i} next.")
                         for i in range(READS)),
                       gemini_text("All three read."), gemini_text(WELCOME), gemini_text(SUMMARY))
        details = _two_turns_then_compact(harness)
        assert server.rejections == []
        summary_request = server.requests[-1]
        assert details["summaryRequest"]["shape"] == "prefix"
        assert signatures_in(summary_request) == list(server.issued_signatures.values())
        assert history_instruction(False, None)[:60] in str(summary_request["contents"][-1])
    finally:
        server.stop()

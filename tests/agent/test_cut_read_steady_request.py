"""A read sent cut on an Anthropic model with thinking on (issue 44's changes to how a request is sized): the
requests around it keep one ``max_tokens`` and one thinking budget (the API drops its cached messages when
thinking settings change), and the next prompt's request carries the same cut, so it reads the cache the
request before it wrote instead of writing the whole context again. The fake server validates the requests
as the API does and simulates its prompt cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_harness import SUMMARY, make_harness, padded
from cache_harness import asks_summary
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, text_reply, tool_reply

from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

SMALL_SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 16_384, 64_000, reasoning=True)
CUT_NOTE = "Cut to fit the context window"


def _notes() -> str:
    return "\n".join(f"- meeting {n}: routine notes of the day, nothing decided" for n in range(1, 900)) + \
        "\n- meeting 900: decided the release codename COPPER-KITE\n"


def _tool_texts(body: dict[str, Any]) -> list[str]:
    return [str(part.get("content")) for message in body["messages"] if isinstance(message["content"], list)
            for part in message["content"] if part.get("type") == "tool_result"]


def test_a_read_sent_cut_keeps_the_thinking_budget_and_max_tokens_and_the_next_prompt_reads_the_cache(
    tmp_path: Path,
) -> None:
    settings = Settings(retry=RetrySettings(enabled=False),
                        compaction=CompactionSettings(reserve_tokens=4_000, keep_recent_tokens=2_000))
    replies = [text_reply(padded("EARLIER-ANSWER", 1_500)), tool_reply("read", {"path": "NOTES.md"}, thinking="t"),
               text_reply("COPPER-KITE."), text_reply("- meeting 900: decided the release codename COPPER-KITE")]
    with FakeAnthropicServer().start() as server:
        harness = make_harness(server, tmp_path, settings=settings, info=SMALL_SONNET, thinking="low")
        (harness.cwd / "NOTES.md").write_text(_notes())

        def route(body: dict[str, Any]) -> AnthropicReply:
            return text_reply(SUMMARY) if asks_summary(body) else replies.pop(0)

        server.route = route
        harness.session.prompt(padded("EARLIER-QUESTION", 1_500))
        harness.session.prompt("What was decided at meeting 900 in NOTES.md?")
        harness.session.prompt("Are you sure? Quote the line.")
        records = list(server.records)
    assert [r.error for r in records if r.error is not None] == []
    assert len(records) == 4 and replies == []  # no summary asked: the read went out cut, under the threshold
    assert len({r.body["max_tokens"] for r in records}) == 1
    assert len({r.body["thinking"]["budget_tokens"] for r in records}) == 1
    cut, again = _tool_texts(records[2].body), _tool_texts(records[3].body)
    assert CUT_NOTE in cut[0] and again == cut  # the same cut on the next prompt
    # The follow-up reads what the request before it wrote: all but its new question.
    assert records[3].usage is not None and records[2].usage is not None
    assert records[3].usage["cache_read_input_tokens"] >= 0.9 * records[2].prompt_tokens

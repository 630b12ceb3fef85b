"""Shared by the prompt-cache tests on the fake Anthropic server (issue 34): which request asks for a summary,
and a small-window essay session that reaches the soft threshold and the threshold in a few turns."""

from __future__ import annotations

from typing import Any

from agent_harness import SUMMARY
from fakes.anthropic_stream import AnthropicReply, text_reply

from pi_compact.compaction.prompts import SYSTEM_PROMPT as SUMMARIZER_SYSTEM
from pi_compact.compaction.prompts import history_instruction, turn_instruction
from pi_compact.llm.protocol import ModelInfo
from pi_compact.settings import CompactionSettings, RetrySettings, Settings

# A small window, so a few ~2k-token answers take the session past the soft threshold and to the threshold.
SONNET_40K = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 40_000, 64_000, reasoning=True)
SETTINGS_40K = Settings(retry=RetrySettings(enabled=False),
                        compaction=CompactionSettings(reserve_tokens=8_000, keep_recent_tokens=4_000))
ANSWER = "lorem ipsum dolor sit amet " * 300  # ~2k tokens


def asks_summary(body: dict[str, Any]) -> bool:
    """A summary request, serialized (the summarizer's system prompt) or on the chat prefix (its instruction)."""
    system = "".join(part.get("text", "") for part in body.get("system") or [])
    content = body["messages"][-1]["content"]
    text = "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)
    return SUMMARIZER_SYSTEM[:60] in system or text.startswith(
        (history_instruction(False, None)[:60], history_instruction(True, None)[:60], turn_instruction(None)[:60]))


def talk(body: dict[str, Any]) -> AnthropicReply:
    """~2k tokens of prose to every prompt, the scripted summary to a summary request."""
    return text_reply(SUMMARY, output_tokens=600) if asks_summary(body) else text_reply(ANSWER, output_tokens=2_000)

"""The Anthropic adapter's server-side compaction (``LiteLLMModel`` through litellm's real HTTP path, against
the validating fake): the edit and beta go out when a request asks, the reply carries the block and the usage
per pass, a compaction summary carrying the block sends it back (cache-marked, with the edit declared) to the
same model only, and refusals and a dropped stream end as error replies, not exceptions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fakes.anthropic_checks import Limits, count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer, usage_of
from fakes.anthropic_stream import AnthropicReply, Compaction, Text, text_reply, tool_reply

from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.protocol import ChatRequest, ModelInfo, ToolSpec, complete
from pi_compact.llm.server_compaction import CompactionEdit, carrier
from pi_compact.messages import compaction_summary_message

INFO = ModelInfo("anthropic/claude-sonnet-4-6", "anthropic", 200_000, 64_000, reasoning=True)
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
LONG = "word " * 60_000  # 75,000 tokens
SUMMARY = "The user pasted a long list of words; nothing was done with it yet."


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(min_cache_tokens=0, limits=Limits(context_window=200_000, max_output_tokens=64_000))
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def model_for(server: FakeAnthropicServer, info: ModelInfo = INFO) -> LiteLLMModel:
    return LiteLLMModel(info, api_base=server.base_url, api_key="sk-fake")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def compacted(block: dict[str, Any], model: str = "claude-sonnet-4-6") -> dict[str, Any]:
    """The compaction summary a session would rebuild from an entry holding ``block``."""
    message = compaction_summary_message(SUMMARY, 75_000, 0)
    message["providerCompaction"] = carrier("anthropic", "anthropic-messages", model, block)
    return message


def ask_compaction(server: FakeAnthropicServer, **edit: Any) -> dict[str, Any]:
    server.enqueue(AnthropicReply(blocks=(Compaction(SUMMARY), Text("continuing"))))
    request = ChatRequest("You are terse.", [user(LONG)], max_tokens=4096, compaction=CompactionEdit(50_000, **edit))
    return complete(model_for(server), request)


def test_a_request_asking_for_compaction_sends_the_edit_and_the_beta(server: FakeAnthropicServer) -> None:
    ask_compaction(server, instructions="Keep every file path.")
    body, headers = server.requests[-1], server.records[-1].headers
    assert body["context_management"] == {"edits": [{
        "type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000},
        "pause_after_compaction": True, "instructions": "Keep every file path."}]}
    assert "compact-2026-01-12" in headers["anthropic-beta"] and server.rejections == []


def test_the_beta_joins_the_interleaved_thinking_beta(server: FakeAnthropicServer) -> None:
    server.enqueue(tool_reply("read", {"path": "a.py"}))
    request = ChatRequest("sys", [user("read a.py")], [READ], thinking="low", compaction=CompactionEdit(60_000))
    complete(model_for(server), request)
    betas = {part.strip() for part in server.records[-1].headers["anthropic-beta"].split(",")}
    assert betas == {"compact-2026-01-12", "interleaved-thinking-2025-05-14"}


def test_a_trigger_below_the_minimum_is_raised_to_it(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("ok"))
    complete(model_for(server), ChatRequest("sys", [user("hi")], compaction=CompactionEdit(10_000)))
    assert server.requests[-1]["context_management"]["edits"][0]["trigger"]["value"] == 50_000
    assert server.rejections == []


def test_a_paused_reply_is_the_block_with_its_usage_per_pass(server: FakeAnthropicServer) -> None:
    reply = ask_compaction(server)
    assert reply["stopReason"] == "stop" and reply["content"] == []
    assert reply["compaction"] == {"type": "compaction", "content": SUMMARY}
    [summary_pass] = reply["iterations"]
    assert summary_pass["type"] == "compaction" and summary_pass["output"] == 17
    assert summary_pass["input"] + summary_pass["cacheRead"] + summary_pass["cacheWrite"] == 75_004
    assert summary_pass["cost"]["total"] == pytest.approx(reply["usage"]["cost"]["total"])


def test_an_unpaused_reply_keeps_its_text_and_both_passes(server: FakeAnthropicServer) -> None:
    reply = ask_compaction(server, pause_after=False)
    assert reply["content"] == [{"type": "text", "text": "continuing"}] and reply["stopReason"] == "stop"
    assert reply["compaction"]["content"] == SUMMARY
    assert [item["type"] for item in reply["iterations"]] == ["compaction", "message"]
    # litellm sums the passes into the reply's usage; the passes say what each one read
    total = sum(item["input"] + item["cacheRead"] + item["cacheWrite"] for item in reply["iterations"])
    assert reply["usage"]["input"] + reply["usage"]["cacheRead"] + reply["usage"]["cacheWrite"] == total


def test_a_reply_below_the_trigger_has_no_block(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("short"))
    reply = complete(model_for(server), ChatRequest("sys", [user("hi")], compaction=CompactionEdit(50_000)))
    assert "compaction" not in reply and "iterations" not in reply and reply["content"][0]["text"] == "short"


def test_the_block_goes_back_to_the_same_model_cache_marked_with_a_dormant_edit(server: FakeAnthropicServer) -> None:
    block = ask_compaction(server)["compaction"]
    server.enqueue(text_reply("next"))
    reply = complete(model_for(server), ChatRequest("sys", [compacted(block), user("go on")]))
    body = server.requests[-1]
    assert reply["stopReason"] == "stop" and server.rejections == []
    assert body["messages"][0] == {"role": "assistant", "content": [
        {"type": "compaction", "content": SUMMARY, "cache_control": {"type": "ephemeral"}}]}
    assert body["context_management"]["edits"][0]["trigger"]["value"] == INFO.context_window
    assert body["context_management"]["edits"][0]["pause_after_compaction"] is False
    assert "cache_control" not in body["system"][0]  # the block's breakpoint holds the system prompt
    assert count_cache_breakpoints(body) == 2


def test_the_next_requests_read_the_block_from_the_cache(server: FakeAnthropicServer) -> None:
    block = {"type": "compaction", "content": SUMMARY * 40}
    model = model_for(server)
    messages: list[dict[str, Any]] = [compacted(block)]
    for turn in range(4):
        server.enqueue(text_reply(f"answer {turn}"))
        messages.append(user(f"question {turn}"))
        messages.append(complete(model, ChatRequest("sys", messages)))
    usages = [usage_of(record) for record in server.records]
    assert usages[0]["cache_creation_input_tokens"] >= 670 and usages[0]["cache_read_input_tokens"] == 0
    assert all(usage["cache_read_input_tokens"] >= 670 for usage in usages[1:])


def test_another_model_gets_the_readable_summary(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("ok"))
    block = {"type": "compaction", "content": SUMMARY}
    complete(model_for(server), ChatRequest("sys", [compacted(block, model="claude-opus-4-6"), user("go on")]))
    body = server.requests[-1]
    assert "context_management" not in body and body["messages"][0]["role"] == "user"
    assert SUMMARY in body["messages"][0]["content"][0]["text"]


def test_a_null_block_goes_as_the_readable_summary(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("ok"))
    complete(model_for(server), ChatRequest("sys", [compacted({"type": "compaction", "content": None}),
                                                    user("go on")]))
    assert "context_management" not in server.requests[-1] and server.rejections == []


def test_a_model_without_the_feature_ends_in_an_error_reply_naming_it(server: FakeAnthropicServer) -> None:
    info = replace(INFO, model="anthropic/claude-sonnet-4-5")
    request = ChatRequest("sys", [user("hi")], compaction=CompactionEdit(50_000))
    reply = complete(model_for(server, info), request)
    assert reply["stopReason"] == "error"
    assert "does not support the 'compact_20260112' context management strategy" in reply["errorMessage"]


def test_a_stream_cut_inside_the_block_ends_in_an_error_reply(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction(SUMMARY),), cut_after=3), text_reply("unused"))
    request = ChatRequest("sys", [user(LONG)], max_tokens=4096, compaction=CompactionEdit(50_000))
    reply = complete(model_for(server), request)
    assert reply["stopReason"] == "error" and reply.get("compaction", {}).get("content") is None

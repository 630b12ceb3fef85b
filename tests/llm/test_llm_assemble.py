"""MessageAssembler: chunks (plain dicts here) -> events and the final pi assistant message."""

from __future__ import annotations

from typing import Any

from pi_compact.llm.assemble import MessageAssembler
from pi_compact.llm.protocol import ModelInfo, TextDelta, ThinkingDelta, ToolCallDelta

INFO = ModelInfo("openai/scripted", "openai", 1000, None)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]}


def feed_all(assembler: MessageAssembler, *chunks: dict[str, Any]) -> list[Any]:
    return [event for c in chunks for event in assembler.feed(c)]


def test_text_deltas_join_into_one_text_block() -> None:
    asm = MessageAssembler(INFO, 7)
    events = feed_all(asm, chunk({"content": "Hel"}), chunk({"content": "lo"}), chunk(finish="stop"))
    assert events == [TextDelta("Hel"), TextDelta("lo")]
    message = asm.finish()
    assert message["content"] == [{"type": "text", "text": "Hello"}]
    assert (message["stopReason"], message["timestamp"], message["api"]) == ("stop", 7, "openai-completions")


def test_thinking_then_text_keeps_arrival_order() -> None:
    asm = MessageAssembler(INFO, 1)
    events = feed_all(asm, chunk({"reasoning_content": "think"}), chunk({"content": "say"}))
    assert events == [ThinkingDelta("think"), TextDelta("say")]
    assert asm.finish()["content"] == [
        {"type": "thinking", "thinking": "think"},
        {"type": "text", "text": "say"},
    ]


def test_tool_call_fragments_are_assembled_by_index() -> None:
    asm = MessageAssembler(INFO, 1)
    first = {"index": 0, "id": "call_9", "function": {"name": "read", "arguments": '{"pa'}}
    rest = {"index": 0, "function": {"arguments": 'th": "x"}'}}
    events = feed_all(
        asm, chunk({"tool_calls": [first]}), chunk({"tool_calls": [rest]}), chunk(finish="tool_calls")
    )
    assert events[1] == ToolCallDelta(0, "call_9", "read", 'th": "x"}')
    message = asm.finish()
    assert message["content"] == [
        {"type": "toolCall", "id": "call_9", "name": "read", "arguments": {"path": "x"}}
    ]
    assert message["stopReason"] == "toolUse"


def test_invalid_tool_arguments_are_kept_raw() -> None:
    asm = MessageAssembler(INFO, 1)
    feed_all(
        asm, chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "x", "arguments": "{oops"}}]})
    )
    assert asm.finish()["content"][0]["arguments"] == {"_raw": "{oops"}


def test_tool_calls_with_finish_stop_report_tool_use() -> None:
    asm = MessageAssembler(INFO, 1)
    feed_all(
        asm, chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "x"}}]}), chunk(finish="stop")
    )
    assert asm.finish()["stopReason"] == "toolUse"


def test_length_finish_maps_to_length() -> None:
    asm = MessageAssembler(INFO, 1)
    feed_all(asm, chunk({"content": "cut"}), chunk(finish="length"))
    assert asm.finish()["stopReason"] == "length"


def test_unknown_finish_reason_is_an_error_naming_it() -> None:
    asm = MessageAssembler(INFO, 1)
    feed_all(asm, chunk(finish="model_context_window_exceeded"))
    message = asm.finish()
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "Unhandled stop reason: model_context_window_exceeded"


def test_usage_separates_cache_reads_and_writes_from_input() -> None:
    asm = MessageAssembler(INFO, 1)
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 50,
        "prompt_tokens_details": {"cached_tokens": 300},
        "cache_creation_input_tokens": 200,
    }
    feed_all(asm, {"choices": [], "usage": usage})
    got = asm.finish()["usage"]
    assert {k: got[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == {
        "input": 500,
        "output": 50,
        "cacheRead": 300,
        "cacheWrite": 200,
        "totalTokens": 1050,
    }


def test_cost_uses_per_token_prices() -> None:
    prices = {"input": 0.001, "output": 0.01, "cacheRead": 0.0001, "cacheWrite": 0.002}
    asm = MessageAssembler(INFO, 1, prices)
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 40}}
    feed_all(asm, {"choices": [], "usage": usage})
    cost = asm.finish()["usage"]["cost"]
    assert cost["input"] == 60 * 0.001
    assert cost["output"] == 10 * 0.01
    assert cost["cacheRead"] == 40 * 0.0001
    assert cost["total"] == 60 * 0.001 + 10 * 0.01 + 40 * 0.0001


def test_error_keeps_partial_content() -> None:
    asm = MessageAssembler(INFO, 1)
    feed_all(asm, chunk({"content": "half"}))
    message = asm.finish(error="500 boom")
    assert (message["stopReason"], message["errorMessage"]) == ("error", "500 boom")
    assert message["content"] == [{"type": "text", "text": "half"}]


def test_started_only_after_a_non_empty_delta() -> None:
    asm = MessageAssembler(INFO, 1)
    feed_all(asm, chunk({"role": "assistant", "content": ""}))
    assert not asm.started
    feed_all(asm, chunk({"content": "x"}))
    assert asm.started

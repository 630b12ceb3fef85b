"""The pure rules behind issue 21's wire work: the output cap, thinking levels (supported, clamped, budgets),
the per-provider options, cache marks, signatures kept and replayed only to their own model, readable errors."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pi_compact.llm.assemble import MessageAssembler
from pi_compact.llm.cache_marks import with_cache_marks
from pi_compact.llm.convert import (
    ERROR_FLAG,
    ConvertedHistory,
    Target,
    failed_result_ids,
    flag_failed_results,
    to_openai_messages,
    to_openai_tools,
)
from pi_compact.llm.failures import provider_text
from pi_compact.llm.output_cap import output_cap, prompt_estimate, refit_cap
from pi_compact.llm.overflow import is_overflow_error_text, stated_window
from pi_compact.llm.params import cache_retention, plan_request
from pi_compact.llm.protocol import ChatRequest, ModelInfo, ToolSpec
from pi_compact.llm.thinking import clamp_level, supported_levels, thinking_budget

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
OPUS_46 = ModelInfo("anthropic/claude-opus-4-6", "anthropic", 1_000_000, 128_000, reasoning=True)
GEMINI_PRO = ModelInfo("gemini/gemini-2.5-pro", "google", 1_048_576, 65_536, reasoning=True)
GEMINI_FLASH = ModelInfo("gemini/gemini-2.5-flash", "google", 1_048_576, 65_536, reasoning=True)
GPT = ModelInfo("openai/gpt-4.1", "openai", 1_047_576, 32_768)
LOCAL = ModelInfo("openai/qwen", "openai", 16_384, None)
ANTHROPIC_OVERFLOW = ("input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input "
                      "length or `max_tokens` and try again")


# --- the output cap -------------------------------------------------------------------------------------


def test_cap_is_pis_number_while_the_window_has_room() -> None:
    cap = output_cap(max_output=64_000, context_window=200_000, prompt_tokens=10_000, thinking_budget=8192)
    assert (cap.max_tokens, cap.thinking_budget, cap.lowered) == (40_192, 8192, False)
    assert output_cap(max_output=8192, context_window=128_000, prompt_tokens=0).max_tokens == 8192
    assert output_cap(max_output=None, context_window=128_000, prompt_tokens=0).max_tokens == 32_000


def test_cap_shrinks_where_pi_overflows() -> None:
    # pi sends 40,192 from 159,809 prompt tokens on and the API refuses; ours fits the window.
    for prompt in (159_809, 170_000, 180_000, 190_000):
        cap = output_cap(max_output=64_000, context_window=200_000, prompt_tokens=prompt, thinking_budget=8192)
        assert prompt + cap.max_tokens <= 200_000 and cap.lowered
        assert cap.thinking_budget == 0 or cap.max_tokens - cap.thinking_budget >= 1024
    at_180k = output_cap(max_output=64_000, context_window=200_000, prompt_tokens=180_000, thinking_budget=8192)
    assert at_180k.thinking_budget == 8192 and at_180k.max_tokens == 16_000


def test_cap_drops_a_budget_too_small_to_send_and_never_goes_below_an_answer() -> None:
    squeezed = output_cap(max_output=64_000, context_window=200_000, prompt_tokens=194_500, thinking_budget=8192)
    assert squeezed.thinking_budget == 0 and squeezed.max_tokens == 1500  # 2 % of the window kept as margin
    full = output_cap(max_output=64_000, context_window=200_000, prompt_tokens=199_000, thinking_budget=8192)
    assert full.thinking_budget == 0 and full.max_tokens == 1024  # overflows anyway: the caller compacts
    small = output_cap(max_output=4096, context_window=200_000, prompt_tokens=0, thinking_budget=8192)
    assert small.max_tokens == 4096 and small.thinking_budget == 3072  # the API's maximum, an answer kept


def test_prompt_estimate_starts_from_the_last_reported_usage() -> None:
    reply = {"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse",
             "usage": {"input": 10, "output": 20, "cacheRead": 50_000, "cacheWrite": 1000},
             "content": [{"type": "toolCall", "id": "t", "name": "read", "arguments": {}}]}  # fmt: skip
    result = {"role": "toolResult", "toolCallId": "t", "toolName": "read", "content": [{"type": "text",
              "text": "x" * 4000}], "isError": False}  # fmt: skip
    request = ChatRequest("s" * 400, [{"role": "user", "content": "hi"}, reply, result])
    assert prompt_estimate(request, SONNET) == 51_030 + 1000
    other = ModelInfo("anthropic/claude-opus-4-1", "anthropic", 200_000, 32_000, reasoning=True)
    assert prompt_estimate(request, other) < 2000  # another model's count says nothing: chars/4
    summary = {"role": "compactionSummary", "summary": "s" * 4000, "tokensBefore": 90_000, "timestamp": 5}
    kept = {**reply, "timestamp": 3}  # a reply kept from before the compaction: its usage is stale
    after = ChatRequest("", [summary, kept, result])
    assert prompt_estimate(after, SONNET) < 3000


# --- thinking levels --------------------------------------------------------------------------------------


def test_supported_levels_as_pi() -> None:
    assert supported_levels(SONNET) == ("off", "minimal", "low", "medium", "high")
    assert supported_levels(OPUS_46)[-1] == "xhigh"
    assert supported_levels(GPT) == ("off",)  # not a reasoning model
    assert "off" not in supported_levels(GEMINI_PRO) and "off" in supported_levels(GEMINI_FLASH)


@pytest.mark.parametrize(("info", "level", "expected"), [
    (SONNET, "medium", ("medium", False)), (SONNET, "xhigh", ("high", True)), (OPUS_46, "xhigh", ("xhigh", False)),
    (GPT, "high", ("off", True)), (GEMINI_PRO, "off", ("minimal", True)), (SONNET, "bogus", ("off", True)),
])  # fmt: skip
def test_clamp_level(info: ModelInfo, level: str, expected: tuple[str, bool]) -> None:
    clamped = clamp_level(info, level)
    assert (clamped.level, clamped.changed) == expected


def test_budgets_per_provider() -> None:
    assert [thinking_budget(SONNET, lv) for lv in ("off", "minimal", "low", "medium", "high", "xhigh")] == \
        [0, 1024, 2048, 8192, 16384, 16384]
    assert [thinking_budget(GEMINI_PRO, lv) for lv in ("minimal", "low", "medium", "high")] == [128, 2048, 8192, 32768]
    assert thinking_budget(GPT, "high") == 0  # effort, not a budget


def test_options_per_provider() -> None:
    hello = ChatRequest("s", [{"role": "user", "content": "hi"}], thinking="medium")
    assert plan_request(SONNET, hello).options == {
        "max_tokens": 40_192, "thinking": {"type": "enabled", "budget_tokens": 8192}}
    assert plan_request(GEMINI_PRO, hello).options["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert plan_request(GPT, hello).options == {"max_tokens": 32_000, "reasoning_effort": "medium",
                                                "drop_params": True}  # fmt: skip
    summary = ChatRequest("s", [{"role": "user", "content": "hi"}], max_tokens=5000, thinking="high")
    assert plan_request(SONNET, summary).options == {  # pi's rule: the budget on top of the caller's size
        "max_tokens": 5000 + 16_384, "thinking": {"type": "enabled", "budget_tokens": 16_384}}
    refitted = replace(summary, thinking_inside=True)  # a cap refitted from a refusal holds the thinking too
    assert plan_request(SONNET, refitted).options == {
        "max_tokens": 5000, "thinking": {"type": "enabled", "budget_tokens": 3976}}
    assert plan_request(LOCAL, ChatRequest("s", [{"role": "user", "content": "x" * 40_000}])).options == {
        "max_tokens": 16_384 - 10_001 - 327}  # a local 16k window: what the prompt leaves, less the margin


@pytest.mark.parametrize(("model", "beta"), [
    ("claude-sonnet-4-5", True), ("claude-sonnet-4-20250514", True), ("claude-opus-4-1-20250805", True),
    ("claude-haiku-4-5", True), ("claude-opus-4.5", True),
    ("claude-sonnet-4-6", True),  # budgeted thinking (ours) interleaves on 4.6 only with the beta, too
    ("claude-3-7-sonnet-20250219", False), ("claude-sonnet-40", False),  # not Claude 4: no interleaving
])  # fmt: skip
def test_interleaved_thinking_beta_for_claude_4_thinking_with_tools(model: str, beta: bool) -> None:
    info = ModelInfo(f"anthropic/{model}", "anthropic", 200_000, 64_000, reasoning=True)
    read = ToolSpec("read", "Read a file", {"type": "object"})
    thinking = ChatRequest("s", [{"role": "user", "content": "hi"}], [read], thinking="medium")
    expected = {"anthropic-beta": "interleaved-thinking-2025-05-14"} if beta else None
    assert plan_request(info, thinking).options.get("extra_headers") == expected
    for request in (replace(thinking, tools=[]), replace(thinking, thinking="off")):  # nothing to interleave
        assert "extra_headers" not in plan_request(info, request).options
    assert "extra_headers" not in plan_request(GEMINI_PRO, thinking).options


def test_no_thinking_for_a_model_that_cannot_and_no_unknown_effort() -> None:
    haiku = ModelInfo("anthropic/claude-3-5-haiku-latest", "anthropic", 200_000, 8192)
    hello = ChatRequest("s", [{"role": "user", "content": "hi"}], thinking="high")
    assert plan_request(haiku, hello).options == {"max_tokens": 8192}
    xhigh = ChatRequest("s", [{"role": "user", "content": "hi"}], thinking="xhigh")
    assert plan_request(GPT, xhigh).options["reasoning_effort"] == "high"
    gpt_52 = ModelInfo("openai/gpt-5.2", "openai", 400_000, 128_000, reasoning=True)
    assert plan_request(gpt_52, xhigh).options["reasoning_effort"] == "xhigh"


def test_prompt_cache_key_only_on_openais_endpoint() -> None:
    request = ChatRequest("s", [{"role": "user", "content": "hi"}], session_id="sess-1")
    assert plan_request(GPT, request).options["prompt_cache_key"] == "sess-1"
    assert plan_request(GPT, request, api_base="https://api.openai.com/v1").options["prompt_cache_key"] == "sess-1"
    assert "prompt_cache_key" not in plan_request(GPT, request, api_base="http://127.0.0.1:8080/v1").options
    assert "prompt_cache_key" not in plan_request(SONNET, request).options
    no_cache = ChatRequest("s", [{"role": "user", "content": "hi"}], session_id="sess-1", cache="none")
    assert "prompt_cache_key" not in plan_request(GPT, no_cache).options


def test_cache_retention_honours_the_pi_variable() -> None:
    request = ChatRequest("s", [])
    assert cache_retention(request, {}) == "short"
    assert cache_retention(request, {"PI_CACHE_RETENTION": "long"}) == "long"
    assert cache_retention(ChatRequest("s", [], cache="none"), {"PI_CACHE_RETENTION": "long"}) == "none"


# --- the request builder ------------------------------------------------------------------------------------


def signed_reply(provider: str = "anthropic", model: str = "claude-sonnet-4-5", api: str = "anthropic-messages") -> Any:
    return {"role": "assistant", "provider": provider, "model": model, "api": api, "stopReason": "toolUse",
            "content": [{"type": "thinking", "thinking": "Hm.", "thinkingSignature": "SIG"},
                        {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "DATA",
                         "redacted": True},
                        {"type": "toolCall", "id": "call|a+b", "name": "read", "arguments": {},
                         "thoughtSignature": "GSIG"}]}  # fmt: skip


RESULT = {"role": "toolResult", "toolCallId": "call|a+b", "toolName": "read", "content": "ok", "isError": False}


def test_signed_thinking_goes_back_only_to_its_own_model() -> None:
    own = to_openai_messages("", [{"role": "user", "content": "hi"}, signed_reply(), RESULT], Target.of(SONNET))
    assert own[1]["thinking_blocks"] == [{"type": "thinking", "thinking": "Hm.", "signature": "SIG"},
                                         {"type": "redacted_thinking", "data": "DATA"}]  # fmt: skip
    assert own[1]["tool_calls"][0]["id"] == own[2]["tool_call_id"] == "call_a_b"
    for target in (Target.of(OPUS_46), Target.of(GEMINI_PRO), Target.of(GPT)):
        converted = to_openai_messages("", [{"role": "user", "content": "hi"}, signed_reply(), RESULT], target)
        assert "thinking_blocks" not in converted[1] and "SIG" not in str(converted)


def test_gemini_signature_goes_back_on_the_call_with_the_id_unchanged() -> None:
    reply = signed_reply("google", "gemini-2.5-pro", "google-generative-ai")
    converted = to_openai_messages("", [{"role": "user", "content": "hi"}, reply, RESULT], Target.of(GEMINI_PRO))
    call = converted[1]["tool_calls"][0]
    assert call["id"] == converted[2]["tool_call_id"] == "call|a+b"
    assert call["provider_specific_fields"] == {"thought_signature": "GSIG"}
    assert "thinking_blocks" not in converted[1]


def test_cache_marks_copy_the_shared_messages() -> None:
    history = ConvertedHistory()
    messages = history.convert("sys", [{"role": "user", "content": "hi"}], Target.of(SONNET))
    tools = to_openai_tools([ToolSpec("a", "", {}), ToolSpec("b", "", {})])
    marked = with_cache_marks(messages, tools, {"type": "ephemeral"})
    assert marked[0]["content"] == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert marked[1]["content"] == [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in tools[0] and tools[1]["cache_control"] == {"type": "ephemeral"}
    again = history.convert("sys", [{"role": "user", "content": "hi"}], Target.of(SONNET))
    assert again[0]["content"] == "sys" and again[1]["content"] == "hi"  # the shared ones are untouched


def test_the_planned_cut_gets_a_fourth_mark_on_the_last_message_that_can_carry_one() -> None:
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}],
            "stopReason": "toolUse"}  # fmt: skip
    result = {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": "x", "isError": False}
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", "stopReason": "stop"},
               {"role": "user", "content": "read"}, call, result, {"role": "user", "content": "more"}]  # fmt: skip
    sent = to_openai_messages("sys", history, Target.of(SONNET))
    tools = to_openai_tools([ToolSpec("read", "", {})])
    control = {"type": "ephemeral"}
    at_answer = with_cache_marks(sent, tools, control, cut=3)  # system, user, assistant "ok"
    assert at_answer[2]["content"] == [{"type": "text", "text": "ok", "cache_control": control}]
    at_result = with_cache_marks(sent, to_openai_tools([ToolSpec("read", "", {})]), control, cut=6)
    assert at_result[5]["cache_control"] == control  # the tool result (litellm puts it on the tool_result)
    # An assistant message with only tool calls cannot carry one: the user message before it does.
    before_call = with_cache_marks(sent, to_openai_tools([ToolSpec("read", "", {})]), control, cut=5)
    assert "cache_control" not in before_call[4] and before_call[3]["content"][-1]["cache_control"] == control
    marks = sum("cache_control" in str(m) for m in at_answer) + sum("cache_control" in t for t in tools)
    assert marks == 4 and "cache_control" not in str(sent)  # the shared messages are untouched


def test_failed_results_carry_our_flag_only_for_anthropic() -> None:
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}},
                                             {"type": "toolCall", "id": "c2", "name": "read", "arguments": {}}],
            "stopReason": "toolUse"}  # fmt: skip
    failed = {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": "ENOENT", "isError": True}
    history = [{"role": "user", "content": "hi"}, call, failed, {"role": "user", "content": "stop"}]
    sent = to_openai_messages("", history, Target.of(SONNET))
    assert [m.get(ERROR_FLAG) for m in sent if m["role"] == "tool"] == [True, True]  # c2 unanswered: synthetic
    assert failed_result_ids(sent) == {"c1", "c2"}
    assert all(ERROR_FLAG not in m for m in to_openai_messages("", history, Target.of(GPT)))  # OpenAI refuses it
    blocks = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x"},
                                           {"type": "tool_result", "tool_use_id": "c3", "content": "y"},
                                           {"type": "text", "text": "c1"}]}]  # fmt: skip
    flag_failed_results(blocks, {"c1"})
    assert [block.get("is_error") for block in blocks[0]["content"]] == [True, None, None]


# --- what arrives ------------------------------------------------------------------------------------------------


def chunk(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta}]}


def test_assembler_keeps_signatures_as_pi() -> None:
    assembler = MessageAssembler(SONNET, 0)
    for piece in (chunk(reasoning_content="Th", thinking_blocks=[{"type": "thinking", "thinking": "Th"}]),
                  chunk(reasoning_content="ink", thinking_blocks=[{"type": "thinking", "thinking": "ink"}]),
                  chunk(thinking_blocks=[{"type": "thinking", "thinking": "", "signature": "SIG"}]),
                  chunk(thinking_blocks=[{"type": "redacted_thinking", "data": "DATA"}]),
                  chunk(content="Hi."),
                  chunk(tool_calls=[{"index": 0, "id": "call_1__thought__a+b/c=", "function": {"name": "read",
                                                                                               "arguments": "{}"}}])):
        list(assembler.feed(piece))  # fmt: skip
    message = assembler.finish()
    assert message["content"] == [
        {"type": "thinking", "thinking": "Think", "thinkingSignature": "SIG"},
        {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "DATA", "redacted": True},
        {"type": "text", "text": "Hi."},
        {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {}, "thoughtSignature": "a+b/c="},
    ]
    assert message["api"] == "anthropic-messages"


# --- errors ---------------------------------------------------------------------------------------------------------


def test_anthropics_prompt_plus_max_tokens_wording_is_ours_and_states_the_window() -> None:
    assert is_overflow_error_text(ANTHROPIC_OVERFLOW) and stated_window(ANTHROPIC_OVERFLOW) == 200_000
    assert refit_cap(ANTHROPIC_OVERFLOW) == 200_000 - 178_959 - 256  # the refusal's true prompt size, refitted
    assert refit_cap("prompt is too long: 210000 tokens > 200000 maximum") is None
    assert refit_cap(ANTHROPIC_OVERFLOW.replace("178959", "199500")) is None  # no room for an answer
    vllm = ("This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (30000 in the "
            "messages, 10000 in the completion).")
    assert refit_cap(vllm) == refit_cap(vllm, 10_000) == 32_768 - 30_000 - 256
    assert refit_cap(vllm, 8192) is None and refit_cap(ANTHROPIC_OVERFLOW, 40_192) is None  # another cap refused


def test_a_bytes_repr_becomes_the_providers_sentence() -> None:
    body = b'{"type": "error", "error": {"type": "invalid_request_error", "message": "Bad thing."}}'
    message = f"litellm.BadRequestError: AnthropicError - {body!r}"
    assert provider_text("", message, 400) == "Bad thing."
    assert provider_text("", "litellm.BadRequestError: AnthropicError - b'not json'", 400) == "not json"


def test_near_the_window_a_summary_keeps_its_whole_size_and_thinking_shrinks_or_goes() -> None:
    own = 13_107  # 0.8 × the default reserveTokens: a summary's own output size
    near = ChatRequest("s", [{"role": "user", "content": "x" * (4 * 175_000)}], max_tokens=own, thinking="high")
    plan = plan_request(SONNET, near)  # 200k window: 175k of prompt leaves room for the summary and some thinking
    budget = plan.options["thinking"]["budget_tokens"]
    assert plan.max_tokens - budget == own and 1024 <= budget < 16_384
    full = ChatRequest("s", [{"role": "user", "content": "x" * (4 * 184_000)}], max_tokens=own, thinking="high")
    assert plan_request(SONNET, full).options == {"max_tokens": own}  # no room left to think: thinking is off

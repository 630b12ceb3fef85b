"""is_context_overflow: pi-ai 0.73.1's error-text patterns, exclusions, silent and length-stop overflow."""

from __future__ import annotations

from typing import Any

import pytest

from pi_compact.llm.overflow import (
    OVERFLOW_PATTERNS,
    is_context_overflow,
    is_overflow_error_text,
    overflow_patterns,
    stated_window,
)


def error(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [], "stopReason": "error", "errorMessage": text}


def finished(stop_reason: str, input_tokens: int, output: int = 10, cache_read: int = 0) -> dict[str, Any]:
    usage = {"input": input_tokens, "output": output, "cacheRead": cache_read, "cacheWrite": 0}
    return {"role": "assistant", "content": [], "stopReason": stop_reason, "usage": usage}


PROVIDER_OVERFLOW_MESSAGES = [
    ("anthropic", "prompt is too long: 213462 tokens > 200000 maximum"),
    (
        "anthropic 413",
        '413 {"type":"error","error":{"type":"request_too_large","message":"Request exceeds size"}}',
    ),
    ("bedrock", "Input is too long for requested model"),
    ("openai", "Your input exceeds the context window of this model"),
    ("google", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)"),
    ("xai", "This model's maximum prompt length is 131072 but the request contains 537812 tokens"),
    ("groq", "Please reduce the length of the messages or completion"),
    (
        "openrouter",
        "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens",
    ),
    ("llama.cpp", "the request exceeds the available context size, try increasing it"),
    ("lm studio", "tokens to keep from the initial prompt is greater than the context length"),
    ("copilot", "prompt token count of 140000 exceeds the limit of 128000"),
    ("minimax", "invalid params, context window exceeds limit"),
    ("kimi", "Your request exceeded model token limit: 262144 (requested: 300000)"),
    (
        "mistral",
        "Prompt contains 140000 tokens and 0 draft tokens, "
        "too large for model with 131072 maximum context length",
    ),
    ("z.ai", "Unhandled stop reason: model_context_window_exceeded"),
    ("ollama", "prompt too long; exceeded max context length by 100 tokens"),
    ("ollama without max", "prompt too long; exceeded context length by 100 tokens"),
    ("generic underscore", "error code: context_length_exceeded"),
    ("generic space", "Context length exceeded for this request"),
    ("generic tokens", "Too many tokens in the request"),
    ("generic limit", "Token limit exceeded"),
    ("cerebras 400", "400 status code (no body)"),
    ("cerebras 413", "413 status code (no body)"),
    ("cerebras 400 short", "400 (no body)"),
    ("pi unit-test literal", "prompt is too long"),
    ("bedrock raw throttling", "ThrottlingException: Too many tokens, please wait"),
    ("our litellm prefix", "context length exceeded: Input too large"),
]


@pytest.mark.parametrize(("provider", "text"), PROVIDER_OVERFLOW_MESSAGES)
def test_provider_error_text_is_overflow(provider: str, text: str) -> None:
    assert is_context_overflow(error(text)), provider


NOT_OVERFLOW_MESSAGES = [
    ("cerebras 429", "429 status code (no body)"),
    ("bedrock formatter throttling", "Throttling error: Too many tokens, please wait before trying again"),
    ("bedrock formatter unavailable", "Service unavailable: prompt is too long right now"),
    ("rate limit wins over a pattern", "rate limit: prompt is too long"),
    ("rate limit per minute", "429 rate limit: Rate limit reached: too many tokens per min"),
    ("too many requests", "Too Many Requests: too many tokens"),
    ("anthropic overloaded", "529 overloaded"),
    (
        "anthropic overloaded type",
        '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    ),
    ("stream cut", "terminated"),
    ("anthropic tool pairing", "tool_use ids were found without tool_result blocks immediately after"),
    ("cerebras anchored", "upstream said 400 status code (no body)"),
    ("empty", ""),
]


@pytest.mark.parametrize(("case", "text"), NOT_OVERFLOW_MESSAGES)
def test_non_overflow_error_text_is_not_overflow(case: str, text: str) -> None:
    assert not is_context_overflow(error(text)), case


def test_patterns_are_the_twenty_of_pi_0_73_1() -> None:
    assert len(overflow_patterns()) == 20


def test_overflow_patterns_returns_a_copy() -> None:
    patterns = overflow_patterns()
    patterns.clear()
    assert len(overflow_patterns()) == len(OVERFLOW_PATTERNS) == 20


def test_patterns_match_case_insensitively() -> None:
    assert is_context_overflow(error("PROMPT IS TOO LONG: 300000 tokens"))


def test_error_text_is_ignored_unless_stop_reason_is_error() -> None:
    message = finished("stop", 10)
    message["errorMessage"] = "prompt is too long"
    assert not is_context_overflow(message, 100000)


def test_silent_overflow_when_stop_input_exceeds_window() -> None:
    assert is_context_overflow(finished("stop", 100001), 100000)


def test_silent_overflow_counts_cache_reads() -> None:
    assert is_context_overflow(finished("stop", 60000, cache_read=40001), 100000)


def test_stop_exactly_at_window_is_not_overflow() -> None:
    assert not is_context_overflow(finished("stop", 100000), 100000)


def test_stop_within_window_is_not_overflow() -> None:
    assert not is_context_overflow(finished("stop", 5000), 100000)


def test_silent_overflow_needs_the_context_window() -> None:
    assert not is_context_overflow(finished("stop", 10**9))


def test_length_stop_with_no_output_at_99_percent_is_overflow() -> None:
    assert is_context_overflow(finished("length", 99000, output=0), 100000)


def test_length_stop_with_no_output_counts_cache_reads() -> None:
    assert is_context_overflow(finished("length", 49000, output=0, cache_read=50000), 100000)


def test_length_stop_just_below_99_percent_is_not_overflow() -> None:
    assert not is_context_overflow(finished("length", 98999, output=0), 100000)


def test_length_stop_with_output_is_not_overflow() -> None:
    assert not is_context_overflow(finished("length", 100000, output=1), 100000)


def test_length_stop_needs_the_context_window() -> None:
    assert not is_context_overflow(finished("length", 100000, output=0))


def test_tool_use_over_the_window_is_not_overflow() -> None:
    assert not is_context_overflow(finished("toolUse", 200000), 100000)


def test_error_without_usage_or_matching_text_is_not_overflow() -> None:
    assert not is_context_overflow(error("500 internal error"), 100000)


LM_STUDIO_0_3 = (
    "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context "
    "length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or "
    "provide a shorter input"
)


def test_current_lm_studio_wording_is_overflow() -> None:
    assert is_context_overflow(error("400 " + LM_STUDIO_0_3))


def test_extra_patterns_leave_pi_s_list_as_it_is() -> None:
    assert not any(p.search(LM_STUDIO_0_3) for p in OVERFLOW_PATTERNS)  # pi 0.73.1 misses it...
    assert is_overflow_error_text(LM_STUDIO_0_3)  # ...our extra patterns do not


def test_rate_limit_exclusion_also_covers_the_extra_patterns() -> None:
    assert not is_overflow_error_text("429 rate limit: " + LM_STUDIO_0_3)


STATED_WINDOWS = [
    ("openai", "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
     8192),
    ("anthropic", "prompt is too long: 210000 tokens > 200000 maximum", 200000),
    ("llama.cpp", "request (4476 tokens) exceeds the available context size (4096 tokens)", 4096),
    ("lm studio 0.3", LM_STUDIO_0_3, 4096),
    ("lm studio n_keep", "The number of tokens to keep from the initial prompt is greater than the context length "
     "(n_keep: 13055>= n_ctx: 4096).", 4096),
    ("xai", "This model's maximum prompt length is 131072 but the request contains 537812 tokens", 131072),
    ("mistral", "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context "
     "length", 32768),
    ("gemini", "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)", 1048575),
    ("copilot", "prompt token count of 140000 exceeds the limit of 128000", 128000),
    ("kimi", "Your request exceeded model token limit: 262144 (requested: 300000)", 262144),
    ("sglang", "The input (61709 tokens) is longer than the model's context length (40960 tokens).", 40960),
    ("sglang allowed length", "Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens).",
     59862),
    ("proxy of", "Requested token count exceeds the model's maximum context length of 4096 tokens.", 4096),
    ("proxy parenthesis", "input exceeds the maximum context length (32768)", 32768),
    ("poolside", "Input exceeds the maximum allowed input length of 32768 tokens", 32768),
    ("ds4", "Prompt has 5000 tokens, but the configured context size is 4096 tokens", 4096),
    ("tgi total", "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1244 "
     "`inputs` tokens and 1000 `max_new_tokens`", 2048),
    ("tgi inputs", "Input validation error: `inputs` must have less than 1024 tokens. Given: 1168", 1024),
    ("vllm engine", "The decoder prompt (length 5000) is longer than the maximum model length of 4096.", 4096),
    ("cerebras", "Current length is 9000 while limit is 8192", 8192),
    ("our prefix", "context length exceeded: This model's maximum context length is 16384 tokens.", 16384),
]


@pytest.mark.parametrize(("source", "text", "window"), STATED_WINDOWS)
def test_stated_window_reads_the_window_of_each_format(source: str, text: str, window: int) -> None:
    assert stated_window(text) == window, source


@pytest.mark.parametrize(
    "text",
    [
        "the request exceeds the available context size, try increasing it",  # overflow, but no number
        "prompt is too long",
        "400 status code (no body)",
    ],
)
def test_stated_window_is_none_when_the_overflow_text_has_no_number(text: str) -> None:
    assert stated_window(text) is None


def test_stated_window_is_none_for_sizes_outside_an_overflow() -> None:
    assert stated_window("Request payload size exceeds the limit: 20971520 bytes.") is None  # Gemini
    assert stated_window("429 rate limit: This model's maximum context length is 8192 tokens") is None

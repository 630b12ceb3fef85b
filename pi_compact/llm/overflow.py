"""Does an assistant message say "the request did not fit the context window"? (pi-ai 0.73.1 rules)

``is_context_overflow`` recognises an error text (``OVERFLOW_PATTERNS``, plus the wordings pi 0.73.1
does not know in ``EXTRA_OVERFLOW_PATTERNS``) and two silent cases read from the usage;
``stated_window`` reads the window an overflow message states, ``stated_prompt_tokens`` the size of the
prompt that did not fit. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pi_compact.llm.protocol import ModelInfo

# (provider the wording comes from, pattern). Order matches pi's list; the first hit wins, though
# the order only matters for readability since any hit means overflow.
_TABLE: tuple[tuple[str, str], ...] = (
    ("Anthropic, token count", r"prompt is too long"),
    ("Anthropic, request bytes (HTTP 413)", r"request_too_large"),
    ("Amazon Bedrock", r"input is too long for requested model"),
    ("OpenAI Completions and Responses", r"exceeds the context window"),
    ("Google Gemini", r"input token count.*exceeds the maximum"),
    ("xAI", r"maximum prompt length is \d+"),
    ("Groq", r"reduce the length of the messages"),
    ("OpenRouter", r"maximum context length is \d+ tokens"),
    ("GitHub Copilot", r"exceeds the limit of \d+"),
    ("llama.cpp server", r"exceeds the available context size"),
    ("LM Studio", r"greater than the context length"),
    ("MiniMax", r"context window exceeds limit"),
    ("Kimi For Coding", r"exceeded model token limit"),
    ("Mistral", r"too large for model with \d+ maximum context length"),
    ("z.ai (unknown finish reason surfaced as error)", r"model_context_window_exceeded"),
    ("Ollama, explicit error", r"prompt too long; exceeded (?:max )?context length"),
    ("generic", r"context[_ ]length[_ ]exceeded"),
    ("generic", r"too many tokens"),
    ("generic", r"token limit exceeded"),
    # Cerebras answers 400/413 with an empty body; SDKs render that as "400 status code (no body)".
    # 429 is left out on purpose: it is a rate limit.
    ("Cerebras", r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)"),
)

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for _, p in _TABLE)

# Wordings pi 0.73.1 does not know (later pi versions, local and self-hosted servers: LM Studio 0.3, TGI,
# SGLang, vLLM's engine...), kept apart so ``OVERFLOW_PATTERNS`` stays exactly pi's list.
_EXTRA_TABLE: tuple[tuple[str, str], ...] = (
    ("OpenAI-compatible proxies (pi 0.79.2)",
     r"exceeds (?:the )?(?:model's )?maximum context length (?:of \d+ tokens|\(\d+\))"),
    ("OpenRouter / Poolside (pi 0.76.0)", r"exceeds (?:the )?maximum allowed input length of \d+ tokens?"),
    ("Together AI, SGLang (pi 0.80.2)",
     r"input \(\d+ tokens\) is longer than the model's context length \(\d+ tokens\)"),
    ("DS4 server (pi 0.80.4)", r"prompt has \d+ tokens, but the configured context size is \d+ tokens"),
    # LM Studio 0.3.x: "...the model is loaded with context length of only 4096 tokens, which is not enough."
    ("LM Studio 0.3", r"context length of only \d+ tokens"),
    ("SGLang", r"input length \(\d+ tokens\) exceeds the maximum allowed length"),
    ("Hugging Face TGI", r"inputs`? tokens \+ `?max_new_tokens`? must be <= ?\d+"),
    ("Hugging Face TGI", r"inputs`? must have less than \d+ tokens"),
    ("vLLM engine", r"is longer than the maximum model length"),
    ("Cerebras", r"current length is \d+ while limit is \d+"),
    ("Ollama", r"input length exceeds the context length"),
    # Prompt + max_tokens over the window (pi 0.73.1 does not know it; litellm only through its own list).
    ("Anthropic, prompt plus max_tokens", r"input length and `?max_tokens`? exceed context limit"),
    ("Amazon Bedrock", r"too many input tokens"),
)

EXTRA_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE) for _, p in _EXTRA_TABLE
)

# Where an overflow message states the window: (source, pattern whose first group is the window).
_WINDOW_TABLE: tuple[tuple[str, str], ...] = (
    ("OpenAI, Azure, vLLM, DeepSeek, OpenRouter", r"maximum context length is (\d+)"),
    ("Anthropic", r"prompt is too long: \d+ tokens > (\d+) maximum"),
    ("Anthropic, prompt plus max_tokens", r"exceed context limit: \d+ \+ \d+ > (\d+)"),
    ("llama.cpp server", r"exceeds the available context size \((\d+) tokens\)"),
    ("LM Studio 0.3", r"context length of only (\d+) tokens"),
    ("LM Studio (n_keep >= n_ctx)", r"n_ctx: (\d+)"),
    ("xAI", r"maximum prompt length is (\d+)"),
    ("Mistral", r"too large for model with (\d+) maximum context length"),
    ("Google Gemini", r"exceeds the maximum number of tokens allowed \((\d+)\)"),
    ("GitHub Copilot", r"exceeds the limit of (\d+)"),
    ("Kimi For Coding", r"exceeded model token limit: (\d+)"),
    ("Together AI, SGLang", r"longer than the model's context length \((\d+) tokens\)"),
    ("OpenAI-compatible proxies", r"maximum context length (?:of |\()(\d+)"),
    ("OpenRouter / Poolside", r"maximum allowed input length of (\d+) tokens?"),
    ("SGLang", r"exceeds the maximum allowed length \((\d+) tokens\)"),
    ("DS4 server", r"configured context size is (\d+) tokens"),
    ("Hugging Face TGI", r"max_new_tokens`? must be <= ?(\d+)"),
    ("Hugging Face TGI", r"must have less than (\d+) tokens"),
    ("vLLM engine", r"maximum model length of (\d+)"),
    ("Cerebras", r"while limit is (\d+)"),
)

_WINDOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for _, p in _WINDOW_TABLE)

# Where an overflow message states how many tokens the request's prompt had, as the server counted them.
_REQUEST_TABLE: tuple[tuple[str, str], ...] = (
    ("llama.cpp server", r"request \((\d+) tokens\) exceeds the available context size"),
    ("Anthropic", r"prompt is too long: (\d+) tokens >"),
    ("Anthropic, prompt plus max_tokens", r"exceed context limit: (\d+) \+"),
    ("OpenAI, split", r"(\d+) in the messages"),
    ("OpenAI", r"messages resulted in (\d+) tokens"),
    ("Together AI, SGLang", r"input \((\d+) tokens\) is longer than"),
    ("SGLang", r"input length \((\d+) tokens\) exceeds"),
    ("DS4 server", r"prompt has (\d+) tokens"),
    ("Cerebras", r"current length is (\d+) while limit"),
)
_REQUEST_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p, re.IGNORECASE) for _, p in _REQUEST_TABLE)

# Texts that look like overflow ("too many tokens") but are throttling. The two prefixes are what
# pi-ai's Bedrock formatter writes; a raw "ThrottlingException: Too many tokens" is still overflow.
_NOT_OVERFLOW: tuple[re.Pattern[str], ...] = (
    re.compile(r"^(?:throttling error|service unavailable):", re.IGNORECASE),
    re.compile(r"rate limit", re.IGNORECASE),
    re.compile(r"too many requests", re.IGNORECASE),
)

# Case 3 fires when the prompt alone used at least this share of the window.
_LENGTH_STOP_SHARE = 0.99


def overflow_patterns() -> list[re.Pattern[str]]:
    """A copy of the error-text patterns, in order (for tests and diagnostics)."""
    return list(OVERFLOW_PATTERNS)


def is_overflow_error_text(text: str, own_texts: Sequence[str] = ()) -> bool:
    """Case 1 alone: is this provider error text a context overflow? ``own_texts``: a server's own
    wordings from the settings or models.json (``ModelInfo.overflow_texts``), found anywhere, any case."""
    if not text or any(p.search(text) for p in _NOT_OVERFLOW):
        return False
    if own_texts and any(own.casefold() in text.casefold() for own in own_texts):
        return True
    return any(p.search(text) for p in OVERFLOW_PATTERNS) or any(p.search(text) for p in EXTRA_OVERFLOW_PATTERNS)


def stated_window(text: str) -> int | None:
    """The context window (tokens) an overflow error text states, or None.

    None too when the text is not an overflow at all: a size in a rate-limit or payload message
    ("exceeds the limit of 20 MB") is not a context window.
    """
    return _stated(text, _WINDOW_PATTERNS)


def stated_prompt_tokens(text: str) -> int | None:
    """The prompt size (tokens) an overflow error text states, as the server counted it, or None:
    llama.cpp's "request (18735 tokens) exceeds the available context size (16384 tokens)" gives 18735."""
    return _stated(text, _REQUEST_PATTERNS)


def _stated(text: str, patterns: Sequence[re.Pattern[str]]) -> int | None:
    """The first positive number a pattern's group captures in an overflow ``text`` (None: not overflow)."""
    if not is_overflow_error_text(text):
        return None
    for pattern in patterns:
        match = pattern.search(text)
        if match and int(match.group(1)) > 0:
            return int(match.group(1))
    return None


def is_context_overflow(
    message: Mapping[str, Any], context_window: int | None = None, own_texts: Sequence[str] = ()
) -> bool:
    """True when the assistant ``message`` shows the request overflowed the context window.

    1. ``stopReason == "error"`` and the error text matches a pattern (searched anywhere,
       case-insensitively; the Cerebras one anchored at the start), unless it is a throttling or
       rate-limit text (``_NOT_OVERFLOW``: retryable, never overflow, even saying "too many tokens").
    2. Silent overflow (z.ai style): ``stopReason == "stop"`` but ``input + cacheRead`` exceeds the window.
    3. Length stop with nothing produced (Xiaomi MiMo style): ``stopReason == "length"``, zero output
       tokens and ``input + cacheRead`` at 99 % of the window or more.
    Cases 2 and 3 need ``context_window``; without it only case 1 applies.
    """
    stop_reason = message.get("stopReason")
    if stop_reason == "error":
        text = message.get("errorMessage")
        if isinstance(text, str) and is_overflow_error_text(text, own_texts):
            return True
    if not context_window:
        return False
    usage = message.get("usage")
    if not isinstance(usage, Mapping):
        return False
    prompt_tokens = _count(usage, "input") + _count(usage, "cacheRead")
    if stop_reason == "stop":
        return prompt_tokens > context_window
    if stop_reason == "length":
        return _count(usage, "output") == 0 and prompt_tokens >= _LENGTH_STOP_SHARE * context_window
    return False


def _count(usage: Mapping[str, Any], key: str) -> float:
    value = usage.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def is_overflow_of(message: Mapping[str, Any], info: ModelInfo) -> bool:
    """``is_context_overflow`` for ``info``'s model: an error from another model (a reply recorded
    before a model switch) says nothing about this one's window."""
    if message.get("model") is not None and not info.is_same_model(message.get("provider"), message.get("model")):
        return False
    return is_context_overflow(message, info.context_window, info.overflow_texts)

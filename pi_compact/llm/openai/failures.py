"""The direct client's failures as ``Failure`` values (pure).

The kind for an HTTP answer, or for an error inside a 200 stream, is the one the litellm path ends
with for the same answer, so both paths say the same words and retry alike
(``tests/llm/test_llm_compat_parity.py`` compares them on a corpus of server answers).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pi_compact.llm.failures import Failure, FailureRaised, chain, provider_text, root_text, weigh

_RATE_LIMIT_WORDS = re.compile(r"rate[\s_\-]*limit")
_BARE_429 = re.compile(r"\b429\b")
_TIMEOUT_WORDS = ("Request Timeout Error", "Request timed out", "Timed out generating response",
                  "The read operation timed out")
_CONTEXT_WORDS = (
    "exceed context limit",
    "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "string too long. expected a string with maximum length",
    "model's maximum context limit",
    "is longer than the model's context length",
    "input tokens exceed the configured limit",
    "`inputs` tokens + `max_new_tokens` must be",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    '"code": "context_length_exceeded"',
    "prompt is too long",
)
# Each is a pair of words that must both appear (lower-cased).
_CONTEXT_WORD_PAIRS = (
    ("current length is", "while limit is"),
    ("maximum input length is", "tokens"),
    ("input too long:", "input tokens, limit is"),
)
# The status litellm's failure reports for what the text says (an answer's own status otherwise).
_TEXT_STATUS = {"timeout": 408, "rate_limit": 429, "overflow": 400, "policy": 400, "server": 500}


def status_failure(status: int, body: str, *, reason: str = "", url: str = "") -> Failure:
    """The failure for an HTTP answer with ``status`` (not 200), status-line ``reason`` and ``body``."""
    # What the OpenAI SDK (litellm's client) puts in its exception, which litellm's rules read.
    sdk_text = f"Error code: {status}"
    message = _json_message(body)
    if message:
        sdk_text += f" - {message}"
    said = _what_text_says(status, sdk_text)
    reported = status
    if said == "timeout":
        reported = 504 if status == 504 else 408
    elif said == "server":
        reported = 500
    return weigh(text=provider_text(body, sdk_text, reported), status=reported, body=body,
                 overflow=said == "overflow", rate_limited=said == "rate_limit", timed_out=said == "timeout",
                 root=_httpx_status_sentence(status, reason, url))


def stream_failure(message: str) -> FailureRaised:
    """A failure reported inside a 200 answer (an error event, an abort, an unreadable event)."""
    said = _what_text_says(500, message)
    status = _TEXT_STATUS.get(said or "", 500)
    return FailureRaised(weigh(text=provider_text("", message, status), status=status,
                               overflow=said == "overflow", rate_limited=said == "rate_limit",
                               timed_out=said == "timeout", root=message))


def finish_reason_error(chunk: str) -> FailureRaised:
    """A choice that finished with the reason ``error``: a connection error on the litellm path, whose
    text quotes the chunk (in Python's notation there, as JSON here)."""
    return FailureRaised(Failure(
        "connection",
        "openai raised a streaming error - finish_reason: error, no content string given. "
        f"Received Chunk={chunk}",
    ))


def failure_of(exc: BaseException) -> Failure:
    """Any exception of the direct client (``stream_reply``'s ``failure_of``)."""
    if isinstance(exc, FailureRaised):
        return exc.failure
    errors = list(chain(exc))
    return weigh(text=provider_text("", str(exc), None), status=None,
                 timed_out=any(isinstance(error, TimeoutError) for error in errors),
                 disconnected=any(isinstance(error, ConnectionError) for error in errors),
                 root=root_text(exc), name=type(exc).__name__)


def _what_text_says(status: int, text: str) -> str | None:
    """litellm's reading of an OpenAI-compatible failure, in its order; None: go by the status.

    A timeout wording, then a rate-limit one (or a bare "429" with status 429), then a context-window
    one, then content-policy wordings (a refused request, nothing more), "Request too large" (a rate
    limit) and the OpenAI server-error sentences. By status, 408 and 504 are timeouts.
    """
    lowered = text.lower()
    if any(words in text for words in _TIMEOUT_WORDS):
        return "timeout"
    if (_BARE_429.search(text) and status == 429) or _RATE_LIMIT_WORDS.search(lowered) or (
        "service tier capacity exceeded" in lowered
    ):
        return "rate_limit"
    if _is_context_text(lowered):
        return "overflow"
    if "A timeout occurred" in text:
        return "timeout"
    if ("invalid prompt" in lowered and "violating our usage policy" in lowered) or (
        "request was rejected as a result of the safety system" in lowered
    ):
        return "policy"
    if "Request too large" in text:
        return "rate_limit"
    if "The server had an error processing your request." in text or (
        "Web server is returning an unknown error" in text
    ):
        return "server"
    return "timeout" if status in (408, 504) else None


def _httpx_status_sentence(status: int, reason: str, url: str) -> str:
    """What httpx (under litellm) says about a status; litellm's timeouts quote it as their cause."""
    kinds = {1: "Informational response", 3: "Redirect response", 4: "Client error", 5: "Server error"}
    kind = kinds.get(status // 100, "Invalid status code")
    return (f"{kind} '{status} {reason}' for url '{url}'\n"
            f"For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{status}")


def _is_context_text(lowered: str) -> bool:
    if "string_above_max_length" in lowered:
        return False
    if "invalid 'user'" in lowered and "string too long" in lowered:
        return False
    if any(words in lowered for words in _CONTEXT_WORDS):
        return True
    return any(first in lowered and second in lowered for first, second in _CONTEXT_WORD_PAIRS)


def _json_message(body: str) -> str | None:
    """``error.message`` (or a top-level ``message``) of a JSON body, as the OpenAI SDK reads it."""
    try:
        parsed: Any = json.loads(body.strip())
    except ValueError:
        return None
    error = parsed.get("error", parsed) if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else None

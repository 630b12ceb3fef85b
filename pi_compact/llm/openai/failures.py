"""Failures of the direct OpenAI-compatible client, named as litellm names them (pure).

``retry.describe_failure`` reads an exception's class names, ``status_code``, ``response.text`` and
``message``; it was written against litellm's exceptions. The direct client (``openai_compat``)
raises the exceptions built here instead, which carry the same class names and attributes litellm's
would for the same server answer, so both paths report the same ``errorMessage`` and make the same
retry decision. litellm's choice for an OpenAI-compatible server goes, in order:

1. text saying the request timed out -> ``Timeout`` (408);
2. a rate-limit wording (or a bare "429" when the status is 429 or unknown) -> ``RateLimitError`` (429);
3. a context-window wording -> ``ContextWindowExceededError`` (400);
4. content-policy wordings -> ``ContentPolicyViolationError`` (400);
5. "Request too large" -> ``RateLimitError``;
6. otherwise by status: 400/422 bad request, 401, 404, 408 and 504 (timeouts), 429, 500, 502, 503,
   anything else keeps its status.

The exception reports the HTTP status it came with (litellm's exceptions take it from the response),
except a timeout (408, or 504 for a 504) and an internal server error (500). A timeout's text names
its root cause, which on the litellm path is httpx's "Server error '504 Gateway Timeout' for url
..." sentence; it is rebuilt here from the status line. A failure inside a 200 stream has no
response: it reports the status of its class (400 for a bad request...). A reply that finishes with
the reason ``error`` is a connection error for litellm, whose text quotes the chunk.

The text checked is what the OpenAI SDK puts in its exception: ``Error code: <status>`` plus
`` - <error.message>`` when the body is JSON with a message. ``tests/test_llm_compat_parity.py``
compares the outcome with litellm's for a corpus of server answers.
"""

from __future__ import annotations

import json
import re
from typing import Any

_RATE_LIMIT_WORDS = re.compile(r"rate[\s_\-]*limit")
_BARE_429 = re.compile(r"\b429\b")
_TIMEOUT_WORDS = ("Request Timeout Error", "Request timed out", "Timed out generating response",
                  "The read operation timed out", "A timeout occurred")
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
_STATUS_CLASSES = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 408: "Timeout",
                   422: "BadRequestError", 429: "RateLimitError", 500: "InternalServerError",
                   502: "BadGatewayError", 503: "ServiceUnavailableError", 504: "Timeout"}
# The status litellm's exception of each class reports when there is no HTTP response.
_CLASS_STATUS = {"BadRequestError": 400, "AuthenticationError": 401, "NotFoundError": 404, "Timeout": 408,
                 "RateLimitError": 429, "InternalServerError": 500, "BadGatewayError": 502,
                 "ServiceUnavailableError": 503, "ContextWindowExceededError": 400,
                 "ContentPolicyViolationError": 400}


class _Body:
    """Stands in for the HTTP response ``describe_failure`` reads the body from."""

    def __init__(self, text: str) -> None:
        self.text = text


class ProviderError(Exception):
    """Base of the named failures; ``response.text`` is the body, "" when there was none."""

    def __init__(self, status_code: int | None, message: str, body: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.response = _Body(body)


class APIError(ProviderError):
    pass


class BadRequestError(ProviderError):
    pass


class AuthenticationError(ProviderError):
    pass


class NotFoundError(ProviderError):
    pass


class Timeout(ProviderError):  # noqa: N818 - litellm's name, which describe_failure looks for
    pass


class RateLimitError(ProviderError):
    pass


class InternalServerError(ProviderError):
    pass


class BadGatewayError(ProviderError):
    pass


class ServiceUnavailableError(ProviderError):
    pass


class ContextWindowExceededError(BadRequestError):
    pass


class APIConnectionError(ProviderError):
    pass


class HTTPStatusError(Exception):
    """The root cause litellm's timeouts carry: httpx's sentence about the status (never raised)."""


class ContentPolicyViolationError(BadRequestError):
    pass


_CLASSES: dict[str, type[ProviderError]] = {
    cls.__name__: cls
    for cls in (APIError, BadRequestError, AuthenticationError, NotFoundError, Timeout, RateLimitError,
                InternalServerError, BadGatewayError, ServiceUnavailableError, ContextWindowExceededError,
                ContentPolicyViolationError)
}


def status_failure(status: int, body: str, *, reason: str = "", url: str = "") -> ProviderError:
    """The failure for an HTTP answer with ``status`` (not 200), status-line ``reason`` and ``body``."""
    sdk_text = f"Error code: {status}"
    message = _json_message(body)
    if message:
        sdk_text += f" - {message}"
    name = _class_name(status, sdk_text)
    if name == "Timeout":
        failure: ProviderError = Timeout(504 if status == 504 else 408, sdk_text, body)
        failure.__cause__ = HTTPStatusError(_httpx_status_sentence(status, reason, url))
        return failure
    return _CLASSES[name](500 if name == "InternalServerError" else status, sdk_text, body)


def stream_failure(message: str, status: int = 500) -> ProviderError:
    """A failure reported inside a 200 answer (an error event, an abort, an unreadable event)."""
    name = _class_name(status, message)
    return _CLASSES[name](_CLASS_STATUS.get(name, status), message, "")


def finish_reason_error(chunk: str) -> ProviderError:
    """A choice that finished with the reason ``error`` (litellm raises a plain exception, then a
    connection error; its text quotes the chunk in Python's notation, ours quotes the JSON)."""
    return APIConnectionError(
        None,
        "openai raised a streaming error - finish_reason: error, no content string given. "
        f"Received Chunk={chunk}",
    )


def _httpx_status_sentence(status: int, reason: str, url: str) -> str:
    kinds = {1: "Informational response", 3: "Redirect response", 4: "Client error", 5: "Server error"}
    kind = kinds.get(status // 100, "Invalid status code")
    return (f"{kind} '{status} {reason}' for url '{url}'\n"
            f"For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/{status}")


def _class_name(status: int, text: str) -> str:
    lowered = text.lower()
    if any(words in text for words in _TIMEOUT_WORDS[:4]):
        return "Timeout"
    if (_BARE_429.search(text) and status == 429) or _RATE_LIMIT_WORDS.search(lowered) or (
        "service tier capacity exceeded" in lowered
    ):
        return "RateLimitError"
    if _is_context_text(lowered):
        return "ContextWindowExceededError"
    if "A timeout occurred" in text:
        return "Timeout"
    if ("invalid prompt" in lowered and "violating our usage policy" in lowered) or (
        "request was rejected as a result of the safety system" in lowered
    ):
        return "ContentPolicyViolationError"
    if "Request too large" in text:
        return "RateLimitError"
    if "The server had an error processing your request." in text or (
        "Web server is returning an unknown error" in text
    ):
        return "InternalServerError"
    return _STATUS_CLASSES.get(status, "APIError")


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

"""How a failed provider call is reported and whether it is worth retrying.

``describe_failure(exc)`` turns an exception raised by litellm (or the HTTP stack under it) into the
``errorMessage`` text of an error assistant message, plus a retry verdict:

- context overflow -> "context length exceeded: <provider text>", never retried (compaction's job);
  recognised from litellm's ``ContextWindowExceededError`` or a 400 whose body says
  ``context_length_exceeded`` (litellm only spots some wordings), unless the body's error code names
  another size limit (OpenAI's ``string_above_max_length``);
- HTTP 429 -> "429 rate limit: <provider text>", retried. The words "rate limit" keep
  ``is_context_overflow`` from mistaking "too many tokens per min" for an overflow;
- connection refused/reset and timeouts -> a text naming the endpoint, retried;
- HTTP 5xx (and 529 "overloaded") -> "<status> <provider text>", retried;
- anything else (401, 404, 400...) -> "<status> <provider text>", not retried.

Classification is by exception class *names* and ``status_code`` rather than ``isinstance`` so this
module never imports litellm (importing it costs seconds). Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pi_compact.settings import RetrySettings

CONTEXT_EXCEEDED_PREFIX = "context length exceeded: "

_CONNECTION_NAMES = frozenset(
    {"APIConnectionError", "ConnectError", "ConnectionError", "RemoteProtocolError", "ReadError"}
)
_TIMEOUT_NAMES = frozenset(
    {"Timeout", "APITimeoutError", "TimeoutException", "ReadTimeout", "ConnectTimeout"}
)
# litellm prefixes its messages with its own class names: "litellm.BadRequestError: OpenAIException - ..."
_LITELLM_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+(?:Error|Exception)(?::\s*|\s+-\s+))+")


# What the Python OpenAI SDK says when an error response has no body.
_BARE_STATUS = re.compile(r"Error code: \d+")
_GENERIC_ERROR_TYPES = frozenset({"invalid_request_error", "error", "api_error"})
# Error codes that say "a size limit, but not the context window". litellm skips them in its own string
# check, yet its OpenAI mapping can still call such a 400 a ContextWindowExceededError.
_NOT_CONTEXT_CODES = ("string_above_max_length",)


@dataclass(frozen=True)
class FailureReport:
    """What to put in ``errorMessage`` and whether another attempt may succeed."""

    text: str
    retryable: bool


def backoff_delay_ms(attempt: int, settings: RetrySettings) -> int:
    """Delay before retry number ``attempt + 1`` (attempt counts from 0): doubling, capped."""
    return int(min(settings.base_delay_ms * 2**attempt, settings.max_delay_ms))


def describe_failure(exc: BaseException, *, endpoint: str) -> FailureReport:
    """Classify one provider failure; ``endpoint`` names where the request went (for the user)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = _status_code(exc)
    body = _response_text(exc)
    text = _provider_text(exc, body, status)
    if not any(code in body for code in _NOT_CONTEXT_CODES) and (
        "ContextWindowExceededError" in names or (status == 400 and "context_length_exceeded" in body)
    ):
        return FailureReport(CONTEXT_EXCEEDED_PREFIX + text, retryable=False)
    if status == 429 or "RateLimitError" in names:
        return FailureReport(f"429 rate limit: {text}", retryable=True)
    chain_names = {cls.__name__ for err in _chain(exc) for cls in type(err).__mro__}
    if chain_names & _TIMEOUT_NAMES or any(isinstance(err, TimeoutError) for err in _chain(exc)):
        return FailureReport(f"Request to {endpoint} timed out: {_root_text(exc)}", retryable=True)
    if chain_names & _CONNECTION_NAMES:
        return FailureReport(f"Connection error: cannot reach {endpoint}: {_root_text(exc)}", retryable=True)
    if status is not None and status >= 500:
        return FailureReport(f"{status} {text}", retryable=True)
    if status is not None:
        return FailureReport(f"{status} {text}", retryable=False)
    return FailureReport(text or type(exc).__name__, retryable=False)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it was raised from or during, without looping."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _root_text(exc: BaseException) -> str:
    *_, root = _chain(exc)
    return str(root) or type(root).__name__


def _status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _response_text(exc: BaseException) -> str:
    """The raw HTTP error body, when the exception carries a read response."""
    response = getattr(exc, "response", None)
    try:
        text = getattr(response, "text", "")
    except Exception:  # an unread streaming response raises on .text; there is just no body then
        return ""
    return text if isinstance(text, str) else ""


def _provider_text(exc: BaseException, body: str, status: int | None) -> str:
    """The provider's own error sentence: from the JSON body if possible, else litellm's message."""
    if body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return body.strip()
        message = _json_error_message(parsed)
        return message if message else body.strip()
    message = str(getattr(exc, "message", "") or exc)
    stripped = _LITELLM_PREFIX.sub("", message).strip()
    if status is not None and (not stripped or _BARE_STATUS.fullmatch(stripped)):
        # No body at all. Say it the way pi's (JavaScript) SDK does, which its overflow rules expect.
        return "status code (no body)"
    return stripped


def _json_error_message(parsed: object) -> str | None:
    """``error.message`` (OpenAI, Anthropic) or a top-level ``message``/``detail``.

    The error's ``code`` or ``type`` is appended when it adds something: Anthropic's 413 says
    "request_too_large" only there, and "overloaded_error" tells a retry classifier what happened.
    """
    if not isinstance(parsed, dict):
        return None
    error = parsed.get("error")
    if isinstance(error, str):
        return error
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        message = str(error["message"])
        detail = error.get("code") if isinstance(error.get("code"), str) else error.get("type")
        if isinstance(detail, str) and detail not in _GENERIC_ERROR_TYPES and detail not in message:
            return f"{message} ({detail})"
        return message
    for key in ("message", "detail"):
        if isinstance(parsed.get(key), str):
            return str(parsed[key])
    return None

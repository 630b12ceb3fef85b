"""How a failed provider call is reported and whether it is worth retrying (pure).

``describe(failure, endpoint=...)`` turns an adapter's ``Failure`` into the ``errorMessage`` text of
an error assistant message plus a retry verdict; ``backoff_delay_ms`` spaces the retries.
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_compact.llm.failures import Failure
from pi_compact.settings import RetrySettings

CONTEXT_EXCEEDED_PREFIX = "context length exceeded: "
_RETRIED = frozenset({"rate_limit", "timeout", "connection", "server", "empty_reply"})


@dataclass(frozen=True)
class FailureReport:
    """What to put in ``errorMessage`` and whether another attempt may succeed."""

    text: str
    retryable: bool


def backoff_delay_ms(attempt: int, settings: RetrySettings) -> int:
    """Delay before retry number ``attempt + 1`` (attempt counts from 0): doubling, capped."""
    return int(min(settings.base_delay_ms * 2**attempt, settings.max_delay_ms))


def describe(failure: Failure, *, endpoint: str) -> FailureReport:
    """The words for ``failure``; ``endpoint`` names where the request went (for the user)."""
    return FailureReport(_text(failure, endpoint), failure.kind in _RETRIED)


def _text(failure: Failure, endpoint: str) -> str:
    kind, message = failure.kind, failure.message
    if kind == "overflow":  # never retried: making room is compaction's job
        return CONTEXT_EXCEEDED_PREFIX + message
    if kind == "rate_limit":
        # "rate limit" keeps is_context_overflow from taking "too many tokens per min" for an overflow.
        return f"429 rate limit: {message}"
    if kind == "timeout":
        return f"Request to {endpoint} timed out: {message}"
    if kind == "connection":
        return f"Connection error: cannot reach {endpoint}: {message}"
    if kind == "endless":
        return f"Stopped the reply from {endpoint}: {message}; what it streamed until then is kept."
    if kind == "empty_reply":
        return (f"Empty reply from {endpoint}: no text and no tool call (the answer was empty or not an "
                "OpenAI-compatible stream).")
    if failure.status is not None:
        return f"{failure.status} {message}"
    return message

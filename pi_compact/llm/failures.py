"""``Failure``: what went wrong with one provider call, in the project's own terms (pure).

Each adapter maps its own exceptions into a ``Failure`` once (litellm's in ``litellm_model``, HTTP
answers in ``openai.failures``); ``retry`` decides from the value alone what the user reads and
whether to try again. The helpers below read the parts every adapter's exceptions share.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

# overflow: the request did not fit the context window; rate_limit: 429 or a throttling text;
# timeout / connection: no (complete) answer; server: a 5xx; auth, not_found, bad_request: a refused
# request (bad_request also takes any other status); empty_reply: an answer with nothing in it;
# endless: a reply stopped at the size or duration cap (never retried: it would run away again);
# cancelled: the caller's cancel token fired; unknown: none of these (a bug, an unexpected exception).
FailureKind = Literal[
    "overflow", "rate_limit", "timeout", "connection", "server", "auth", "not_found", "bad_request",
    "empty_reply", "endless", "cancelled", "unknown",
]


@dataclass(frozen=True)
class Failure:
    """One failed call. ``message`` is the provider's own sentence (for a timeout or a connection
    error: what the network layer said); ``status`` the HTTP status the failure reports, if any."""

    kind: FailureKind
    message: str
    status: int | None = None


class FailureRaised(Exception):
    """Carries a ``Failure`` an adapter classified where it happened (inside a stream, say) to the
    adapter's own mapping, which unwraps it."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _kind_for_status(status: int) -> FailureKind:
    """The kind of a refused request by its HTTP status alone."""
    if status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limit"
    return "bad_request"


def chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything it was raised from or during, without looping."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def root_text(exc: BaseException) -> str:
    """What the innermost cause says (the network layer's own words for a timeout or a refusal)."""
    *_, root = chain(exc)
    return str(root) or type(root).__name__


# Library messages start with their class names: "litellm.BadRequestError: OpenAIException - ...".
_CLASS_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+(?:Error|Exception)(?::\s*|\s+-\s+))+")
_BYTES_REPR = re.compile(r"b(?:'.*'|\".*\")", re.DOTALL)
# What the Python OpenAI SDK says when an error response has no body.
_BARE_STATUS = re.compile(r"Error code: \d+")
_GENERIC_ERROR_TYPES = frozenset({"invalid_request_error", "error", "api_error"})
# Error codes that name a size limit other than the context window.
_NOT_CONTEXT_CODES = ("string_above_max_length",)


def _says_not_context(body: str) -> bool:
    """Does an error body name a size limit that is not the context window?"""
    return any(code in body for code in _NOT_CONTEXT_CODES)


def provider_text(body: str, message: str, status: int | None) -> str:
    """The provider's own error sentence: from the JSON ``body`` if there is one, else ``message``
    without the class names libraries put in front."""
    if body:
        try:
            parsed = json.loads(body)
        except ValueError:
            return body.strip()
        found = _json_error_message(parsed)
        return found if found else body.strip()
    stripped = _CLASS_PREFIX.sub("", message).strip()
    quoted = _bytes_literal(stripped)
    if quoted is not None:  # litellm wraps some bodies as a Python bytes repr: b'{"type": "error", ...}'
        return provider_text(quoted, "", status) if quoted.strip() else stripped
    if stripped.startswith("{"):  # a JSON body inside the message (no body of its own came with it)
        found = _json_body_message(stripped)
        if found:
            return found
    if status is not None and (not stripped or _BARE_STATUS.fullmatch(stripped)):
        # No body at all. Say it the way pi's (JavaScript) SDK does, which its overflow rules expect.
        return "status code (no body)"
    return stripped


def _bytes_literal(text: str) -> str | None:
    """The text inside a Python bytes literal (``b'...'``), decoded; None when ``text`` is not one."""
    if not _BYTES_REPR.fullmatch(text):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else None


def _json_body_message(text: str) -> str | None:
    try:
        return _json_error_message(json.loads(text))
    except ValueError:
        return None


def _json_error_message(parsed: object) -> str | None:
    """``error.message`` (OpenAI, Anthropic) or a top-level ``message``/``detail``.

    The error's ``code`` or ``type`` is appended when it adds something: Anthropic's 413 says
    "request_too_large" only there, and "overloaded_error" tells the reader what happened.
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


def weigh(
    *,
    text: str,
    status: int | None,
    body: str = "",
    overflow: bool = False,
    rate_limited: bool = False,
    timed_out: bool = False,
    disconnected: bool = False,
    root: str = "",
    name: str = "",
) -> Failure:
    """The failure an adapter's evidence adds up to, weighed in one order for every adapter.

    ``text`` is the provider's sentence, ``root`` the network layer's, ``name`` what to say when
    there is no text at all. An overflow is recognised from the adapter's word or from a 400 whose
    body says ``context_length_exceeded`` (not every wording is known to the adapters), unless the
    body names another size limit.
    """
    if not _says_not_context(body) and (overflow or (status == 400 and "context_length_exceeded" in body)):
        return Failure("overflow", text, status)
    if status == 429 or rate_limited:
        return Failure("rate_limit", text, status)
    if timed_out:
        return Failure("timeout", root, status)
    if disconnected:
        return Failure("connection", root, status)
    if status is not None:
        return Failure(_kind_for_status(status), text, status)
    return Failure("unknown", text or name)

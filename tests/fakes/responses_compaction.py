"""OpenAI's compaction for the fake Responses server: ``POST /v1/responses/compact``, the ``compaction_trigger``
input item, ``context_management`` with ``compact_threshold``, and the rules on what comes back.

A compaction item is ``{"id": "cmp_…", "type": "compaction", "encrypted_content": …}``; its content carries
an HMAC of the model and the API key it was made for (the real one is bound to the model and the account),
so an item sent to another model or with another key is refused. ``previous_response_id`` must name a
response the server kept (``store`` not false). Texts marked *seen* in README.md were returned by the real
API (quoted in public bug reports and code, 2026); the others are *modelled*.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .responses_error import OpenAIError

TRIGGER = "compaction_trigger"
MIN_THRESHOLD = 1000  # litellm's note on ``compact_threshold`` ("Minimum 1000")
_MAC = 32
_NONCE = 16


class CompactionVerifier(Protocol):
    def verify_compaction(self, encrypted: object, model: str, key: str) -> bool: ...

    def kept(self, response_id: str) -> bool: ...


def mint(secret: bytes, model: str, key: str, summary: str) -> str:
    """An opaque compaction payload for ``model`` and ``key``; as long as a real one for ``summary`` (random
    filler, so the summary cannot be read back from it). The MAC covers every byte before it."""
    body = b"gAAAA" + secrets.token_bytes(_NONCE) + secrets.token_bytes(max(16, len(summary.encode())))
    return base64.b64encode(body + _mac(secret, body, model, key)).decode()


def decoded(encrypted: object) -> bytes | None:
    """The bytes of a base64 payload the server issued, or None when it is not base64 text at all."""
    if not isinstance(encrypted, str):
        return None
    try:
        return base64.b64decode(encrypted, validate=True)
    except ValueError:
        return None


def verify(secret: bytes, encrypted: object, model: str, key: str) -> bool:
    raw = decoded(encrypted)
    if raw is None:
        return False
    body, mac = raw[:-_MAC], raw[-_MAC:]
    well_formed = raw.startswith(b"gAAAA") and len(body) > 5 + _NONCE
    return well_formed and hmac.compare_digest(mac, _mac(secret, body, model, key))


def _mac(secret: bytes, body: bytes, model: str, key: str) -> bytes:
    return hmac.new(secret, b"compaction\0" + body + model.encode() + b"\0" + key.encode(), hashlib.sha256).digest()


def check_item(
    position: int, item: Mapping[str, Any], items: Sequence[Any], verifier: CompactionVerifier, model: str, key: str,
    *, trigger_allowed: bool,
) -> OpenAIError | None:
    """A ``compaction`` or ``compaction_trigger`` input item."""
    if item.get("type") == TRIGGER:
        if not trigger_allowed:
            return OpenAIError(400, f"Invalid value: '{TRIGGER}'. A compaction trigger can only be sent to "
                                    "/v1/responses.", f"input[{position}].type", "invalid_value")
        if position != len(items) - 1:  # the SDK: "Must be the final input item."
            return OpenAIError(400, f"Invalid 'input[{position}]': a {TRIGGER} item must be the final input item.",
                               f"input[{position}]", "invalid_value")
        return None
    encrypted = item.get("encrypted_content")
    if not isinstance(encrypted, str) or not encrypted:
        return OpenAIError(400, f"Missing required parameter: 'input[{position}].encrypted_content'.",
                           f"input[{position}].encrypted_content", "missing_required_parameter")
    if not verifier.verify_compaction(encrypted, model, key):  # seen
        named = f"for item {item['id']}" if isinstance(item.get("id"), str) else f"{encrypted[:4]}...{encrypted[-4:]}"
        return OpenAIError(400, f"The encrypted content {named} could not be verified. Reason: Encrypted content "
                                "could not be decrypted or parsed.", None, "invalid_encrypted_content")
    return None


def check_previous(body: Mapping[str, Any], verifier: CompactionVerifier) -> OpenAIError | None:
    previous = body.get("previous_response_id")
    if previous is None or (isinstance(previous, str) and verifier.kept(previous)):
        return None
    return OpenAIError(400, f"Previous response with id '{previous}' not found.", "previous_response_id",
                       "previous_response_not_found")  # seen


def check_context_management(body: Mapping[str, Any]) -> OpenAIError | None:
    settings = body.get("context_management")
    if settings is None:
        return None
    if not isinstance(settings, list):
        return OpenAIError(400, "Invalid type for 'context_management': expected an array, but got an object "
                                "instead.", "context_management", "invalid_type")
    for position, entry in enumerate(settings):
        where = f"context_management[{position}]"
        if not isinstance(entry, dict) or entry.get("type") != "compaction":
            kind = entry.get("type") if isinstance(entry, dict) else None
            return OpenAIError(400, f"Invalid value: {kind!r}. Supported values are: 'compaction'.", f"{where}.type",
                               "invalid_value")
        threshold = entry.get("compact_threshold")
        if threshold is not None and (not isinstance(threshold, int) or threshold < MIN_THRESHOLD):
            return OpenAIError(400, f"Invalid '{where}.compact_threshold': integer below minimum value. Expected a "
                                    f"value >= {MIN_THRESHOLD}, but got {threshold} instead.",
                               f"{where}.compact_threshold", "integer_below_min_value")
    return None


def threshold(body: Mapping[str, Any]) -> int | None:
    """The ``compact_threshold`` a valid request declares (None: no server-side compaction asked)."""
    for entry in body.get("context_management") or ():
        value = entry.get("compact_threshold") if isinstance(entry, dict) else None
        if isinstance(value, int):
            return value
    return None


def triggered(body: Mapping[str, Any]) -> bool:
    items = body.get("input")
    return isinstance(items, list) and bool(items) and isinstance(items[-1], dict) and items[-1].get("type") == TRIGGER


def compaction_item(encrypted: str) -> dict[str, Any]:
    return {"id": "cmp_" + secrets.token_hex(24), "type": "compaction", "encrypted_content": encrypted}


def kept_user_messages(items: Sequence[Any]) -> list[dict[str, Any]]:
    """The user messages of a compacted input, as ``/responses/compact`` returns them (input_text parts)."""
    kept: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, dict) or item.get("type", "message") != "message" or item.get("role") != "user":
            continue
        content = item.get("content")
        parts = [{"type": "input_text", "text": content}] if isinstance(content, str) else [
            part for part in content or [] if isinstance(part, dict)]
        kept.append({"id": "msg_" + secrets.token_hex(24), "type": "message", "status": "completed",
                     "content": parts, "role": "user"})
    return kept

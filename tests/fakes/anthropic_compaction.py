"""Anthropic's server-side compaction (the ``compact_20260112`` edit, beta ``compact-2026-01-12``) for the fake.

``check_compaction`` returns the first rule a request breaks (``ApiError``) or None; ``compact_edit`` the
edit a valid request declares; ``from_last_block`` the request as the API reads it (everything before the
last ``compaction`` block with text is dropped; a block whose ``content`` is null is a no-op). Texts marked
*seen* in README.md were returned by the real API (quoted in public code, 2026-10); the others follow the
API's pydantic wording and are *modelled*.

The block the fake issues and accepts is the documented one: ``{"type": "compaction", "content": str | null}``
(plus ``cache_control`` in requests). Newer SDKs (0.103, Opus 4.7) also know an ``encrypted_content`` the
API may return and wants back verbatim; the fake never issues one, so one in a request is refused as an
extra input, which keeps clients from inventing it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .anthropic_checks import ApiError, content_parts, invalid

COMPACT_BETA = "compact-2026-01-12"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
EDIT_TYPE = "compact_20260112"
OTHER_EDIT_TYPES = ("clear_tool_uses_20250919", "clear_thinking_20251015")
MIN_TRIGGER = 50_000
DEFAULT_TRIGGER = 150_000
EDIT_FIELDS = frozenset({"type", "trigger", "pause_after_compaction", "instructions"})
BLOCK_FIELDS = frozenset({"type", "content", "cache_control"})
# The models of the docs' ``supportedModels`` list for this edit (a dated snapshot id counts as its model).
COMPACTION_MODELS = (
    "claude-opus-4-6", "claude-opus-4-7", "claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-5-5",
    "claude-sonnet-5", "claude-sonnet-5-5", "claude-opus-5", "claude-opus-5-5", "claude-fable-5",
    "claude-fable-5-1", "claude-mythos-5", "claude-mythos-5-1", "claude-mythos-preview",
)
_DATED = re.compile(r"-\d{8}$")
# The block kinds a request may carry without the beta, as the API lists them when it meets an unknown one.
KNOWN_BLOCKS = ("text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use",
                "tool_result", "server_tool_use", "web_search_tool_result")


@dataclass(frozen=True)
class CompactEdit:
    """A declared ``compact_20260112`` edit, defaults filled in."""

    trigger: int = DEFAULT_TRIGGER
    pause_after: bool = False
    instructions: str | None = None


def betas(headers: Mapping[str, str]) -> set[str]:
    return {part.strip() for part in headers.get("anthropic-beta", "").split(",") if part.strip()}


def supports_compaction(model: str) -> bool:
    return _DATED.sub("", model) in COMPACTION_MODELS


def check_compaction(headers: Mapping[str, str], body: Mapping[str, Any]) -> ApiError | None:
    """The first compaction rule ``body`` breaks: the edit, then the blocks (in the API's order)."""
    return _edits(headers, body) or _blocks(headers, body)


def compact_edit(body: Mapping[str, Any]) -> CompactEdit | None:
    """The edit a request that passed ``check_compaction`` declares, or None."""
    settings = body.get("context_management")
    edits = settings.get("edits") if isinstance(settings, Mapping) else None
    for edit in edits if isinstance(edits, list) else ():
        if isinstance(edit, Mapping) and edit.get("type") == EDIT_TYPE:
            trigger = edit.get("trigger")
            value = trigger.get("value") if isinstance(trigger, Mapping) else None
            return CompactEdit(value if isinstance(value, int) else DEFAULT_TRIGGER,
                               bool(edit.get("pause_after_compaction")), edit.get("instructions"))
    return None


def _edits(headers: Mapping[str, str], body: Mapping[str, Any]) -> ApiError | None:
    if "context_management" not in body:
        return None
    enabled = betas(headers)
    if not enabled & {COMPACT_BETA, CONTEXT_MANAGEMENT_BETA}:  # seen: the field is unknown without a beta
        return invalid("context_management: Extra inputs are not permitted")
    settings = body["context_management"]
    if not isinstance(settings, Mapping):
        return invalid("context_management: Input should be a valid dictionary")
    extra = sorted(set(settings) - {"edits"})
    if extra:
        return invalid(f"context_management.{extra[0]}: Extra inputs are not permitted")
    edits = settings.get("edits")
    if not isinstance(edits, list):
        return invalid("context_management.edits: Input should be a valid list")
    allowed = ((EDIT_TYPE,) if COMPACT_BETA in enabled else ()) + (
        OTHER_EDIT_TYPES if CONTEXT_MANAGEMENT_BETA in enabled else ())
    for position, edit in enumerate(edits):
        path = f"context_management.edits.{position}"
        kind = edit.get("type") if isinstance(edit, Mapping) else None
        if kind not in allowed:
            tags = ", ".join(f"'{tag}'" for tag in allowed)
            return invalid(f"{path}: Input tag '{kind}' found using 'type' does not match any of the expected "
                           f"tags: {tags}")
        if kind == EDIT_TYPE:
            error = _edit_fields(path, edit) or _model(body)
            if error is not None:
                return error
    return None


def _edit_fields(path: str, edit: Mapping[str, Any]) -> ApiError | None:
    extra = sorted(set(edit) - EDIT_FIELDS)
    if extra:
        return invalid(f"{path}.{extra[0]}: Extra inputs are not permitted")
    trigger = edit.get("trigger")
    if trigger is not None:
        if not isinstance(trigger, Mapping):
            return invalid(f"{path}.trigger: Input should be a valid dictionary")
        extra = sorted(set(trigger) - {"type", "value"})
        if extra:
            return invalid(f"{path}.trigger.{extra[0]}: Extra inputs are not permitted")
        if trigger.get("type") != "input_tokens":
            return invalid(f"{path}.trigger.type: Input should be 'input_tokens'")
        value = trigger.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            return invalid(f"{path}.trigger.value: Input should be a valid integer")
        if value < MIN_TRIGGER:  # seen
            return invalid(f"{path}.trigger.value: Input should be greater than or equal to {MIN_TRIGGER}")
    pause = edit.get("pause_after_compaction")
    if pause is not None and not isinstance(pause, bool):
        return invalid(f"{path}.pause_after_compaction: Input should be a valid boolean")
    instructions = edit.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        return invalid(f"{path}.instructions: Input should be a valid string")
    return None


def _model(body: Mapping[str, Any]) -> ApiError | None:
    model = str(body.get("model"))
    if supports_compaction(model):
        return None
    return invalid(f"'{model}' does not support the '{EDIT_TYPE}' context management strategy.")  # seen


def _blocks(headers: Mapping[str, str], body: Mapping[str, Any]) -> ApiError | None:
    declared = compact_edit(body) is not None
    for i, message in enumerate(body.get("messages") or ()):
        for j, part in enumerate(content_parts(message)):
            if part.get("type") != "compaction":
                continue
            where = f"messages.{i}.content.{j}"
            if COMPACT_BETA not in betas(headers):  # seen (the real list of tags is longer)
                tags = ", ".join(f"'{tag}'" for tag in KNOWN_BLOCKS)
                return invalid(f"{where}: Input tag 'compaction' found using 'type' does not match any of the "
                               f"expected tags: {tags}")
            error = _block_shape(where, part)
            if error is not None:
                return error
            if not declared:  # seen
                return invalid(f"{where}: `compaction` blocks require a `{EDIT_TYPE}` strategy in "
                               "`context_management.edits`.")
    return None


def _block_shape(where: str, part: Mapping[str, Any]) -> ApiError | None:
    extra = sorted(set(part) - BLOCK_FIELDS)
    if extra:
        return invalid(f"{where}.compaction.{extra[0]}: Extra inputs are not permitted")
    if "content" not in part:
        return invalid(f"{where}.compaction.content: Field required")
    content = part["content"]
    if content is not None and not isinstance(content, str):
        return invalid(f"{where}.compaction.content: Input should be a valid string")
    if content == "":  # seen
        return invalid(f"{where}.compaction.content: content cannot be empty")
    return None


def from_last_block(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` as the API reads it: the messages from the last ``compaction`` block with text on."""
    messages: Sequence[Mapping[str, Any]] = body.get("messages") or ()
    for i in range(len(messages) - 1, -1, -1):
        parts = content_parts(messages[i])
        for j in range(len(parts) - 1, -1, -1):
            if parts[j].get("type") == "compaction" and isinstance(parts[j].get("content"), str):
                kept = {**messages[i], "content": list(parts[j:])}
                return {**body, "messages": [kept, *messages[i + 1:]]}
    return dict(body)


def compacted_body(body: Mapping[str, Any], block: Mapping[str, Any]) -> dict[str, Any]:
    """What the answer's second iteration reads after a compaction: the tools, the system prompt, the block."""
    return {**body, "messages": [{"role": "assistant", "content": [dict(block)]}]}

"""pi's prompt-cache breakpoints on a chat-completions request, what Anthropic reads them from (pure).

``with_cache_marks`` marks the system prompt, the last tool and the last user message (or tool result) of a
request in litellm's chat format, which litellm carries to Anthropic's ``cache_control``; beside them a
fourth at the planned compaction cut. A chat-completions server of ``models.json`` with
``compat.cacheControlFormat: "anthropic"`` (an Anthropic model behind a gateway) gets pi's marks for it
(``chat_cache_marks``): the system prompt, the last tool, the last user or assistant message with text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def with_cache_marks(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], control: Mapping[str, str], cut: int | None = None,
    end: int | None = None,
) -> list[dict[str, Any]]:
    """pi's Anthropic breakpoints: the system prompt, the last tool, the last block of the last
    message when it is the user's (text, image or tool result); with ``cut`` (a count of ``messages``,
    the system message included) a fourth on the last of the first ``cut`` messages that can carry one
    (the planned compaction cut: the summary request on that prefix reads it). Four at most, the API's limit.
    ``end``: the first ``end`` messages are the context, the rest this request's alone (excerpts automatic
    recall attached): the last mark goes on the context's end, so the next request, which carries the context
    and not them, reads what this one wrote (a mark after them was a prefix no later request has).

    ``tools`` (fresh dicts) are marked in place; marked messages are copies, because converted
    messages are shared between requests (``ConvertedHistory``).
    """
    if tools:
        tools[-1]["cache_control"] = dict(control)
    out = list(messages)
    if out and out[0].get("role") in _SYSTEM_ROLES and isinstance(out[0].get("content"), str):
        out[0] = {"role": out[0]["role"], "content": [_text_part(out[0]["content"], control)]}
    first = 1 if out and out[0].get("role") in _SYSTEM_ROLES else 0
    for index in range(min(cut or 0, len(out)) - 1, first - 1, -1):  # an assistant with only tool calls cannot
        marked = _marked(out[index], control)
        if marked is not None:
            out[index] = marked
            break
    if end is not None and first < end <= len(out):
        for index in range(end - 1, first - 1, -1):
            marked = _marked(out[index], control)
            if marked is not None:
                out[index] = marked
                break
    elif len(out) > first:
        last = out[-1]
        if last.get("role") == "tool":  # litellm puts a message-level mark on the tool_result block
            out[-1] = {**last, "cache_control": dict(control)}
        elif last.get("role") == "user":
            content = last.get("content")
            if isinstance(content, str):
                out[-1] = {**last, "content": [_text_part(content, control)]}
            elif isinstance(content, list) and content:
                out[-1] = {**last, "content": [*content[:-1], {**content[-1], "cache_control": dict(control)}]}
    return out


def _marked(message: Mapping[str, Any], control: Mapping[str, str]) -> dict[str, Any] | None:
    """A copy of ``message`` with a breakpoint on its last block, or None where litellm would drop it (an
    assistant message with no text: a mark on its tool calls does not reach the request)."""
    content = message.get("content")
    if message.get("role") == "tool":
        return {**message, "cache_control": dict(control)}
    if isinstance(content, str) and content:
        return {**message, "content": [_text_part(content, control)]}
    if isinstance(content, list) and content and (message.get("role") == "user" or content[-1].get("type") == "text"):
        return {**message, "content": [*content[:-1], {**content[-1], "cache_control": dict(control)}]}
    return None


def _text_part(text: str, control: Mapping[str, str]) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": dict(control)}


def chat_cache_marks(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     control: Mapping[str, str]) -> list[dict[str, Any]]:
    """pi's marks for a chat-completions server that takes Anthropic's: the system (or developer) prompt, the
    last tool, and the last user or assistant message with text (on its last text part)."""
    if tools:
        tools[-1]["cache_control"] = dict(control)
    out = list(messages)
    system = next((i for i, message in enumerate(out) if message.get("role") in _SYSTEM_ROLES), None)
    if system is not None:
        out[system] = _on_text(out[system], control) or out[system]
    for index in range(len(out) - 1, -1, -1):
        marked = _on_text(out[index], control) if out[index].get("role") in ("user", "assistant") else None
        if marked is not None:
            out[index] = marked
            break
    return out


def _on_text(message: Mapping[str, Any], control: Mapping[str, str]) -> dict[str, Any] | None:
    """A copy of ``message`` with a breakpoint on its text (a string, else its last text part); None without."""
    content = message.get("content")
    if isinstance(content, str):
        return {**message, "content": [_text_part(content, control)]} if content else None
    parts = list(content) if isinstance(content, list) else []
    for index in range(len(parts) - 1, -1, -1):
        if isinstance(parts[index], Mapping) and parts[index].get("type") == "text":
            parts[index] = {**parts[index], "cache_control": dict(control)}
            return {**message, "content": parts}
    return None


_SYSTEM_ROLES = ("system", "developer")  # a reasoning model's system prompt goes as "developer" (pi's rule)


__all__ = ["chat_cache_marks", "with_cache_marks"]

"""pi-shaped messages and tools -> OpenAI chat-completions messages, what both HTTP adapters send (pure).

``to_openai_messages`` converts a whole context, ``ConvertedHistory`` only what a growing one gained;
the rules (pi-ai's provider-side transform) are listed on ``_Conversion``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pi_compact.llm.protocol import ToolSpec
from pi_compact.messages import Message, to_llm_message

NO_RESULT_TEXT = "No result provided"
EMPTY_RESULT_TEXT = "(empty result)"
IMAGE_ONLY_RESULT_TEXT = "(the result is the image attached below)"
TOOL_IMAGES_INTRO = "Images returned by the tool calls above:"

_SKIPPED_STOP_REASONS = frozenset({"error", "aborted"})
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs in the chat-completions ``tools`` shape."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
        }
        for t in tools
    ]


def to_openai_messages(system: str, messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The full ``messages`` list for one request: system prompt, then the converted history."""
    conversion = _Conversion(system)
    for message in messages:
        conversion.feed(message)
    return conversion.finish()


class ConvertedHistory:
    """``to_openai_messages`` for a history that only grows: each call converts what was appended.

    A model calls it once per request with the session's context, which is the previous context
    plus new messages. The converted prefix is kept, with the conversion state at its end (tool calls
    still waiting for a result, tool images not yet sent); when the new list starts with the same
    messages (the same objects, or equal ones: agent-only messages are rebuilt on every request) and
    the system prompt is unchanged, only the rest is converted. Anything else converts from scratch.
    The messages must not be changed in place once sent (the session never does). The returned dicts
    are shared between calls: callers must not modify them.
    """

    def __init__(self) -> None:
        self._sources: list[Message] = []
        self._conversion: _Conversion | None = None

    def convert(self, system: str, messages: Sequence[Message]) -> list[dict[str, Any]]:
        done = len(self._sources)
        conversion = self._conversion
        reusable = (
            conversion is not None
            and conversion.system == system
            and len(messages) >= done
            and list(messages[:done]) == self._sources  # identity first, then equality, per element
        )
        if not reusable or conversion is None:
            conversion, done = _Conversion(system), 0
        for message in messages[done:]:
            conversion.feed(message)
        self._sources = list(messages)
        self._conversion = conversion
        return conversion.finish()


class _Conversion:
    """The conversion of one history, message by message.

    - The system prompt comes first (omitted when empty); agent-only roles are converted with
      ``pi_compact.messages.to_llm_message`` first.
    - User text/image blocks become content parts; images become ``data:`` URIs.
    - Assistant messages whose ``stopReason`` is "error" or "aborted" are skipped, as pi does: they are
      failed attempts, not conversation. Thinking blocks are never sent back. Text blocks are joined
      and toolCall blocks become ``tool_calls`` with JSON-string arguments.
    - A tool call still without a result when the next user or assistant message starts gets a
      synthetic error result "No result provided" (providers reject unanswered tool calls).
    - Tool results become ``role: "tool"`` messages; one that answers no open call of the preceding
      assistant message (skipped, or a duplicate) is dropped. Their images follow in one user message.
    - Tool call ids are reduced to ``[A-Za-z0-9_-]{1,64}`` (Anthropic's rule; other pi providers may
      write ``|``), alike for calls and results so the pairing survives.
    """

    def __init__(self, system: str) -> None:
        self.system = system
        self.out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        self.pending: dict[str, str] = {}  # tool call id -> tool name, still waiting for a result
        self.images: list[dict[str, Any]] = []  # tool-result images waiting for the tool messages to end

    def feed(self, message: Message) -> None:
        llm = to_llm_message(message)
        if llm is None:
            return
        role = llm.get("role")
        if role == "toolResult":
            call_id = safe_tool_call_id(str(llm.get("toolCallId", "")))
            if self.pending.pop(call_id, None) is None:
                return  # its call was skipped, already answered, or never made
            text, result_images = _tool_result_parts(llm.get("content"))
            self.out.append({"role": "tool", "tool_call_id": call_id, "content": text})
            self.images.extend(result_images)
            return
        if role == "assistant" and llm.get("stopReason") in _SKIPPED_STOP_REASONS:
            return
        for call_id in self.pending:
            self.out.append({"role": "tool", "tool_call_id": call_id, "content": NO_RESULT_TEXT})
        self.pending.clear()
        self._flush_images(self.out)
        if role == "user":
            converted = _user_message(llm)
        elif role == "assistant":
            converted = _assistant_message(llm)
        else:
            converted = None
        if converted is None:
            return
        self.out.append(converted)
        for call in converted.get("tool_calls", ()):
            self.pending[call["id"]] = call["function"]["name"]

    def finish(self) -> list[dict[str, Any]]:
        """The messages so far; images still waiting are sent last (in the copy, not the state)."""
        result = list(self.out)
        self._flush_images(result)
        return result

    def _flush_images(self, out: list[dict[str, Any]]) -> None:
        if self.images:
            out.append({"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_INTRO}, *self.images]})
            if out is self.out:
                self.images = []


def safe_tool_call_id(call_id: str) -> str:
    """A tool call id every provider accepts (same input -> same output)."""
    cleaned = _ID_UNSAFE.sub("_", call_id)[:64]
    return cleaned or "call"


def _image_part(block: Mapping[str, Any]) -> dict[str, Any]:
    mime = block.get("mimeType") or "image/png"
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{block.get('data', '')}"}}


def _user_message(message: Message) -> dict[str, Any] | None:
    content = message.get("content")
    if isinstance(content, str):
        return {"role": "user", "content": content} if content else None
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, Sequence) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and block.get("text"):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append(_image_part(block))
    return {"role": "user", "content": parts} if parts else None


def _assistant_message(message: Message) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    content = message.get("content")
    for block in content if isinstance(content, Sequence) and not isinstance(content, str) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and block.get("text"):
            texts.append(str(block["text"]))
        elif block.get("type") == "toolCall":
            arguments = block.get("arguments")
            calls.append(
                {
                    "id": safe_tool_call_id(str(block.get("id", ""))),
                    "type": "function",
                    "function": {
                        "name": str(block.get("name", "")),
                        "arguments": json.dumps(arguments if arguments is not None else {}),
                    },
                }
            )
    if isinstance(content, str) and content:
        texts.append(content)
    if not texts and not calls:
        return None  # nothing a provider would accept (e.g. a thinking-only reply)
    converted: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        converted["tool_calls"] = calls
    return converted


def _tool_result_parts(content: Any) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(content, str):
        return (content or EMPTY_RESULT_TEXT), []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in content if isinstance(content, Sequence) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and block.get("text"):
            texts.append(str(block["text"]))
        elif block.get("type") == "image":
            images.append(_image_part(block))
    if texts:
        return "\n".join(texts), images
    return (IMAGE_ONLY_RESULT_TEXT if images else EMPTY_RESULT_TEXT), images

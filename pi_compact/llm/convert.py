"""pi-shaped messages and tools -> OpenAI chat-completions messages, what both HTTP adapters send (pure).

``to_openai_messages`` converts a whole context, ``ConvertedHistory`` only what a growing one gained;
the rules (pi-ai's provider-side transform) are listed on ``_Conversion``. A ``Target`` (the model the
request goes to) decides what only one provider takes: signed thinking and Gemini thought signatures
go back to the model that made them, tool ids are rewritten only where the provider needs it.
Prompt-cache breakpoints are ``cache_marks``'. For Anthropic a failed tool result
carries ``ERROR_FLAG``, which the chat format has no field for; ``flag_failed_results`` turns it into the
``is_error: true`` of the request's ``tool_result`` block (``litellm_model`` calls it inside litellm).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.llm.protocol import ModelInfo, ToolSpec
from pi_compact.llm.server_compaction import block_message, carried_after, carried_block
from pi_compact.messages import Message, to_llm_message
from pi_compact.providers import ANTHROPIC, CHAT_COMPLETIONS, GOOGLE

NO_RESULT_TEXT = "No result provided"
EMPTY_RESULT_TEXT = "(empty result)"
IMAGE_ONLY_RESULT_TEXT = "(the result is the image attached below)"
TOOL_IMAGES_INTRO = "Images returned by the tool calls above:"
BRIDGE_TEXT = "I have processed the tool results."  # pi's words for a server that needs them (``Target``)

_SKIPPED_STOP_REASONS = frozenset({"error", "aborted"})
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
CHAT_ID_LIMIT = 40  # OpenAI refuses a longer ``tool_calls[].id`` on chat completions ("string too long")
# Our own key on a chat-format tool message: "this result is a failure". Named so that no provider and no
# other litellm caller uses it; only the Anthropic request hook reads it (``flag_failed_results``).
ERROR_FLAG = "pi_is_error"


@dataclass(frozen=True)
class Target:
    """The model a conversion is for, by pi's names (the default: an OpenAI-compatible server).

    The last four are pi's ``compat`` wording rules for a chat-completions server of ``models.json``: tool
    results carry the tool's ``name``, an assistant message ("I have processed the tool results.") comes
    between tool results and a user message (and an assistant message without text has ``""``, not null),
    the model's own thinking goes back as text before its answer, and every assistant message of a reasoning
    model carries an empty ``reasoning_content``."""

    provider: str = ""
    model_id: str = ""
    api: str = CHAT_COMPLETIONS
    system_role: str = "system"  # "developer" for a reasoning model whose server takes that role (pi's rule)
    # Whose API key the request goes with (``server_compaction.account_of``), where a provider binds what it
    # returns to the account (OpenAI's compaction items); "" where nothing is bound to it.
    account: str = ""
    result_names: bool = False
    bridge_results: bool = False
    thinking_as_text: bool = False
    reasoning_content: bool = False
    # Send a carried Anthropic compaction block (False once the provider refused one: the readable summary goes).
    blocks: bool = True

    @classmethod
    def of(cls, info: ModelInfo) -> Target:
        compat, chat = info.compat, info.api == CHAT_COMPLETIONS
        return cls(info.provider, info.model_id, info.api, info.system_role,
                   result_names=chat and compat.requires_tool_result_name is True,
                   bridge_results=chat and compat.requires_assistant_after_tool_result is True,
                   thinking_as_text=chat and compat.requires_thinking_as_text is True,
                   reasoning_content=chat and info.reasoning
                   and compat.requires_reasoning_content_on_assistant_messages is True)

    def made(self, message: Mapping[str, Any]) -> bool:
        """Did this model write ``message``? Only then are its signatures valid here (pi's rule)."""
        api = message.get("api")
        return (
            message.get("provider") == self.provider and message.get("model") == self.model_id
            and api in (None, self.api)
        )

    def tool_id(self, call_id: str) -> str:
        """The id as this provider takes it: Gemini's ids travel unchanged (litellm reads a signature
        an older session kept in one); everyone else gets Anthropic's characters. On chat completions an
        OpenAI Responses id (``call_…|fc_…``, 81 characters) keeps its ``call_…`` part and every id at most
        40 characters, OpenAI's limit there (pi's rule); elsewhere at most 64."""
        if self.api == GOOGLE:
            return call_id or "call"
        if self.api == CHAT_COMPLETIONS:
            return safe_tool_call_id(call_id.split("|", 1)[0], CHAT_ID_LIMIT)
        return safe_tool_call_id(call_id)


def to_openai_tools(tools: Sequence[ToolSpec], strict: bool = False) -> list[dict[str, Any]]:
    """Tool specs in the chat-completions ``tools`` shape (``strict``: with pi's ``strict: false``)."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters),
                         **({"strict": False} if strict else {})},
        }
        for t in tools
    ]


def to_openai_messages(
    system: str, messages: Iterable[Message], target: Target | None = None
) -> list[dict[str, Any]]:
    """The full ``messages`` list for one request: system prompt, then the converted history."""
    conversion = _Conversion(system, target or Target())
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

    def convert(
        self, system: str, messages: Sequence[Message], target: Target | None = None
    ) -> list[dict[str, Any]]:
        target = target or Target()
        done = len(self._sources)
        conversion = self._conversion
        reusable = (
            conversion is not None
            and conversion.system == system
            and conversion.target == target
            and len(messages) >= done
            and list(messages[:done]) == self._sources  # identity first, then equality, per element
        )
        if not reusable or conversion is None:
            conversion, done = _Conversion(system, target), 0
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
      failed attempts, not conversation. Text blocks are joined and toolCall blocks become
      ``tool_calls`` with JSON-string arguments.
    - Thinking goes back only to the model that wrote it (``Target.made``): to Anthropic as litellm's
      ``thinking_blocks`` (signed thinking, redacted thinking's opaque data), byte for byte; a toolCall's
      Gemini ``thoughtSignature`` as ``provider_specific_fields``. Anything else is left out, so a
      signature never reaches another provider.
    - A tool call still without a result when the next user or assistant message starts gets a
      synthetic error result "No result provided" (providers reject unanswered tool calls).
    - Tool results become ``role: "tool"`` messages; one that answers no open call of the preceding
      assistant message (skipped, or a duplicate) is dropped. Their images follow in one user message.
      For Anthropic a failed result (``isError``, and every synthetic one, as pi marks them) carries
      ``ERROR_FLAG``.
    - A compaction summary carrying the Anthropic ``compaction`` block of the target model itself
      (``server_compaction.carried_block``) goes as that block, then the text it carries for after it (our kept
      blocks, the recall hint), in an assistant message; to every other
      model it goes as its readable summary (pi's user message).
    - Tool call ids are reduced to ``[A-Za-z0-9_-]{1,64}`` (Anthropic's rule; other pi providers may
      write ``|``), on chat completions to the part before a ``|`` and 40 characters, alike for calls and
      results so the pairing survives; not for Gemini (``Target.tool_id``).
    """

    def __init__(self, system: str, target: Target) -> None:
        self.system = system
        self.target = target
        self.out: list[dict[str, Any]] = [{"role": target.system_role, "content": system}] if system else []
        self.pending: dict[str, str] = {}  # tool call id -> tool name, still waiting for a result
        self.images: list[dict[str, Any]] = []  # tool-result images waiting for the tool messages to end

    def feed(self, message: Message) -> None:
        target = self.target
        block = carried_block(message, target.provider, target.api, target.model_id) \
            if target.api == ANTHROPIC and target.blocks else None
        llm = {"role": "assistant"} if block is not None else to_llm_message(message)
        if llm is None:
            return
        role = llm.get("role")
        if role == "toolResult":
            call_id = self.target.tool_id(str(llm.get("toolCallId", "")))
            if self.pending.pop(call_id, None) is None:
                return  # its call was skipped, already answered, or never made
            text, result_images = _tool_result_parts(llm.get("content"))
            name = str(llm.get("toolName") or "") if self.target.result_names else ""
            self.out.append(self._tool_message(call_id, text, failed=llm.get("isError") is True, name=name))
            self.images.extend(result_images)
            return
        if role == "assistant" and llm.get("stopReason") in _SKIPPED_STOP_REASONS:
            return
        for call_id in self.pending:
            self.out.append(self._tool_message(call_id, NO_RESULT_TEXT, failed=True))
        self.pending.clear()
        self._flush_images(self.out)
        if role == "user":
            converted = _user_message(llm)
            if converted is not None:
                self._bridge(self.out)
        elif role == "assistant":
            converted = block_message(block, carried_after(message)) if block is not None else \
                _assistant_message(llm, self.target)
        else:
            converted = None
        if converted is None:
            return
        self.out.append(converted)
        for call in converted.get("tool_calls", ()):
            self.pending[call["id"]] = call["function"]["name"]

    def _tool_message(self, call_id: str, text: str, *, failed: bool, name: str = "") -> dict[str, Any]:
        message: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": text}
        if name:
            message["name"] = name
        if failed and self.target.api == ANTHROPIC:  # other providers have no such field (OpenAI refuses it)
            message[ERROR_FLAG] = True
        return message

    def _bridge(self, out: list[dict[str, Any]]) -> None:
        """Where the server needs it (``bridge_results``), an assistant message between tool results and
        the user message that follows them."""
        if self.target.bridge_results and out and out[-1].get("role") == "tool":
            out.append({"role": "assistant", "content": BRIDGE_TEXT})

    def finish(self) -> list[dict[str, Any]]:
        """The messages so far; images still waiting are sent last (in the copy, not the state)."""
        result = list(self.out)
        self._flush_images(result)
        return result

    def _flush_images(self, out: list[dict[str, Any]]) -> None:
        if self.images:
            self._bridge(out)
            out.append({"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_INTRO}, *self.images]})
            if out is self.out:
                self.images = []


def safe_tool_call_id(call_id: str, limit: int = 64) -> str:
    """A tool call id of at most ``limit`` characters that every provider accepts (same input -> same output)."""
    cleaned = _ID_UNSAFE.sub("_", call_id)[:limit]
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


def _assistant_message(message: Message, target: Target) -> dict[str, Any] | None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    thought: list[str] = []  # the model's own thinking, for a server that takes it back as text
    own = target.made(message)
    content = message.get("content")
    for block in content if isinstance(content, Sequence) and not isinstance(content, str) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and block.get("text"):
            texts.append(str(block["text"]))
        elif block.get("type") == "thinking" and own and target.api == ANTHROPIC:
            signed = _signed_thinking(block)
            if signed is not None:
                thinking.append(signed)
        elif block.get("type") == "thinking" and own and target.thinking_as_text:
            if str(block.get("thinking") or "").strip():
                thought.append(str(block["thinking"]))
        elif block.get("type") == "toolCall":
            calls.append(_tool_call(block, target, own))
    if isinstance(content, str) and content:
        texts.append(content)
    if not texts and not calls and not thought:
        return None  # nothing a provider would accept (e.g. a thinking-only reply)
    empty = "" if target.bridge_results else None  # a server that needs the bridge refuses a null content
    converted: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or empty}
    if thought:  # pi's form: the thinking as the first text part, then the answer's non-blank parts
        converted["content"] = [{"type": "text", "text": "\n\n".join(thought)},
                                *({"type": "text", "text": text} for text in texts if text.strip())]
    if target.reasoning_content:
        converted["reasoning_content"] = ""
    if calls:
        converted["tool_calls"] = calls
    if thinking:
        converted["thinking_blocks"] = thinking
    return converted


def _signed_thinking(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """A thinking block as litellm sends it to Anthropic; None when unsigned (the API would refuse it)."""
    signature = block.get("thinkingSignature")
    if not isinstance(signature, str) or not signature.strip():
        return None
    if block.get("redacted"):
        return {"type": "redacted_thinking", "data": signature}
    text = block.get("thinking")
    if not isinstance(text, str) or not text.strip():
        return None
    return {"type": "thinking", "thinking": text, "signature": signature}


def _tool_call(block: Mapping[str, Any], target: Target, own: bool) -> dict[str, Any]:
    arguments = block.get("arguments")
    call: dict[str, Any] = {
        "id": target.tool_id(str(block.get("id", ""))),
        "type": "function",
        "function": {
            "name": str(block.get("name", "")),
            "arguments": json.dumps(arguments if arguments is not None else {}),
        },
    }
    signature = block.get("thoughtSignature")
    if own and target.api == GOOGLE and isinstance(signature, str) and signature:
        call["provider_specific_fields"] = {"thought_signature": signature}
    return call


def failed_result_ids(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ``tool_call_id`` of every chat-format tool message that carries ``ERROR_FLAG``."""
    return {
        str(message.get("tool_call_id"))
        for message in messages
        if message.get("role") == "tool" and message.get(ERROR_FLAG) is True
    }


def flag_failed_results(anthropic_messages: Iterable[Mapping[str, Any]], failed: set[str]) -> None:
    """Set ``is_error: true`` (in place) on the Anthropic ``tool_result`` blocks whose ``tool_use_id`` is
    in ``failed``; everything else is left as it is."""
    for message in anthropic_messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in failed:
                block["is_error"] = True


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

"""Scripted Anthropic replies and their two wire forms: the Messages API's JSON message and its SSE events.

A reply is a tuple of blocks (``Text``, ``Thinking``, ``RedactedThinking``, ``ToolUse``, and ``Compaction``:
the summary the server writes if the request triggers its compaction edit, else nothing). The server signs
thinking when the block leaves ``signature`` unset, so a test gets a signature it can later see returned
(or altered). Event order as the API streams it: ``message_start`` (usage with cache counts), ``ping``,
per block ``content_block_start`` / deltas / ``content_block_stop`` (thinking: ``thinking_delta`` pieces
then one ``signature_delta``; tool_use: ``input_json_delta`` pieces; compaction: a start with ``content``
null, then one ``compaction_delta`` with the whole summary), ``message_delta`` (stop_reason, output_tokens,
and ``iterations`` when the server compacted), ``message_stop``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .http_fake import pieces
from .signing import Signer


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str | None = None  # None: the server signs the text


@dataclass(frozen=True)
class RedactedThinking:
    payload: str = "redacted reasoning"
    data: str | None = None  # None: the server makes signed opaque data from the payload


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None  # None: toolu_<random>


@dataclass(frozen=True)
class Compaction:
    """The summary the server writes when the request reaches its compaction trigger (None: the API's
    "compaction failed" block, whose ``content`` is null)."""

    content: str | None = "Summary of the conversation so far."


Block = Text | Thinking | RedactedThinking | ToolUse | Compaction


@dataclass(frozen=True)
class AnthropicReply:
    """One scripted answer.

    ``status`` != 200 answers with the API's error body (``error_type``, ``error_message``) and that status;
    ``stream_error`` instead starts a 200 stream, sends the blocks, then an ``error`` event (as the API does
    when it is overloaded mid-answer). ``output_tokens`` defaults to an estimate of the blocks' text.
    ``usage`` overrides the simulated prompt usage fields. ``repeat`` keeps the reply queued forever.
    ``cut_after`` closes a 200 stream after that many events, with no error event (a dropped connection).
    """

    blocks: tuple[Block, ...] = ()
    stop_reason: str | None = None  # default: "tool_use" when a ToolUse is present, else "end_turn"
    output_tokens: int | None = None
    usage: Mapping[str, Any] | None = None
    status: int = 200
    error_type: str = "api_error"
    error_message: str = "Internal server error"
    stream_error: bool = False
    repeat: bool = False
    cut_after: int | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(isinstance(block, ToolUse) for block in self.blocks) else "end_turn"


def text_reply(text: str, **kwargs: Any) -> AnthropicReply:
    return AnthropicReply(blocks=(Text(text),), **kwargs)


def tool_reply(
    name: str, arguments: Mapping[str, Any], *, thinking: str = "", text: str = "", **kwargs: Any
) -> AnthropicReply:
    """Optional thinking, optional text, then one tool call (the shape of a thinking model's tool turn)."""
    blocks: list[Block] = [Thinking(thinking)] if thinking else []
    blocks += [Text(text)] if text else []
    return AnthropicReply(blocks=(*blocks, ToolUse(name, arguments)), **kwargs)


def overloaded_reply(**kwargs: Any) -> AnthropicReply:
    return AnthropicReply(status=529, error_type="overloaded_error", error_message="Overloaded", **kwargs)


def content_blocks(reply: AnthropicReply, signer: Signer) -> list[dict[str, Any]]:
    """The reply's blocks as the API's content array, signatures and ids filled in."""
    out: list[dict[str, Any]] = []
    for block in reply.blocks:
        if isinstance(block, Compaction):
            continue  # written by the server only when the request triggers it (``summary_of``)
        if isinstance(block, Text):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, Thinking):
            signature = block.signature if block.signature is not None else signer.thinking_signature(block.thinking)
            out.append({"type": "thinking", "thinking": block.thinking, "signature": signature})
        elif isinstance(block, RedactedThinking):
            out.append({"type": "redacted_thinking", "data": block.data or signer.redacted_data(block.payload)})
        else:
            tool_id = block.id or "toolu_" + secrets.token_hex(12)
            out.append({"type": "tool_use", "id": tool_id, "name": block.name, "input": dict(block.input)})
    return out


def summary_of(reply: AnthropicReply) -> str | None:
    """The summary a compaction answering ``reply`` writes: its scripted ``Compaction``, else the default."""
    scripted = next((block for block in reply.blocks if isinstance(block, Compaction)), Compaction())
    return scripted.content


def estimate_output_tokens(content: list[dict[str, Any]]) -> int:
    chars = 0
    for block in content:
        chars += len(block.get("text", "")) + len(block.get("thinking", "")) + len(block.get("content") or "")
        chars += len(json.dumps(block["input"])) if block["type"] == "tool_use" else 0
    return max(1, (chars + 3) // 4)


def message_json(
    model: str, content: list[dict[str, Any]], stop_reason: str, usage: Mapping[str, Any]
) -> dict[str, Any]:
    """The non-streaming answer."""
    return {
        "id": "msg_" + secrets.token_hex(12),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(usage),
    }


def stream_events(
    model: str, content: list[dict[str, Any]], stop_reason: str, usage: Mapping[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) pairs for a streamed answer, without a trailing error."""
    start_usage = {**{key: value for key, value in usage.items() if key != "iterations"}, "output_tokens": 1}
    message = message_json(model, [], stop_reason, start_usage)
    message["stop_reason"] = None
    yield "message_start", {"type": "message_start", "message": message}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(content):
        yield from _block_events(index, block)
    final_usage: dict[str, Any] = {"output_tokens": usage["output_tokens"]}
    if "iterations" in usage:  # as the SDK types it: the delta's usage is cumulative, iterations included
        final_usage = dict(usage)
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": final_usage,
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block["type"]

    def delta(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": payload}

    if kind == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [delta({"type": "text_delta", "text": piece}) for piece in pieces(block["text"])]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [delta({"type": "thinking_delta", "thinking": piece}) for piece in pieces(block["thinking"])]
        deltas.append(delta({"type": "signature_delta", "signature": block["signature"]}))
    elif kind == "redacted_thinking":
        start = dict(block)  # the opaque data arrives whole in the start event
        deltas = []
    elif kind == "compaction":  # the summary arrives whole in one delta (the SDK's stream fixture)
        start = {"type": "compaction", "content": None}
        deltas = [delta({"type": "compaction_delta", "content": block["content"]})]
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        # Like the API: a first empty fragment, then the JSON in pieces.
        fragments = ["", *pieces(json.dumps(block["input"]))]
        deltas = [delta({"type": "input_json_delta", "partial_json": piece}) for piece in fragments]
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
    yield from deltas
    yield "content_block_stop", {"type": "content_block_stop", "index": index}

"""Streamed chat-completion chunks -> stream events and one pi-shaped assistant message (pure).

``MessageAssembler.feed(chunk)`` yields a chunk's deltas (a litellm object or a plain dict: read by
duck typing, so no litellm here); ``finish()`` builds the assistant message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pi_compact.jstext import nested_deeper_than, repair_json, valid_text
from pi_compact.llm.protocol import (
    ModelInfo,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    assistant_message,
    empty_usage,
)
from pi_compact.llm.server_compaction import ITERATIONS_KEY, REPLY_KEY

# litellm carries a Gemini thought signature inside the tool-call id after this separator (and in the
# call's ``provider_specific_fields``); we keep the id clean and the signature on the block, as pi does.
THOUGHT_SEPARATOR = "__thought__"
REDACTED_THINKING_TEXT = "[Reasoning redacted]"  # pi's text for a redacted block
_STOP_REASONS = {"stop": "stop", "end_turn": "stop", "length": "length", "max_tokens": "length"}
_TOOL_REASONS = frozenset({"tool_calls", "function_call", "tool_use"})
MAX_ARGUMENT_DEPTH = 64  # tool-call arguments nested deeper are reported to the model as unreadable
# What one more tool call costs to hold beyond its strings (its block, its entry in the maps, its piece list):
# counted so that a stream opening call after call with nothing in them still reaches the cap.
ENTRY_BYTES = 256
_RUN_PIECES = 512  # deltas joined into one string at a time (``Pieces``)


def _get(obj: Any, name: str) -> Any:
    """Field ``name`` of a litellm object or a plain dict (None when absent)."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Pieces:
    """Text that arrives in many deltas: appending is cheap, ``text()`` joins once. Every ``_RUN_PIECES`` deltas
    are joined into one string, so a stream of one-character deltas holds about its bytes, not one object per
    character, and joining stays linear (each byte is copied into a run once, then once more at the end)."""

    def __init__(self, first: str = "") -> None:
        self._runs: list[str] = [first] if first else []
        self._tail: list[str] = []

    def add(self, text: str) -> None:
        self._tail.append(text)
        if len(self._tail) >= _RUN_PIECES:
            self._runs.append("".join(self._tail))
            self._tail.clear()

    def text(self) -> str:
        return "".join(self._runs) + "".join(self._tail)


class MessageAssembler:
    """Accumulates one streamed reply; ``started`` turns True with the first non-empty delta.

    The message ``finish()`` builds:
    - content blocks in arrival order; consecutive text (or thinking) deltas extend one block; tool
      calls are assembled per ``index`` and their JSON arguments parsed at the end (text that is not a
      JSON object is kept as ``{"_raw": text}`` so nothing the model wrote is lost);
    - signatures as pi keeps them: a thinking block's signature (litellm's ``thinking_blocks``) as
      ``thinkingSignature`` (an OpenAI Responses reasoning item, ``reasoning_item``, as its JSON; a
      Responses message's id, ``text_signature``, as the text block's ``textSignature``), redacted
      thinking as a thinking block with ``redacted: true`` and its opaque data in ``thinkingSignature``,
      a Gemini tool call's signature as ``thoughtSignature``;
    - usage in pi's shape: ``input`` excludes cache reads and writes (litellm folds both into
      ``prompt_tokens``), cost from per-token prices when known, else zeros;
    - stopReason: stop -> "stop" ("toolUse" when tool calls were made), length -> "length",
      tool_calls -> "toolUse"; any other finish reason becomes an error whose text names it, as pi
      does (z.ai reports overflow as finish reason ``model_context_window_exceeded``);
    - a provider's compaction block (litellm's ``compaction_blocks``) verbatim under
      ``server_compaction.REPLY_KEY``, and the usage of each sampling pass (``usage_iterations`` chunks) in
      pi's shape under ``ITERATIONS_KEY``; a reply that is nothing but the block stopped where the server
      paused after compacting ("stop": litellm reports Anthropic's "compaction" stop as "length").

    ``size`` counts the bytes this reply makes us hold, so that the stream loop can stop a reply that never
    ends whatever it is made of: the UTF-8 bytes of text, thinking, signatures, tool-call ids, names and
    arguments, the response id, ``ENTRY_BYTES`` per tool call, plus what the reader before the assembler holds
    besides (``held_bytes`` of each chunk: the ids it maps; a copy of this content, kept for a usage estimate, is
    bounded by the same count). Deltas are kept as ``Pieces``: appending stays linear however long a reply runs.
    """

    def __init__(self, info: ModelInfo, timestamp: int, costs: Mapping[str, float] | None = None) -> None:
        self._info = info
        self._timestamp = timestamp
        self._costs = dict(costs or {})
        self._blocks: list[dict[str, Any]] = []
        self._calls: dict[int, dict[str, Any]] = {}  # tool call index -> its block
        self._raw_args: dict[int, Pieces] = {}
        self._open: Pieces | None = None  # the last block's text or thinking while it grows, not yet joined
        self._usage: dict[str, Any] | None = None
        self._finish_reason: str | None = None
        self._response_id: str | None = None  # an OpenAI Responses reply's id, which pi records as ``responseId``
        self._compaction: dict[str, Any] | None = None  # the provider's compaction block, as it streamed
        self._iterations: list[dict[str, Any]] = []
        self.started = False
        self._own = 0  # bytes held here
        self._held = 0  # bytes the reader holds, as its last chunk said

    @property
    def size(self) -> int:
        """The bytes this reply makes us hold so far (see the class)."""
        return self._own + self._held

    def feed(self, chunk: Any) -> Iterator[StreamEvent]:
        held = _get(chunk, "held_bytes")
        if isinstance(held, int):
            self._held = held
        response_id = _get(chunk, "response_id")
        if isinstance(response_id, str) and response_id and response_id != self._response_id:
            self._own += utf8_size(response_id)
            self._response_id = response_id
        usage = _get(chunk, "usage")
        if usage is not None:
            self._usage = self._pi_usage(usage)
        iterations = _get(chunk, "usage_iterations")
        if isinstance(iterations, list):
            self._iterations = [self._pass_usage(item) for item in iterations]
        for choice in _get(chunk, "choices") or ():
            if _int(_get(choice, "index")) != 0:
                continue  # we ask for one choice; ignore any extras
            delta = _get(choice, "delta")
            thinking = _get(delta, "reasoning_content")
            thinking = valid_text(thinking) if isinstance(thinking, str) else thinking  # no lone surrogates
            if isinstance(thinking, str) and thinking:
                self._append("thinking", thinking)
                yield ThinkingDelta(thinking)
            for block in _get(delta, "thinking_blocks") or ():
                self._signed_block(block)
            compaction = _get(_get(delta, "provider_specific_fields"), "compaction_blocks")
            if isinstance(compaction, list) and compaction and isinstance(compaction[-1], Mapping):
                self._compaction_block(compaction[-1])
            item = _get(delta, "reasoning_item")
            if item is not None:
                yield from self._reasoning_item(item)
            text = _get(delta, "content")
            text = valid_text(text) if isinstance(text, str) else text
            if isinstance(text, str) and text:
                self._append("text", text)
                yield TextDelta(text)
            text_signature = _get(delta, "text_signature")
            if isinstance(text_signature, str) and self._blocks and self._blocks[-1]["type"] == "text":
                self._own += utf8_size(text_signature)
                self._blocks[-1]["textSignature"] = text_signature
            for position, call in enumerate(_get(delta, "tool_calls") or ()):
                yield self._tool_delta(position, call)
            reason = _get(choice, "finish_reason")
            if isinstance(reason, str) and reason:
                self._finish_reason = reason

    @property
    def finish_reason(self) -> str | None:
        """The finish reason the server sent, once it has sent one."""
        return self._finish_reason

    def content(self) -> list[dict[str, Any]]:
        """The content blocks so far, tool call arguments parsed."""
        self._join_open()
        for index, block in self._calls.items():
            pieces = self._raw_args.get(index)
            block["arguments"] = _parse_arguments(pieces.text() if pieces is not None else "")
        return [dict(block) for block in self._blocks]

    def finish(self, error: str | None = None) -> dict[str, Any]:
        """The assistant message; with ``error`` it reports a failed call (partial content kept)."""
        content = self.content()
        stop_reason, reason_error = self._stop_reason()
        error = error or reason_error
        message = assistant_message(
            self._info,
            content,
            stop_reason="error" if error else stop_reason,
            usage=self._usage or empty_usage(),
            error=error,
            timestamp=self._timestamp,
        )
        if self._response_id is not None:
            message["responseId"] = self._response_id
        if self._compaction is not None:
            message[REPLY_KEY] = dict(self._compaction)
        if self._iterations:
            message[ITERATIONS_KEY] = [dict(item) for item in self._iterations]
        return message

    def _stop_reason(self) -> tuple[str, str | None]:
        reason = self._finish_reason
        if reason == "length" and self._compaction is not None and not self._blocks:
            return "stop", None  # paused after compacting (the API's stop "compaction", as litellm maps it)
        if reason in _TOOL_REASONS or (self._calls and reason in (None, "stop")):
            return "toolUse", None
        if reason is None:
            return "stop", None
        if reason in _STOP_REASONS:
            return _STOP_REASONS[reason], None
        if reason == "content_filter":
            return "error", "The provider's content filter stopped the reply"
        return "error", f"Unhandled stop reason: {reason}"

    def _append(self, kind: str, text: str) -> None:
        self.started = True
        self._own += utf8_size(text)
        last = self._blocks[-1] if self._blocks else None
        # A signed (or redacted) thinking block is complete: later thinking starts a new one; so is a text
        # block with its message's id (the next Responses message is a block of its own, as in pi).
        if last is not None and last["type"] == kind and "thinkingSignature" not in last and (
                "textSignature" not in last):
            if self._open is None:
                self._open = Pieces(last["thinking" if kind == "thinking" else "text"])
            self._open.add(text)
        else:  # (a new block of text carries at least a character or a message's id, both counted)
            self._join_open()
            self._blocks.append({"type": kind, "thinking" if kind == "thinking" else "text": text})

    def _join_open(self) -> None:
        """Write the pieces collected for the last block into it (``str +=`` would copy it every time)."""
        if self._open is not None:
            last = self._blocks[-1]
            last["thinking" if last["type"] == "thinking" else "text"] = self._open.text()
            self._open = None

    def _signed_block(self, block: Any) -> None:
        """A signature or a redacted block from litellm's ``thinking_blocks`` (its text came as
        ``reasoning_content`` already)."""
        self._join_open()
        if _get(block, "type") == "redacted_thinking":
            data = _get(block, "data")
            if isinstance(data, str):
                self.started = True
                self._own += utf8_size(data) + ENTRY_BYTES
                self._blocks.append({"type": "thinking", "thinking": REDACTED_THINKING_TEXT,
                                     "thinkingSignature": data, "redacted": True})
            return
        signature = _get(block, "signature")
        if isinstance(signature, str) and signature:
            self._own += utf8_size(signature)
            last = self._blocks[-1] if self._blocks else None
            if last is None or last["type"] != "thinking" or last.get("redacted"):
                last = {"type": "thinking", "thinking": ""}  # a signature for thinking that sent no text
                self._blocks.append(last)
            last["thinkingSignature"] = last.get("thinkingSignature", "") + signature

    def _reasoning_item(self, item: Any) -> Iterator[StreamEvent]:
        """A finished OpenAI Responses reasoning item: its text and the item itself as the signature (pi's
        ``thinkingSignature``), on the thinking block its summary streamed into, else on a new one."""
        self._join_open()
        text = valid_text(str(_get(item, "thinking") or ""))
        signature = str(_get(item, "signature") or "")
        self.started = True
        self._own += utf8_size(signature) + ENTRY_BYTES
        last = self._blocks[-1] if self._blocks else None
        if last is not None and last["type"] == "thinking" and "thinkingSignature" not in last:
            last.update(thinking=text, thinkingSignature=signature)
            return
        self._blocks.append({"type": "thinking", "thinking": text, "thinkingSignature": signature})
        if text:
            self._own += utf8_size(text)
            yield ThinkingDelta(text)

    def _tool_delta(self, position: int, call: Any) -> ToolCallDelta:
        self.started = True
        self._join_open()
        index = _get(call, "index")
        index = index if isinstance(index, int) else position
        function = _get(call, "function")
        block = self._calls.get(index)
        if block is None:
            block = {"type": "toolCall", "id": "", "name": "", "arguments": {}}
            self._calls[index] = block
            self._blocks.append(block)
            self._raw_args[index] = Pieces()
            self._own += ENTRY_BYTES
        if _get(call, "id"):
            call_id, _, signature = str(_get(call, "id")).partition(THOUGHT_SEPARATOR)
            self._keep(block, "id", call_id)
            if signature:
                self._keep(block, "thoughtSignature", signature)
        carried = _get(_get(call, "provider_specific_fields"), "thought_signature")
        if isinstance(carried, str) and carried:
            self._keep(block, "thoughtSignature", carried)
        if _get(function, "name"):
            self._keep(block, "name", str(_get(function, "name")))
        fragment = _get(function, "arguments")
        fragment = fragment if isinstance(fragment, str) else ""
        self._own += utf8_size(fragment)
        self._raw_args[index].add(fragment)
        if not block["id"]:
            block["id"] = f"call_{self._timestamp}_{index}"  # some servers omit ids; keep calls pairable
        return ToolCallDelta(index, block["id"], block["name"], fragment)

    def _compaction_block(self, block: Mapping[str, Any]) -> None:
        """litellm's latest view of the block (its start, then the summary joined in): kept whole."""
        self.started = True
        before = utf8_size(str((self._compaction or {}).get("content") or ""))
        self._compaction = {key: value for key, value in block.items()}
        self._own += max(0, utf8_size(str(self._compaction.get("content") or "")) - before)

    def _pass_usage(self, item: Any) -> dict[str, Any]:
        """One entry of Anthropic's ``usage.iterations`` in pi's shape (its own ``input`` excludes the cache)."""
        counts = {"input": _int(_get(item, "input_tokens")), "output": _int(_get(item, "output_tokens")),
                  "cacheRead": _int(_get(item, "cache_read_input_tokens")),
                  "cacheWrite": _int(_get(item, "cache_creation_input_tokens"))}
        cost = {key: counts[key] * self._costs.get(key, 0.0) for key in counts}
        cost["total"] = sum(cost.values())
        return {"type": str(_get(item, "type") or "message"), **counts, "totalTokens": sum(counts.values()),
                "cost": cost}

    def _keep(self, block: dict[str, Any], key: str, value: str) -> None:
        """Set a tool call's id, name or signature; a new value is counted (each one: a server may resend the
        same, which costs nothing, or change it every chunk, which counts every time)."""
        if block.get(key) != value:
            self._own += utf8_size(value)
            block[key] = value

    def _pi_usage(self, usage: Any) -> dict[str, Any]:
        prompt = _int(_get(usage, "prompt_tokens"))
        output = _int(_get(usage, "completion_tokens"))
        cache_read = _int(_get(_get(usage, "prompt_tokens_details"), "cached_tokens")) or _int(
            _get(usage, "cache_read_input_tokens")
        )
        cache_write = _int(_get(usage, "cache_creation_input_tokens"))
        fresh_input = max(0, prompt - cache_read - cache_write)
        counts = {"input": fresh_input, "output": output, "cacheRead": cache_read, "cacheWrite": cache_write}
        cost = {key: counts[key] * self._costs.get(key, 0.0) for key in counts}
        # Writes kept for an hour (cacheRetention "long") have their own price where the map knows it.
        details = _get(_get(usage, "prompt_tokens_details"), "cache_creation_token_details")
        hour = min(cache_write, _int(_get(details, "ephemeral_1h_input_tokens")))
        if hour and self._costs.get("cacheWrite1h"):
            cost["cacheWrite"] += hour * (self._costs["cacheWrite1h"] - self._costs.get("cacheWrite", 0.0))
        cost["total"] = sum(cost.values())
        return {**counts, "totalTokens": fresh_input + output + cache_read + cache_write, "cost": cost}


def _parse_arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: invalid for us too
        return {"_raw": raw}
    if not isinstance(parsed, dict) or nested_deeper_than(parsed, MAX_ARGUMENT_DEPTH):
        return {"_raw": raw}  # no tool takes such nesting, and every recursive encoder would fail on it
    repair_json(parsed)  # in place: lone surrogates become U+FFFD
    return parsed

"""ScriptedModel: an in-process ``ChatModel`` that replays queued replies and records every request.

For fast feature tests above the model seam (no server, no litellm, no threads); the adapters
themselves are tested against ``tests/scripted_server.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pi_compact.cancel import CancelToken
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    ModelInfo,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    aborted_message,
    assistant_message,
    empty_usage,
)

NO_SCRIPTED_REPLY = "(no scripted reply)"


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call of a scripted reply; ``id`` defaults to ``call_<n>`` (n counts the model's calls)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer, counted as a provider counts it.

    ``prompt_tokens`` includes ``cached_tokens`` (usage ``input`` is the rest, ``cacheRead`` those),
    as OpenAI-compatible servers report them. ``stop_reason`` defaults to ``toolUse`` with tool calls,
    else ``stop``; ``error`` makes it a failed reply (``stopReason`` "error") carrying that text.
    ``delay_s`` waits before the first delta, ended early by a cancel (which aborts the reply).
    ``repeat`` keeps the reply at the head of the queue.
    """

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cached_tokens: int = 0
    stop_reason: str | None = None
    error: str | None = None
    delay_s: float = 0.0
    repeat: bool = False

    def usage(self) -> dict[str, Any]:
        fresh = max(0, self.prompt_tokens - self.cached_tokens)
        counts = {"input": fresh, "output": self.completion_tokens, "cacheRead": self.cached_tokens, "cacheWrite": 0}
        return {**empty_usage(), **counts, "totalTokens": self.prompt_tokens + self.completion_tokens}


Scripted = str | ScriptedReply | BaseException


class ScriptedModel(ChatModel):
    """A ``ChatModel`` whose replies come from a queue; ``history`` holds every request, oldest first.

        model = ScriptedModel(ModelInfo("test/model", "test", 10_000, None))
        model.enqueue("plain text", ScriptedReply(text="hi", prompt_tokens=9_000), AuthError("no key"))

    A string is a text reply; a ``ScriptedReply`` sets text, thinking, tool calls, usage, the stop
    reason or an error; an exception is raised by the ``stream`` call itself, as the protocol allows
    only for problems found before anything is sent. An empty queue answers ``NO_SCRIPTED_REPLY``.
    The stream keeps the protocol: deltas, then exactly one ``Done``; a cancel ends it as ``aborted``.
    """

    def __init__(self, info: ModelInfo, *replies: Scripted) -> None:
        self._info = info
        self._queue: list[Scripted] = list(replies)
        self._calls = 0
        self.history: list[ChatRequest] = []

    @property
    def info(self) -> ModelInfo:
        return self._info

    def enqueue(self, *replies: Scripted) -> None:
        self._queue.extend(replies)

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        self.history.append(request)
        scripted = self._next()
        if isinstance(scripted, BaseException):
            raise scripted
        reply = ScriptedReply(text=scripted) if isinstance(scripted, str) else scripted
        return self._events(reply, cancel or CancelToken())

    def _next(self) -> Scripted:
        if not self._queue:
            return NO_SCRIPTED_REPLY
        head = self._queue[0]
        if not (isinstance(head, ScriptedReply) and head.repeat):
            self._queue.pop(0)
        return head

    def _events(self, reply: ScriptedReply, cancel: CancelToken) -> Iterator[StreamEvent]:
        self._calls += 1
        cancelled = cancel.wait(reply.delay_s) if reply.delay_s else cancel.cancelled
        if cancelled:
            yield Done(aborted_message(self._info))
            return
        content: list[dict[str, Any]] = []
        if reply.thinking:
            content.append({"type": "thinking", "thinking": reply.thinking})
            yield ThinkingDelta(reply.thinking)
        if reply.text:
            content.append({"type": "text", "text": reply.text})
            yield TextDelta(reply.text)
        for index, call in enumerate(reply.tool_calls):
            call_id = call.id or f"call_{self._calls}_{index}"
            content.append({"type": "toolCall", "id": call_id, "name": call.name, "arguments": dict(call.arguments)})
            yield ToolCallDelta(index, call_id, call.name, json.dumps(call.arguments))
        if cancel.cancelled:
            yield Done(aborted_message(self._info, content))
            return
        stop = "error" if reply.error else reply.stop_reason or ("toolUse" if reply.tool_calls else "stop")
        yield Done(assistant_message(self._info, content, stop_reason=stop, usage=reply.usage(), error=reply.error))


__all__ = ["NO_SCRIPTED_REPLY", "ScriptedCall", "ScriptedModel", "ScriptedReply"]

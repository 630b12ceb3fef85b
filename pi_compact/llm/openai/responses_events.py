"""Server-sent events of an OpenAI Responses answer -> chunks for ``MessageAssembler`` (pure).

``ResponsesReader().chunks(events)`` turns the API's typed events into the chat-completion chunk shape the
assembler reads, and records what pi records:

- reasoning summary (or reasoning text) deltas as ``reasoning_content``; when the reasoning item is done,
  ``reasoning_item`` carries its text (the summary parts joined by blank lines) and the item itself as
  JSON, pi's ``thinkingSignature`` (sent back whole on the next request);
- message text and refusals as ``content``; when the message is done, ``text_signature`` carries pi's
  ``{"v":1,"id":…}`` for it;
- function calls as ``tool_calls`` with the id ``<call_id>|<item id>``, as pi writes it; the response's id
  as ``response_id`` (pi's ``responseId``);
- ``response.completed`` ends the reply ("stop"; the assembler makes it "toolUse" when calls were made),
  ``response.incomplete`` with "length"; usage is passed as chat usage (``input_tokens`` as the prompt,
  ``cached_tokens`` as cache reads);
- an ``error`` event or ``response.failed`` raises a failure with the API's code and message, and so does
  a stream that ends before the response did.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pi_compact.llm.failures import FailureRaised
from pi_compact.llm.http_sse import SseEvent
from pi_compact.llm.openai.failures import stream_failure
from pi_compact.llm.openai.responses_input import compact_json

_ENDINGS = {"response.completed": "stop", "response.incomplete": "length"}
_TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
_THINKING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class ResponsesReader:
    """Reads one answer (iterate ``chunks`` once)."""

    def __init__(self) -> None:
        self._calls: dict[str, int] = {}  # function call item id -> its tool call index
        self._arguments: dict[str, list[str]] = {}  # item id -> the argument pieces streamed so far
        self._said: set[str] = set()  # message item ids whose text was streamed

    def chunks(self, events: Iterable[SseEvent]) -> Iterator[dict[str, Any]]:
        for event in events:
            data = _parse(event.data)
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or event.event
            response = data.get("response")
            if kind == "response.created" and isinstance(response, Mapping) and response.get("id"):
                yield {"choices": [], "response_id": str(response["id"])}  # pi records it as ``responseId``
            if kind in _ENDINGS:
                yield self._ending(data, _ENDINGS[str(kind)])
                return
            if kind == "error":
                raise stream_failure(f"Error Code {data.get('code')}: {data.get('message')}")
            if kind == "response.failed":
                raise stream_failure(_failed_text(data.get("response")))
            delta = self._delta(str(kind), data)
            if delta:
                yield {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        raise stream_failure("The stream ended before the response was completed")

    def _delta(self, kind: str, data: Mapping[str, Any]) -> dict[str, Any] | None:
        text = data.get("delta")
        if kind in _THINKING_DELTAS and isinstance(text, str):
            return {"reasoning_content": text}
        if kind == "response.reasoning_summary_part.done":
            return {"reasoning_content": "\n\n"}  # pi separates summary parts so while streaming
        if kind in _TEXT_DELTAS and isinstance(text, str):
            self._said.add(str(data.get("item_id")))
            return {"content": text}
        if kind == "response.function_call_arguments.delta" and isinstance(text, str):
            return self._arguments_delta(str(data.get("item_id")), text)
        if kind == "response.function_call_arguments.done" and isinstance(data.get("arguments"), str):
            streamed = "".join(self._arguments.get(str(data.get("item_id")), ()))
            rest = data["arguments"]
            return self._arguments_delta(str(data.get("item_id")), rest[len(streamed):]) if rest.startswith(
                streamed) and len(rest) > len(streamed) else None
        item = data.get("item")
        if not isinstance(item, Mapping):
            return None
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            return self._call_start(item)
        if kind == "response.output_item.done":
            return self._item_done(item)
        return None

    def _call_start(self, item: Mapping[str, Any]) -> dict[str, Any]:
        item_id = str(item.get("id"))
        index = self._calls.setdefault(item_id, len(self._calls))
        given = item.get("arguments")
        arguments = given if isinstance(given, str) else ""
        self._arguments.setdefault(item_id, []).append(arguments)
        return {"tool_calls": [{"index": index, "id": f"{item.get('call_id')}|{item_id}", "type": "function",
                                "function": {"name": str(item.get("name") or ""), "arguments": arguments}}]}

    def _arguments_delta(self, item_id: str, piece: str) -> dict[str, Any] | None:
        index = self._calls.get(item_id)
        if index is None:
            return None
        self._arguments.setdefault(item_id, []).append(piece)
        return {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}

    def _item_done(self, item: Mapping[str, Any]) -> dict[str, Any] | None:
        kind = item.get("type")
        if kind == "reasoning":
            parts = item.get("summary") or item.get("content") or []
            texts = [str(part.get("text", "")) for part in parts if isinstance(part, Mapping)]
            return {"reasoning_item": {"thinking": "\n\n".join(texts), "signature": compact_json(item)}}
        if kind == "message":
            signature: dict[str, Any] = {"v": 1, "id": item.get("id")}
            if item.get("phase"):
                signature["phase"] = item["phase"]
            delta: dict[str, Any] = {"text_signature": compact_json(signature)}
            if str(item.get("id")) not in self._said:  # a message that came whole, without deltas
                parts = item.get("content") or []
                delta["content"] = "".join(str(part.get("text") or part.get("refusal") or "")
                                           for part in parts if isinstance(part, Mapping))
            return delta
        if kind == "function_call" and str(item.get("id")) not in self._calls:
            return self._call_start(item)  # a call that came whole
        return None

    @staticmethod
    def _ending(data: Mapping[str, Any], reason: str) -> dict[str, Any]:
        response = data.get("response")
        usage = response.get("usage") if isinstance(response, Mapping) else None
        chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}
        if isinstance(usage, Mapping):
            details = usage.get("input_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
            chunk["usage"] = {"prompt_tokens": usage.get("input_tokens") or 0,
                              "completion_tokens": usage.get("output_tokens") or 0,
                              "prompt_tokens_details": {"cached_tokens": cached or 0}}
        return chunk


def _failed_text(response: Any) -> str:
    """pi's words for a failed response: the error's code and message, else why it is incomplete."""
    response = response if isinstance(response, Mapping) else {}
    error = response.get("error")
    if isinstance(error, Mapping):
        return f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
    details = response.get("incomplete_details")
    if isinstance(details, Mapping) and details.get("reason"):
        return f"incomplete: {details['reason']}"
    return "Unknown error (no error details in response)"


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise FailureRaised(stream_failure(str(error)).failure) from None

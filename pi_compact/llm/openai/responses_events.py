"""Server-sent events of an OpenAI Responses answer -> chunks for ``MessageAssembler`` (pure).

``ResponsesReader().chunks(events)`` turns the API's typed events into the chat-completion chunk shape the
assembler reads, and records what pi records:

- reasoning summary (or reasoning text) deltas as ``reasoning_content``; when the reasoning item is done,
  ``reasoning_item`` carries its text (the summary parts joined by blank lines) and the item itself as
  JSON, pi's ``thinkingSignature`` (sent back whole on the next request);
- message text and refusals as ``content``; when the message is done, ``text_signature`` carries pi's
  ``{"v":1,"id":…}`` for it;
- function calls as ``tool_calls`` with the id ``<call_id>|<item id>``, as pi writes it (``<call_id>`` alone
  for a call without an item id); calls are told apart by output index, else by item id, and a reply whose
  calls cannot be paired with their results (no ``call_id``, one ``call_id`` twice, arguments for a call never
  started) is refused whole with one sentence; the response's id as ``response_id`` (pi's ``responseId``);
- every chunk carries ``held_bytes``, what the reader keeps besides a copy of the content (the ids it maps),
  which ``retry.provider.maxReplyBytes`` counts with the assembler's own;
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

from pi_compact.llm.assemble import ENTRY_BYTES, Pieces, utf8_size
from pi_compact.llm.failures import Failure, FailureRaised
from pi_compact.llm.http_sse import SseEvent
from pi_compact.llm.openai.failures import stream_failure
from pi_compact.llm.openai.responses_input import compact_json

_ENDINGS = {"response.completed": "stop", "response.incomplete": "length"}
_TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
_THINKING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


class ResponsesReader:
    """Reads one answer (iterate ``chunks`` once)."""

    def __init__(self) -> None:
        self._by_output: dict[int, int] = {}  # a function call's output index -> its tool call index
        self._by_item: dict[str, int] = {}  # a function call's item id -> its tool call index
        self._call_ids: set[str] = set()
        self._arguments: list[Pieces] = []  # per tool call index: the argument pieces streamed so far
        self._said: set[int | str] = set()  # messages whose text was streamed: output indexes and item ids
        self._held = 0  # bytes of the ids and entries kept above (``held_bytes``; the argument copies mirror the
        # assembler's, which counts them)

    def chunks(self, events: Iterable[SseEvent]) -> Iterator[dict[str, Any]]:
        for event in events:
            data = _parse(event.data)
            if not isinstance(data, dict):
                continue
            kind = data.get("type") or event.event
            response = data.get("response")
            if kind == "response.created" and isinstance(response, Mapping) and response.get("id"):
                yield self._out({"choices": [], "response_id": str(response["id"])})  # pi's ``responseId``
            if kind in _ENDINGS:
                yield self._out(self._ending(data, _ENDINGS[str(kind)]))
                return
            if kind == "error":
                raise stream_failure(f"Error Code {data.get('code')}: {data.get('message')}")
            if kind == "response.failed":
                raise stream_failure(_failed_text(data.get("response")))
            held = self._held
            delta = self._delta(str(kind), data)
            if delta:
                yield self._out({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            elif self._held != held:  # kept something and passed nothing on: the count must still reach the cap
                yield self._out({"choices": []})
        raise stream_failure("The stream ended before the response was completed")

    def _out(self, chunk: dict[str, Any]) -> dict[str, Any]:
        chunk["held_bytes"] = self._held
        return chunk

    def _delta(self, kind: str, data: Mapping[str, Any]) -> dict[str, Any] | None:
        text = data.get("delta")
        if kind in _THINKING_DELTAS and isinstance(text, str):
            return {"reasoning_content": text}
        if kind == "response.reasoning_summary_part.done":
            return {"reasoning_content": "\n\n"}  # pi separates summary parts so while streaming
        if kind in _TEXT_DELTAS and isinstance(text, str):
            self._remember_said(_keys(data.get("output_index"), data.get("item_id")))
            return {"content": text}
        if kind == "response.function_call_arguments.delta" and isinstance(text, str):
            index = self._call_of(data)
            self._arguments[index].add(text)  # a copy of what the assembler holds and counts
            return {"tool_calls": [{"index": index, "function": {"arguments": text}}]}
        if kind == "response.function_call_arguments.done" and isinstance(data.get("arguments"), str):
            index = self._call_of(data)
            streamed, whole = self._arguments[index].text(), data["arguments"]
            if not whole.startswith(streamed) or len(whole) == len(streamed):
                return None
            rest = whole[len(streamed):]
            self._arguments[index].add(rest)
            return {"tool_calls": [{"index": index, "function": {"arguments": rest}}]}
        item = data.get("item")
        if not isinstance(item, Mapping):
            return None
        output_index = data.get("output_index")
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            return self._call_start(item, output_index)
        if kind == "response.output_item.done":
            return self._item_done(item, output_index)
        return None

    def _call_start(self, item: Mapping[str, Any], output_index: Any) -> dict[str, Any]:
        """A new function call: kept apart from the others by its output index (and its item id, when it has
        one); refused when its result could not be paired with it."""
        at = f"at output index {output_index}" if isinstance(output_index, int) else "without an output index"
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise _refused(f"the function call {at} has no call_id, so its result could not be paired with it")
        if call_id in self._call_ids:
            raise _refused(f"two function calls have the call_id {_short(call_id)}, so their results could not "
                           "be told apart")
        item_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
        if isinstance(output_index, int) and output_index in self._by_output:
            raise _refused(f"two function calls came at output index {output_index}")
        if item_id is not None and item_id in self._by_item:
            raise _refused(f"two function calls have the item id {_short(item_id)}")
        index = len(self._arguments)
        self._call_ids.add(call_id)
        self._held += ENTRY_BYTES + utf8_size(call_id)
        if isinstance(output_index, int):
            self._by_output[output_index] = index
        if item_id is not None:
            self._by_item[item_id] = index
            self._held += utf8_size(item_id)
        given = item.get("arguments")
        arguments = given if isinstance(given, str) else ""
        self._arguments.append(Pieces(arguments))
        pi_id = f"{call_id}|{item_id}" if item_id is not None else call_id  # pi's id, without a missing half
        return {"tool_calls": [{"index": index, "id": pi_id, "type": "function",
                                "function": {"name": str(item.get("name") or ""), "arguments": arguments}}]}

    def _call_of(self, data: Mapping[str, Any]) -> int:
        """The tool call index that arguments are for: by output index, else by item id; refused when neither
        names a call this stream started."""
        found = self._known_call(data.get("output_index"), data.get("item_id"))
        if found is not None:
            return found
        output_index, item_id = data.get("output_index"), data.get("item_id")
        named = f"output index {output_index}" if isinstance(output_index, int) else f"item {_short(str(item_id))}"
        raise _refused(f"it sent function call arguments for {named}, which started no call")

    def _known_call(self, output_index: Any, item_id: Any) -> int | None:
        if isinstance(output_index, int) and output_index in self._by_output:
            return self._by_output[output_index]
        if isinstance(item_id, str) and item_id in self._by_item:
            return self._by_item[item_id]
        return None

    def _remember_said(self, keys: tuple[int | str, ...]) -> None:
        for key in keys:
            if key not in self._said:
                self._said.add(key)
                self._held += ENTRY_BYTES + (utf8_size(key) if isinstance(key, str) else 0)

    def _item_done(self, item: Mapping[str, Any], output_index: Any) -> dict[str, Any] | None:
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
            if not any(key in self._said for key in _keys(output_index, item.get("id"))):
                parts = item.get("content") or []  # a message that came whole, without deltas
                delta["content"] = "".join(str(part.get("text") or part.get("refusal") or "")
                                           for part in parts if isinstance(part, Mapping))
            return delta
        if kind == "function_call" and self._known_call(output_index, item.get("id")) is None:
            return self._call_start(item, output_index)  # a call that came whole
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


def _keys(output_index: Any, item_id: Any) -> tuple[int | str, ...]:
    """How a message is known: its output index and its item id, whichever it has."""
    return tuple(key for key in (output_index if isinstance(output_index, int) else None,
                                 item_id if isinstance(item_id, str) and item_id else None) if key is not None)


def _short(text: str) -> str:
    return text if len(text) <= 64 else text[:64] + "…"


def _refused(reason: str) -> FailureRaised:
    """A reply whose calls cannot be used as they are: refused whole, not retried (the server would send the
    same), in one sentence."""
    return FailureRaised(Failure("bad_request", f"The Responses stream could not be used: {reason}."))


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise FailureRaised(stream_failure(str(error)).failure) from None

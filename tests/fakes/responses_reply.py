"""Scripted replies of the fake OpenAI Responses server and the event stream that carries one.

A ``ResponsesReply`` holds output items in order (``Reasoning``, ``Message``, ``Call``); ``output_items``
gives them the ids the real API gives (``rs_``/``msg_``/``fc_`` and 48 hex digits, ``call_`` and 24
characters, so a pi-style ``call_…|fc_…`` id is 81 characters) and ``stream_events`` the events a
streamed response sends, from ``response.created`` to ``response.completed``.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .http_fake import pieces

_CALL_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Reasoning:
    summary: str = ""  # the summary text (sent only when the request asked for a summary)


@dataclass(frozen=True)
class Message:
    text: str


@dataclass(frozen=True)
class Call:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


Output = Reasoning | Message | Call


@dataclass(frozen=True)
class ResponsesReply:
    """One scripted answer; ``status`` != 200 answers with that error instead (``error_message``)."""

    output: tuple[Output, ...] = ()
    status: int = 200
    error_message: str = ""
    error_code: str | None = None
    incomplete: bool = False  # ends with status "incomplete" (max_output_tokens reached)
    failure: tuple[str, str] | None = None  # (code, message): the stream ends with ``response.failed``
    output_tokens: int | None = None
    repeat: bool = False


def text_reply(text: str, *, reasoning: str | None = None) -> ResponsesReply:
    head: tuple[Output, ...] = (Reasoning(reasoning),) if reasoning is not None else ()
    return ResponsesReply((*head, Message(text)))


def call_reply(name: str, arguments: Mapping[str, Any], *, reasoning: str | None = None,
               text: str | None = None) -> ResponsesReply:
    head: tuple[Output, ...] = (Reasoning(reasoning),) if reasoning is not None else ()
    said: tuple[Output, ...] = (Message(text),) if text is not None else ()
    return ResponsesReply((*head, *said, Call(name, arguments)))


def error_reply(status: int, message: str, code: str | None = None) -> ResponsesReply:
    return ResponsesReply(status=status, error_message=message, error_code=code)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"


def new_call_id() -> str:
    return "call_" + "".join(secrets.choice(_CALL_ALPHABET) for _ in range(24))


def output_items(
    reply: ResponsesReply, *, summary: bool, encrypt: Callable[[str], str] | None
) -> list[dict[str, Any]]:
    """The reply's items as ``response.output`` lists them (``encrypt``: the reasoning's opaque content,
    given only when the request included ``reasoning.encrypted_content``)."""
    items: list[dict[str, Any]] = []
    for part in reply.output:
        if isinstance(part, Reasoning):
            item_id = new_id("rs")
            texts = [{"type": "summary_text", "text": part.summary}] if summary and part.summary else []
            item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": texts}
            if encrypt is not None:
                item["encrypted_content"] = encrypt(item_id)
            items.append(item)
        elif isinstance(part, Message):
            items.append({"id": new_id("msg"), "type": "message", "status": "completed", "content": [
                {"type": "output_text", "annotations": [], "logprobs": [], "text": part.text}], "role": "assistant"})
        else:
            items.append({"id": new_id("fc"), "type": "function_call", "status": "completed",
                          "arguments": json.dumps(dict(part.arguments)), "call_id": new_call_id(), "name": part.name})
    return items


def stream_events(
    response: Mapping[str, Any], items: Sequence[Mapping[str, Any]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event type, data) pairs of a streamed response whose final state is ``response``."""
    number = iter(range(1_000_000))

    def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(number), **data}

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(items):
        yield from _item_events(event, index, item)
    kinds = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}
    yield event(kinds[response["status"]], response=dict(response))


def _item_events(event: Callable[..., tuple[str, dict[str, Any]]], index: int,
                 item: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    where = {"item_id": item["id"], "output_index": index}
    kind = item["type"]
    if kind == "reasoning":
        yield event("response.output_item.added", output_index=index, item={**item, "summary": []})
        for number, part in enumerate(item["summary"]):
            yield event("response.reasoning_summary_part.added", **where, summary_index=number,
                        part={"type": "summary_text", "text": ""})
            for piece in pieces(part["text"]):
                yield event("response.reasoning_summary_text.delta", **where, summary_index=number, delta=piece)
            yield event("response.reasoning_summary_text.done", **where, summary_index=number, text=part["text"])
            yield event("response.reasoning_summary_part.done", **where, summary_index=number, part=part)
    elif kind == "compaction":  # opaque: it arrives whole in the added and done events
        yield event("response.output_item.added", output_index=index, item=dict(item))
    elif kind == "message":
        text = item["content"][0]["text"]
        yield event("response.output_item.added", output_index=index,
                    item={**item, "status": "in_progress", "content": []})
        empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        yield event("response.content_part.added", **where, content_index=0, part=empty)
        for piece in pieces(text):
            yield event("response.output_text.delta", **where, content_index=0, delta=piece, logprobs=[])
        yield event("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
        yield event("response.content_part.done", **where, content_index=0, part=item["content"][0])
    else:
        yield event("response.output_item.added", output_index=index,
                    item={**item, "status": "in_progress", "arguments": ""})
        for piece in pieces(item["arguments"]):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
    yield event("response.output_item.done", output_index=index, item=dict(item))

"""Scripted Gemini replies and their wire form (``GenerateContentResponse`` JSON, whole or as SSE chunks).

A reply is a tuple of parts: ``Thought`` (a part with ``"thought": true``), ``Text`` and ``FunctionCall``.
As Gemini 2.5 does with thinking on, the first function call of a reply carries a ``thoughtSignature``
(``sign="all"`` signs every call, ``sign="none"`` none); the server issues it bound to that call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .http_fake import pieces


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thought:
    text: str


@dataclass(frozen=True)
class FunctionCall:
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    signature: str | None = None  # None: issued by the server when the reply signs this call


Part = Text | Thought | FunctionCall


@dataclass(frozen=True)
class GeminiReply:
    """One scripted answer.

    Token counts default to estimates (prompt: the server's estimate; output: chars/4 of the parts).
    ``status`` != 200 answers with Google's error body (``error_status`` such as "INTERNAL", ``error_message``).
    ``repeat`` keeps the reply queued forever.
    """

    parts: tuple[Part, ...] = ()
    finish_reason: str = "STOP"
    sign: Literal["first", "all", "none"] = "first"
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    thoughts_tokens: int | None = None
    cached_tokens: int = 0
    status: int = 200
    error_status: str = "INTERNAL"
    error_message: str = "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
    repeat: bool = False


def text_reply(text: str, **kwargs: Any) -> GeminiReply:
    return GeminiReply(parts=(Text(text),), **kwargs)


def call_reply(name: str, args: Mapping[str, Any], *, thought: str = "", text: str = "", **kwargs: Any) -> GeminiReply:
    """Optional thought summary, optional text, then one function call (signed)."""
    parts: list[Part] = [Thought(thought)] if thought else []
    parts += [Text(text)] if text else []
    return GeminiReply(parts=(*parts, FunctionCall(name, args)), **kwargs)


def google_error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def wire_parts(reply: GeminiReply, sign: Callable[[Mapping[str, Any]], str]) -> list[dict[str, Any]]:
    """The reply's parts as ``content.parts``, thought signatures issued by ``sign``."""
    out: list[dict[str, Any]] = []
    calls = 0
    for part in reply.parts:
        if isinstance(part, Thought):
            out.append({"text": part.text, "thought": True})
        elif isinstance(part, Text):
            out.append({"text": part.text})
        else:
            call = {"name": part.name, "args": dict(part.args)}
            wire: dict[str, Any] = {"functionCall": call}
            if reply.sign == "all" or (reply.sign == "first" and calls == 0):
                wire["thoughtSignature"] = part.signature or sign(call)
            out.append(wire)
            calls += 1
    return out


def usage_metadata(reply: GeminiReply, parts: list[dict[str, Any]], prompt_tokens: int) -> dict[str, Any]:
    def estimate(selected: list[dict[str, Any]]) -> int:
        chars = sum(len(p.get("text", "")) + len(json.dumps(p.get("functionCall", ""))) for p in selected)
        return (chars + 3) // 4

    thoughts = reply.thoughts_tokens
    if thoughts is None:
        thoughts = estimate([p for p in parts if p.get("thought")])
    output = (
        reply.output_tokens if reply.output_tokens is not None else estimate([p for p in parts if not p.get("thought")])
    )
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_tokens
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output + thoughts,
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if reply.cached_tokens:
        usage["cachedContentTokenCount"] = reply.cached_tokens
    return usage


def response_json(
    model: str, parts: list[dict[str, Any]], finish_reason: str | None, usage: Mapping[str, Any]
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish_reason is not None:
        candidate["finishReason"] = finish_reason
    return {
        "candidates": [candidate],
        "usageMetadata": dict(usage),
        "modelVersion": model,
        "responseId": "fake-response",
    }


def stream_chunks(
    model: str, parts: list[dict[str, Any]], finish_reason: str, usage: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """Chunks as ``streamGenerateContent`` sends them: text in pieces, a function call whole (with its
    signature), prompt counts on every chunk and the full usage with the finish reason on the last."""
    running = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
    split: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part and "thoughtSignature" not in part:
            split += [{**part, "text": piece} for piece in pieces(part["text"])]
        else:
            split.append(part)
    for index, part in enumerate(split):
        last = index == len(split) - 1
        yield response_json(model, [part], finish_reason if last else None, usage if last else running)
    if not split:
        yield response_json(model, [{"text": ""}], finish_reason, usage)

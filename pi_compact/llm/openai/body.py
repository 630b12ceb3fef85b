"""The JSON body of a chat-completions request, encoded once per message (pure).

``RequestEncoder.encode(request, model_id, options)`` returns the bytes ``json.dumps`` would give for
the body litellm sends, reusing the bytes of every message an earlier request already encoded;
``options`` are the request's ``params.plan_request`` options (the output cap, reasoning effort...).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from pi_compact.llm.cache_marks import chat_cache_marks
from pi_compact.llm.convert import ConvertedHistory, Target, to_openai_tools
from pi_compact.llm.openai.compat import Wording
from pi_compact.llm.params import cache_retention
from pi_compact.llm.protocol import ChatRequest


class RequestEncoder:
    """Encodes the requests of one model; safe to share between threads.

    Keys in litellm's order: ``model``, ``messages``, ``max_tokens``, ``tools``, ``reasoning_effort``,
    ``stream: true``, ``stream_options: {"include_usage": true}``; an assistant message without text
    has no ``content`` key (litellm leaves out the null). A session's context only grows, so
    re-encoding it all on every call would cost time in proportion to the context (megabytes per call
    in a long tool loop): the history is converted incrementally (``ConvertedHistory``) and each
    converted message is encoded once, while the same message object is still part of the history.
    """

    def __init__(self, extra: Mapping[str, Any] | None = None, target: Target | None = None,
                 wording: Wording | None = None) -> None:
        self._extra = dict(extra or {})  # keys a particular server takes, after litellm's (``return_progress``)
        self._target = target  # the system prompt's role ("developer" where the model wants it), pi's rules
        self._wording = wording or Wording()  # the body keys and marks pi's ``compat`` flags ask for
        self._history = ConvertedHistory()
        # id(converted message) -> (that message, its JSON). Holding the message keeps its id from
        # being reused by another object while the entry exists.
        self._encoded: dict[int, tuple[Mapping[str, Any], bytes]] = {}
        self._lock = threading.Lock()

    def encode(
        self, request: ChatRequest, model_id: str, options: Mapping[str, Any] | None = None
    ) -> tuple[bytes, list[dict[str, Any]]]:
        """The body bytes, and the converted messages (``without_null_content`` gives them as sent)."""
        retention = cache_retention(request)
        tools = to_openai_tools(request.tools, strict=self._wording.strict_tools()) if request.tools else []
        with self._lock:
            messages = self._history.convert(request.system, request.messages, self._target)
            control = self._wording.cache_control(retention)
            if control is not None:  # marked copies: the converted messages are shared between requests
                messages = chat_cache_marks(messages, tools, control)
            encoded: dict[int, tuple[Mapping[str, Any], bytes]] = {}
            parts = [b'{"model": ' + json.dumps(model_id).encode("utf-8") + b', "messages": [']
            for message in messages:
                entry = self._encoded.get(id(message))
                if entry is None or entry[0] is not message:
                    entry = (message, json.dumps(without_null_content(message)).encode("utf-8"))
                encoded[id(message)] = entry
                parts += (entry[1], b", ")
            self._encoded = encoded
        if messages:
            parts.pop()  # the separator after the last message
        body_options = {**_options(request, options, self._wording, tools, retention), **self._extra}
        parts += (b"], ", json.dumps(body_options)[1:].encode("utf-8"))  # the options without their "{"
        return b"".join(parts), messages  # one copy of a body that may be megabytes


def request_body(
    request: ChatRequest, model_id: str, messages: list[dict[str, Any]], options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The body as a dict (what ``RequestEncoder.encode`` encodes, for a server without ``compat`` flags)."""
    tools = to_openai_tools(request.tools) if request.tools else []
    return {"model": model_id, "messages": messages,
            **_options(request, options, Wording(), tools, cache_retention(request))}


def _options(request: ChatRequest, planned: Mapping[str, Any] | None, wording: Wording, tools: list[dict[str, Any]],
             retention: str) -> dict[str, Any]:
    """The body's keys after the messages (``compat.Wording``); without ``planned`` (tests), the request's own
    fields."""
    if planned is None:
        planned = {"max_tokens": request.max_tokens, "reasoning_effort": request.reasoning}
    return wording.body_options(request, planned, tools, retention)


def without_null_content(message: Mapping[str, Any]) -> dict[str, Any]:
    if "content" in message and message["content"] is None:
        return {k: v for k, v in message.items() if k != "content"}
    return dict(message) if not isinstance(message, dict) else message

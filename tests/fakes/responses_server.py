"""A fake OpenAI Responses API on 127.0.0.1: ``POST /v1/responses`` (SSE when ``"stream": true``, else JSON)
and ``POST /v1/responses/compact`` (JSON: the input's user messages and one compaction item).

Every request is validated as the real API validates it (``responses_checks``) and recorded; a rejected
request gets the API's error body and does not use up a scripted reply. An accepted one is answered with
the next queued ``ResponsesReply`` (or ``route(body)``'s). Reasoning items carry ``encrypted_content``
(an HMAC of the item id under the server's secret) only when the request included
``reasoning.encrypted_content``, and a summary only when it asked for one; with ``store: false`` a reasoning
item can only come back with that content, unchanged. Usage counts a token per four characters of the
input and reports as cached the part of the input that repeats the previous accepted request's, in
128-token steps from 1,024 (OpenAI's prompt caching). Compaction (``responses_compaction``): a compaction
item is bound to the model and the API key; a request ending in a ``compaction_trigger`` item is answered
with one compaction item, and one whose input reaches its ``context_management`` ``compact_threshold`` with a
compaction item before the reply; ``previous_response_id`` must name a response kept (``store`` not false):

    server = FakeResponsesServer().start()
    server.enqueue(call_reply("read", {"path": "a.py"}, reasoning="Look first."), text_reply("done"))
    ... pi-compact with api_base=server.base_url ...
    assert server.rejections == []
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from . import responses_compaction as compaction
from .http_fake import Exchange, ScriptedFake
from .responses_checks import OpenAIError, check_request, estimate_tokens
from .responses_reply import Message, ResponsesReply, output_items, stream_events, text_reply

NO_SCRIPTED_REPLY = "(no scripted reply)"
DEFAULT_SECRET = b"pi-compact fake responses secret"
_CACHE_MIN, _CACHE_STEP = 1024, 128


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]
    error: OpenAIError | None
    usage: dict[str, Any] | None
    output: list[dict[str, Any]] | None  # the items answered


class FakeResponsesServer(ScriptedFake[ResponsesReply, RecordedRequest]):
    thread_name = "fake-openai-responses"

    def __init__(self, *, secret: bytes = DEFAULT_SECRET) -> None:
        super().__init__()
        self._secret = secret
        self._last_input: list[Any] = []
        self._kept: set[str] = set()  # ids of the responses made with ``store`` not false
        self.summaries: dict[str, str] = {}  # compaction item id -> the summary it stands for (tests read it)

    def start(self) -> FakeResponsesServer:
        super().start()
        return self

    @property
    def base_url(self) -> str:
        """What pi takes as ``baseUrl`` and pi-compact as ``--api-base``: both append ``/responses``."""
        return self.root_url + "/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [record.body for record in self.records]

    @property
    def rejections(self) -> list[OpenAIError]:
        return [record.error for record in self.records if record.error is not None]

    def encrypt(self, item_id: str) -> str:
        mac = hmac.new(self._secret, item_id.encode(), hashlib.sha256).digest()
        return base64.b64encode(b"gAAAA" + mac + secrets.token_bytes(64)).decode()

    def verify_reasoning(self, item_id: str, encrypted: object) -> bool:
        raw = compaction.decoded(encrypted)
        if raw is None:
            return False
        mac = hmac.new(self._secret, item_id.encode(), hashlib.sha256).digest()
        return raw.startswith(b"gAAAA") and hmac.compare_digest(raw[5:37], mac)

    def verify_compaction(self, encrypted: object, model: str, key: str) -> bool:
        return compaction.verify(self._secret, encrypted, model, key)

    def kept(self, response_id: str) -> bool:
        with self.lock:
            return response_id in self._kept

    def compaction_item(self, model: str, key: str, summary: str) -> dict[str, Any]:
        """A compaction item this server issues for ``model`` and ``key`` (tests may mint one directly)."""
        item = compaction.compaction_item(compaction.mint(self._secret, model, key, summary))
        with self.lock:
            self.summaries[item["id"]] = summary
        return item

    def fallback(self) -> ResponsesReply:
        return text_reply(NO_SCRIPTED_REPLY)

    def handle(self, exchange: Exchange) -> None:
        if exchange.method == "POST" and exchange.path == "/v1/responses/compact":
            self._compact(exchange)
            return
        if exchange.method != "POST" or exchange.path != "/v1/responses":
            exchange.send_json(404, OpenAIError(404, f"Invalid URL ({exchange.method} {exchange.path})").body())
            return
        accepted = self._accept(exchange, compact=False)
        if accepted is not None:
            self._answer(exchange, *accepted)

    def _accept(self, exchange: Exchange, *, compact: bool) -> tuple[dict[str, Any], ResponsesReply, int] | None:
        """The body, its scripted reply and its input tokens; None when refused (already answered)."""
        try:
            body = exchange.json_body()
        except ValueError:
            body = None
        tokens = estimate_tokens(body) if isinstance(body, dict) else 0
        error = check_request(exchange.headers, body, self, prompt_tokens=tokens, compact=compact)
        if error is not None or not isinstance(body, dict):
            self._reject(exchange, body if isinstance(body, dict) else {}, error or OpenAIError(400, "bad body"))
            return None
        reply = self._next_reply(body)
        if reply.status != 200:
            self._reject(exchange, body, OpenAIError(reply.status, reply.error_message, code=reply.error_code,
                                                     type="server_error" if reply.status >= 500 else
                                                     "invalid_request_error"))
            return None
        return body, reply, tokens

    def _reject(self, exchange: Exchange, body: dict[str, Any], error: OpenAIError) -> None:
        self._keep(RecordedRequest(exchange.path, exchange.headers, body, error, None, None))
        exchange.send_json(error.status, error.body())

    def _answer(self, exchange: Exchange, body: dict[str, Any], reply: ResponsesReply, tokens: int) -> None:
        asked = body.get("reasoning")
        reasoning: dict[str, Any] = asked if isinstance(asked, dict) else {}
        encrypted = "reasoning.encrypted_content" in (body.get("include") or [])
        items = output_items(reply, summary=bool(reasoning.get("summary")), encrypt=self.encrypt if encrypted else None)
        key = exchange.headers["authorization"].removeprefix("Bearer ")
        limit = compaction.threshold(body)
        if compaction.triggered(body):  # the reply is the compaction itself
            items = [self.compaction_item(str(body.get("model")), key, _summary_of(reply))]
        elif limit is not None and tokens >= limit:
            items = [self.compaction_item(str(body.get("model")), key, _summary_of(reply)), *items]
        output_tokens = reply.output_tokens or max(1, len(json.dumps(items)) // 4)
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": self._cached(body.get("input"), tokens)},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + output_tokens,
        }
        status = "failed" if reply.failure else "incomplete" if reply.incomplete else "completed"
        response = {
            "id": "resp_" + secrets.token_hex(24), "object": "response", "status": status,
            "model": body.get("model"), "output": items, "store": body.get("store", True), "usage": usage,
            "incomplete_details": {"reason": "max_output_tokens"} if reply.incomplete else None,
            "error": {"code": reply.failure[0], "message": reply.failure[1]} if reply.failure else None,
        }
        self._keep(RecordedRequest(exchange.path, exchange.headers, body, None, usage, items))
        if body.get("store", True) is not False:
            with self.lock:
                self._kept.add(response["id"])
        if not body.get("stream"):
            exchange.send_json(200, response)
            return
        exchange.start_events({"x-request-id": "req_fake"})
        for name, data in stream_events(response, items):
            exchange.send_event(data, event=name)

    def _compact(self, exchange: Exchange) -> None:
        """``POST /v1/responses/compact``: the input's user messages, then one compaction item for the rest."""
        accepted = self._accept(exchange, compact=True)
        if accepted is None:
            return
        body, reply, tokens = accepted
        key = exchange.headers["authorization"].removeprefix("Bearer ")
        items = body.get("input") if isinstance(body.get("input"), list) else []
        summary = _summary_of(reply)
        output = [*compaction.kept_user_messages(items), self.compaction_item(str(body["model"]), key, summary)]
        output_tokens = reply.output_tokens or max(1, len(summary) // 4)
        usage = {"input_tokens": tokens, "input_tokens_details": {"cached_tokens": self._cached(items, tokens)},
                 "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": tokens + output_tokens}
        self._keep(RecordedRequest(exchange.path, exchange.headers, body, None, usage, output))
        exchange.send_json(200, {"id": "resp_" + secrets.token_hex(24), "object": "response.compaction",
                                 "created_at": int(time.time()), "output": output, "usage": usage})

    def _cached(self, items: Any, tokens: int) -> int:
        """Tokens of the input that repeat the previous accepted request's (whole items, in order)."""
        items = items if isinstance(items, list) else []
        with self.lock:
            previous, self._last_input = self._last_input, list(items)
        same = 0
        for old, new in zip(previous, items, strict=False):
            if old != new:
                break
            same += 1
        if same == 0:
            return 0
        shared = -(-len(json.dumps(items[:same], ensure_ascii=False)) // 4)
        shared = min(shared, tokens)
        return 0 if shared < _CACHE_MIN else shared - (shared - _CACHE_MIN) % _CACHE_STEP


def _summary_of(reply: ResponsesReply) -> str:
    """What a compaction answering ``reply`` summarizes to: its scripted messages' text, else a default."""
    texts = [part.text for part in reply.output if isinstance(part, Message)]
    return "\n".join(texts) or "Summary of the conversation so far."


@pytest.fixture(name="server")
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeResponsesServer]:
    """A started fake with a key in the environment and the direct client's path (tests import it as ``server``)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.delenv("PI_COMPACT_MODEL_PATH", raising=False)
    fake = FakeResponsesServer().start()
    try:
        yield fake
    finally:
        fake.stop()

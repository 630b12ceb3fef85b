"""A fake Gemini API on 127.0.0.1: ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` (without ``alt=sse`` the stream is a JSON array, as Google sends it).

Each request is validated (``gemini_checks``), recorded, and counted by its conversation: the body with
every thought signature blanked out, so a resend that only swaps signatures (litellm's fallback after
``Corrupted thought signature.``) counts as the same request sent twice. A rejected request does not use
up a scripted reply.

    server = FakeGeminiServer().start()
    server.enqueue(call_reply("read", {"path": "a.py"}, thought="Look first."), text_reply("done"))
    litellm.completion(model="gemini/gemini-2.5-pro", api_base=server.base_url, api_key="g-fake", ...)
    assert server.max_sends == 1
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .anthropic_cache import TokenCounter, chars_over_four
from .gemini_checks import (
    GoogleError,
    Limits,
    call_key,
    check_request,
    invalid,
    normalized,
    parts_of,
    signature_of,
)
from .gemini_reply import GeminiReply, response_json, stream_chunks, text_reply, usage_metadata, wire_parts
from .http_fake import Exchange, ScriptedFake, canonical_json
from .signing import DEFAULT_SECRET, Signer

NO_SCRIPTED_REPLY = "(no scripted reply)"
_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|countTokens)$")


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]
    prompt_tokens: int
    error: GoogleError | None
    usage: dict[str, Any] | None  # usageMetadata answered, None when rejected


def conversation_key(body: Mapping[str, Any]) -> str:
    """The body with thought signatures blanked: equal for a request and its signature-swapped resend."""

    def blank(part: Mapping[str, Any]) -> dict[str, Any]:
        return {
            key: ("<sig>" if key in ("thoughtSignature", "thought_signature") else value) for key, value in part.items()
        }

    contents = [
        {**content, "parts": [blank(part) for part in parts_of(content)]} for content in body.get("contents") or []
    ]
    return canonical_json({**body, "contents": contents})


def estimate_prompt(body: Mapping[str, Any], counter: TokenCounter = chars_over_four) -> int:
    body = normalized(body)
    texts: list[str] = []
    for content in [body.get("systemInstruction") or {}, *(body.get("contents") or [])]:
        for part in parts_of(content):
            texts.append(str(part.get("text", "")))
            for key in ("functionCall", "functionResponse"):
                if key in part:
                    texts.append(canonical_json(part[key]))
    texts += [canonical_json(tool) for tool in body.get("tools") or []]
    return counter("".join(texts))


class FakeGeminiServer(ScriptedFake[GeminiReply, RecordedRequest]):
    thread_name = "fake-gemini"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        token_counter: TokenCounter = chars_over_four,
        secret: bytes = DEFAULT_SECRET,
        api_key: str | None = None,
    ) -> None:
        super().__init__()
        self.limits = limits or Limits()
        self.token_counter = token_counter
        self.signer = Signer(secret)
        self.api_key = api_key  # None: any non-empty key is accepted
        self._signed_calls: dict[str, str] = {}  # call key -> the signature issued for it
        self._sends: Counter[str] = Counter()

    def start(self) -> FakeGeminiServer:
        super().start()
        return self

    @property
    def base_url(self) -> str:
        """What litellm takes as ``api_base`` and pi as ``baseUrl`` (both append ``/models/M:method``)."""
        return f"{self.root_url}/v1beta"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [record.body for record in self.records]

    @property
    def rejections(self) -> list[GoogleError]:
        return [record.error for record in self.records if record.error is not None]

    @property
    def max_sends(self) -> int:
        """How often the most repeated conversation was sent (1 when nothing was sent twice)."""
        with self.lock:
            return max(self._sends.values(), default=0)

    @property
    def issued_signatures(self) -> dict[str, str]:
        with self.lock:
            return dict(self._signed_calls)

    def _sign(self, call: Mapping[str, Any]) -> str:
        signature = self.signer.call_signature(call)
        self._signed_calls[call_key(call)] = signature
        return signature

    def handle(self, exchange: Exchange) -> None:
        match = _PATH.match(exchange.path)
        if exchange.method != "POST" or match is None:
            exchange.send_json(
                404, GoogleError(404, "NOT_FOUND", f"Requested entity was not found: {exchange.path}").body()
            )
            return
        try:
            body = exchange.json_body()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._reject(exchange, {}, 0, invalid("Invalid JSON payload received."))
            return
        prompt_tokens = estimate_prompt(body, self.token_counter)
        with self.lock:
            self._sends[conversation_key(body)] += 1
            signed = dict(self._signed_calls)
        error = check_request(
            exchange.query,
            exchange.headers,
            body,
            limits=self.limits,
            signer=self.signer,
            signed_calls=signed,
            prompt_tokens=prompt_tokens,
            api_key=self.api_key,
        )
        if error is not None:
            self._reject(exchange, body, prompt_tokens, error)
        elif match["method"] == "countTokens":
            self._record(exchange, body, prompt_tokens, None, {"totalTokens": prompt_tokens})
            exchange.send_json(200, {"totalTokens": prompt_tokens})
        else:
            self._answer(exchange, body, prompt_tokens, match["model"], match["method"] == "streamGenerateContent")

    def _record(
        self,
        exchange: Exchange,
        body: dict[str, Any],
        tokens: int,
        error: GoogleError | None,
        usage: dict[str, Any] | None,
    ) -> None:
        record = RecordedRequest(exchange.path, exchange.query, exchange.headers, body, tokens, error, usage)
        self._keep(record)

    def _reject(self, exchange: Exchange, body: dict[str, Any], tokens: int, error: GoogleError) -> None:
        self._record(exchange, body, tokens, error, None)
        exchange.send_json(error.code, error.body())

    def fallback(self) -> GeminiReply:
        return text_reply(NO_SCRIPTED_REPLY)

    def _answer(self, exchange: Exchange, body: dict[str, Any], tokens: int, model: str, stream: bool) -> None:
        reply = self._next_reply(body)
        if reply.status != 200:
            self._reject(exchange, body, tokens, GoogleError(reply.status, reply.error_status, reply.error_message))
            return
        with self.lock:
            parts = wire_parts(reply, self._sign)
        usage = usage_metadata(reply, parts, tokens)
        self._record(exchange, body, tokens, None, usage)
        if not stream:
            exchange.send_json(200, response_json(model, parts, reply.finish_reason, usage))
            return
        chunks = list(stream_chunks(model, parts, reply.finish_reason, usage))
        if exchange.query.get("alt") != "sse":
            exchange.send_json(200, chunks)
            return
        exchange.start_events()
        for chunk in chunks:
            exchange.send_event(chunk, line_end="\r\n")


def signatures_in(body: Mapping[str, Any]) -> list[Any]:
    """Every thought signature a request carries, in order."""
    return [
        signature_of(part)
        for content in body.get("contents") or []
        for part in parts_of(content)
        if signature_of(part) is not None
    ]

"""A fake Anthropic Messages API on 127.0.0.1: ``POST /v1/messages`` (SSE when ``"stream": true``, else JSON)
and ``POST /v1/messages/count_tokens``.

Every request is validated as the real API validates it (``anthropic_checks``) and recorded; a rejected
request gets the API's error body and does not use up a scripted reply. An accepted one is answered with
the next queued ``AnthropicReply`` (or ``route(body)``'s), its prompt billed through the simulated prompt
cache (``anthropic_cache``). Server-side compaction (``anthropic_compaction``): the prompt is read from the
last ``compaction`` block on; a request declaring the ``compact_20260112`` edit whose prompt reaches the
trigger is answered with a ``compaction`` block first (the reply's scripted ``Compaction``, else a default),
billed per ``usage.iterations`` (the summary pass over the whole prompt, then the answer over the
compacted context), and with ``pause_after_compaction`` the answer stops there (``stop_reason``
"compaction"):

    server = FakeAnthropicServer().start()
    server.enqueue(tool_reply("read", {"path": "a.py"}, thinking="Look first."), text_reply("done"))
    litellm.completion(model="anthropic/claude-sonnet-4-5", api_base=server.base_url, api_key="sk-fake", ...)
    assert server.records[0].error is None and server.records[0].usage["cache_read_input_tokens"] == 0
    server.stop()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .anthropic_cache import PromptCache, TokenCounter, chars_over_four, estimate_tokens, request_blocks
from .anthropic_checks import ApiError, Limits, check_request, invalid
from .anthropic_compaction import check_compaction, compact_edit, compacted_body, from_last_block
from .anthropic_stream import (
    AnthropicReply,
    content_blocks,
    estimate_output_tokens,
    message_json,
    stream_events,
    summary_of,
    text_reply,
)
from .http_fake import Exchange, ScriptedFake
from .signing import DEFAULT_SECRET, Signer

NO_SCRIPTED_REPLY = "(no scripted reply)"


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: dict[str, Any]
    prompt_tokens: int  # the server's estimate of the whole prompt
    error: ApiError | None  # the rejection (validation or a scripted error), None when answered
    usage: dict[str, Any] | None  # the usage answered, None when rejected


class FakeAnthropicServer(ScriptedFake[AnthropicReply, RecordedRequest]):
    thread_name = "fake-anthropic"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        token_counter: TokenCounter = chars_over_four,
        min_cache_tokens: int = 1024,
        clock: Callable[[], float] = time.monotonic,
        secret: bytes = DEFAULT_SECRET,
        api_key: str | None = None,
    ) -> None:
        super().__init__()
        self.limits = limits or Limits()
        self.token_counter = token_counter
        self.cache = PromptCache(min_tokens=min_cache_tokens, clock=clock)
        self.signer = Signer(secret)
        self.api_key = api_key  # None: any non-empty x-api-key is accepted

    def start(self) -> FakeAnthropicServer:
        super().start()
        return self

    @property
    def base_url(self) -> str:
        """What litellm takes as ``api_base`` and pi as ``baseUrl``: both append ``/v1/messages``."""
        return self.root_url

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The bodies of every ``/v1/messages`` request, oldest first (rejected ones included)."""
        return [record.body for record in self.records if record.path == "/v1/messages"]

    @property
    def rejections(self) -> list[ApiError]:
        return [record.error for record in self.records if record.error is not None]

    def handle(self, exchange: Exchange) -> None:
        if exchange.method != "POST" or exchange.path not in ("/v1/messages", "/v1/messages/count_tokens"):
            exchange.send_json(404, ApiError(404, "not_found_error", "Not Found").body())
            return
        try:
            body = exchange.json_body()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._reject(exchange, {}, 0, invalid("There was an error parsing the body of your request"))
            return
        prompt_tokens = estimate_tokens(from_last_block(body), self.token_counter)
        counting = exchange.path.endswith("/count_tokens")
        checked = {**body, "max_tokens": 1} if counting else body  # count_tokens takes no max_tokens
        error = check_request(
            exchange.headers,
            checked,
            limits=self.limits,
            signer=self.signer,
            prompt_tokens=prompt_tokens,
            api_key=self.api_key,
            features=check_compaction,
        )
        if error is not None:
            self._reject(exchange, body, prompt_tokens, error)
        elif counting:
            self._record(exchange, body, prompt_tokens, None, {"input_tokens": prompt_tokens})
            exchange.send_json(200, {"input_tokens": prompt_tokens})
        else:
            self._answer(exchange, body, prompt_tokens)

    def _reject(self, exchange: Exchange, body: dict[str, Any], prompt_tokens: int, error: ApiError) -> None:
        self._record(exchange, body, prompt_tokens, error, None)
        exchange.send_json(error.status, error.body())

    def _record(
        self,
        exchange: Exchange,
        body: dict[str, Any],
        tokens: int,
        error: ApiError | None,
        usage: dict[str, Any] | None,
    ) -> None:
        record = RecordedRequest(exchange.path, exchange.headers, body, tokens, error, usage)
        self._keep(record)

    def fallback(self) -> AnthropicReply:
        return text_reply(NO_SCRIPTED_REPLY)

    def _answer(self, exchange: Exchange, body: dict[str, Any], prompt_tokens: int) -> None:
        reply = self._next_reply(body)
        if reply.status != 200:
            self._reject(exchange, body, prompt_tokens, ApiError(reply.status, reply.error_type, reply.error_message))
            return
        read = from_last_block(body)
        content = content_blocks(reply, self.signer)
        stop_reason = reply.effective_stop_reason
        edit = compact_edit(body)
        if edit is not None and prompt_tokens >= edit.trigger:
            content, usage, stop_reason = self._compacted(read, reply, content, edit.pause_after, stop_reason)
        else:
            usage = self._billed(read, reply, content)
        model = str(body.get("model"))
        self._record(exchange, body, prompt_tokens, None, usage)
        if not body.get("stream"):
            exchange.send_json(200, message_json(model, content, stop_reason, usage))
            return
        exchange.start_events({"request-id": "req_fake"})
        events = list(stream_events(model, content, stop_reason, usage))
        if reply.stream_error:
            events = events[:-2]  # no message_delta / message_stop: the error ends the stream
        if reply.cut_after is not None:
            events = events[: reply.cut_after]  # the connection drops: no error event, no stop
        for name, data in events:
            exchange.send_event(data, event=name)
        if reply.stream_error and reply.cut_after is None:
            exchange.send_event(ApiError(500, reply.error_type, reply.error_message).body(), event="error")

    def _billed(self, read: dict[str, Any], reply: AnthropicReply, content: list[dict[str, Any]]) -> dict[str, Any]:
        """One sampling pass over ``read``, through the prompt cache."""
        usage = self.cache.account(request_blocks(read), self.token_counter).as_usage()
        usage.update(reply.usage or {})
        usage["output_tokens"] = reply.output_tokens or estimate_output_tokens(content)
        return usage

    def _compacted(
        self, read: dict[str, Any], reply: AnthropicReply, content: list[dict[str, Any]], pause: bool, stop: str
    ) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
        """The answer of a request that reached its trigger: the summary pass, then (unless paused) the reply
        over the compacted context; the top-level usage is the last pass's, ``iterations`` lists both."""
        block = {"type": "compaction", "content": summary_of(reply)}
        summary = self.cache.account(request_blocks(read), self.token_counter).as_usage()
        iterations = [{"type": "compaction", **summary, "output_tokens": estimate_output_tokens([block])}]
        if pause:
            top = {key: value for key, value in iterations[0].items() if key != "type"}
            return [block], {**top, "iterations": iterations}, "compaction"
        answer = self._billed(compacted_body(read, block), reply, content)
        iterations.append({"type": "message", **answer})
        return [block, *content], {**answer, "iterations": iterations}, stop


def usage_of(record: RecordedRequest) -> Mapping[str, Any]:
    assert record.usage is not None, f"request was rejected: {record.error}"
    return record.usage

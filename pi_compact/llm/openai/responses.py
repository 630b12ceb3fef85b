"""OpenAI's own models through the Responses API, as pi 0.73.1 drives them (``ResponsesModel``).

Requests go to ``<api base>/responses`` with ``store: false``: nothing is kept on OpenAI's side, so a
reasoning model's reasoning is carried by the session itself. The request includes
``reasoning.encrypted_content``; each reasoning item comes back whole and is kept as pi keeps it (the
thinking block's ``thinkingSignature``), then sent back unchanged on every later request of the same
model, so the model keeps its reasoning across tool calls. The body is pi's: ``model``, ``input``
(``responses_input``), ``stream``, ``prompt_cache_key`` (the session id) and ``prompt_cache_retention``
("24h" for ``long``), ``store``, ``max_output_tokens`` (``params.plan_request``'s cap), ``tools``,
``reasoning`` (``effort`` from the thinking level, clamped to the levels the model takes, and
``summary: "auto"``) and ``include``. Retries, timeouts and cancel are ``stream_loop``'s; HTTP failures
read as on the chat-completions client (``failures``). ``compact(request)`` asks OpenAI's own compaction of
the request's conversation (``openai/compact.py``); the window it returns goes back, in place of the
compacted messages, only to the same model with the same key (``Target.account``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from pi_compact import providers
from pi_compact.cancel import CancelToken
from pi_compact.errors import AuthError
from pi_compact.llm import model_map
from pi_compact.llm.convert import Target
from pi_compact.llm.failures import FailureRaised
from pi_compact.llm.http_sse import HttpStatusError, open_event_stream
from pi_compact.llm.openai.client import PLACEHOLDER_KEY, Chunks, OpenAICompatModel
from pi_compact.llm.openai.compact import COMPACT_PATH, MAX_ANSWER_BYTES, CompactedWindow, compact_body, read_window
from pi_compact.llm.openai.failures import failure_of, status_failure
from pi_compact.llm.openai.responses_events import ResponsesReader
from pi_compact.llm.openai.responses_input import to_input, to_tools
from pi_compact.llm.params import cache_retention, plan_request
from pi_compact.llm.protocol import ChatRequest, ModelInfo, StreamEvent
from pi_compact.llm.redact import known_secrets
from pi_compact.llm.server_compaction import account_of
from pi_compact.llm.stream_loop import stream_reply
from pi_compact.llm.thinking import LEVELS, clamp_level
from pi_compact.settings import RetrySettings

ENCRYPTED_REASONING = "reasoning.encrypted_content"


class ResponsesModel(OpenAICompatModel):
    """A ``ChatModel`` for an OpenAI model at ``api_base`` (OpenAI's endpoint, or one that speaks its
    Responses API); replies record pi's api ``openai-responses``, and a reasoning model gets the system
    prompt as a ``developer`` message (pi's rule for this api)."""

    def __init__(self, info: ModelInfo, api_base: str, api_key: str | None = None,
                 retry: RetrySettings | None = None, headers: Mapping[str, str] | None = None) -> None:
        info = replace(info, wire_api=providers.RESPONSES, system_role="developer" if info.reasoning else "system")
        super().__init__(info, api_base, api_key, retry, headers=headers)

    def _url(self) -> str:
        return self._api_base.rstrip("/") + "/responses"

    def _stream_once(self, request: ChatRequest, cancel: CancelToken) -> Iterator[StreamEvent]:
        key = self._key()
        data = json.dumps(request_body(self._info, request, self._api_base, account_of(key))).encode("utf-8")
        headers = self._headers(key)
        if request.session_id and cache_retention(request) != "none":  # pi's headers for its cache session
            if self._info.compat.send_session_id_header is not False:  # ``compat.sendSessionIdHeader``
                headers["session_id"] = request.session_id
            headers["x-client-request-id"] = request.session_id
        headers.update(self._extra_headers)
        facts = model_map.lookup(self._info.model)
        return stream_reply(
            self._info,
            self._retry,
            endpoint=self.endpoint,
            open_stream=lambda: self._open_responses(data, headers),
            failure_of=failure_of,
            costs=self._info.costs if self._info.costs is not None else facts.costs if facts is not None else {},
            cancel=cancel,
            secrets=known_secrets((key, self._api_key, *self._extra_headers.values()), os.environ),
        )

    def compact(self, request: ChatRequest) -> CompactedWindow:
        """OpenAI's compaction of ``request``'s conversation (one blocking call, not retried: the caller falls
        back on any failure). Raises ``AuthError`` without a key for OpenAI's own endpoint, ``FailureRaised``
        for a refused request or a network failure."""
        key = self._key()
        target = replace(Target.of(self._info), account=account_of(key))
        data = json.dumps(compact_body(self._info, request, target)).encode("utf-8")
        url = self._api_base.rstrip("/") + COMPACT_PATH
        facts = model_map.lookup(self._info.model)
        costs = self._info.costs if self._info.costs is not None else facts.costs if facts is not None else {}
        try:
            stream = open_event_stream(url, data, self._headers(key), self._timeout_s(), self._ssl_context())
            try:
                answer = stream.body(MAX_ANSWER_BYTES)
            finally:
                stream.close()
        except HttpStatusError as error:
            raise FailureRaised(status_failure(error.status, error.body, reason=error.reason, url=url)) from None
        except FailureRaised:
            raise
        except Exception as error:  # the network's failures, as the streaming path reads them
            raise FailureRaised(failure_of(error)) from error
        return read_window(answer, self._info, target.account, costs)

    def _key(self) -> str:
        variable = providers.by_name(self._info.provider).key_variable or providers.direct_key_variable()
        key = self._api_key or os.environ.get(variable)
        if key:
            return key
        if any(host in self._api_base for host in providers.by_name(self._info.provider).hosts):
            raise AuthError(f"Model {self._info.model} needs an API key: set the environment variable {variable} "
                            "and try again.")
        return PLACEHOLDER_KEY  # a server of the user's own may need none

    def _open_responses(self, data: bytes, headers: Mapping[str, str]) -> Chunks:
        return Chunks(self._stream(data, headers), ResponsesReader())


def request_body(info: ModelInfo, request: ChatRequest, api_base: str | None, account: str = "") -> dict[str, Any]:
    """The JSON body of one Responses request, keys in pi's order (``account``: whose key sends it)."""
    retention = cache_retention(request)
    body: dict[str, Any] = {
        "model": info.model_id,
        "input": to_input(request.system, request.messages, replace(Target.of(info), account=account)),
        "stream": True,
    }
    if request.session_id and retention != "none":
        body["prompt_cache_key"] = request.session_id
    if retention == "long" and info.compat.supports_long_cache_retention is not False:
        body["prompt_cache_retention"] = "24h"
    body["store"] = False
    body["max_output_tokens"] = plan_request(info, request, api_base=api_base).max_tokens
    if request.tools:
        body["tools"] = to_tools(request.tools)
    effort = reasoning_effort(info, request.thinking_level)
    if effort is not None:
        body["reasoning"] = {"effort": effort, "summary": "auto"}
    if info.reasoning:  # always: a reasoning item without its encrypted content cannot be sent back
        body["include"] = [ENCRYPTED_REASONING]
    return body


def reasoning_effort(info: ModelInfo, level: str | None) -> str | None:
    """The ``reasoning.effort`` for thinking ``level``: the level the model takes nearest to it (pi's clamp,
    so "off" on a model that always reasons is its least effort, not the API's default); None for "off" on a
    model that can stop, no level, or a model that does not reason."""
    if not info.reasoning or level not in LEVELS:
        return None
    clamped = clamp_level(info, level).level
    return None if clamped == "off" else clamped

"""The model adapters against the scripted OpenAI-compatible server.

Every test runs twice: through ``LiteLLMModel`` (the real litellm HTTP path) and through
``OpenAICompatModel`` (the direct client), except the few marked ``litellm_only``.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest
from model_paths import chat_model
from scripted_server import (
    Reply,
    ScriptedServer,
    ToolCallReply,
    anthropic_prompt_too_long_reply,
    error_reply,
    openai_context_overflow_reply,
    rate_limit_reply,
    server_error_reply,
)

from pi_compact.cancel import CancelToken
from pi_compact.errors import AuthError
from pi_compact.llm.litellm_model import LiteLLMModel, preload_litellm
from pi_compact.llm.overflow import is_context_overflow
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    ModelInfo,
    Retrying,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
    complete,
)
from pi_compact.settings import RetrySettings

INFO = ModelInfo("openai/scripted", "openai", 128000, None)
FAST_RETRY = RetrySettings(enabled=True, max_retries=2, base_delay_ms=1, max_delay_ms=5)
NO_RETRY = RetrySettings(enabled=False)
HELLO = ChatRequest(system="You are terse.", messages=[{"role": "user", "content": "hi", "timestamp": 1}])
_PATH = ["litellm"]  # the adapter the current test uses (set by ``_each_path``)


@pytest.fixture(autouse=True)
def _each_path(model_path: str) -> None:
    _PATH[0] = model_path


def model_for(
    server: ScriptedServer,
    retry: RetrySettings = FAST_RETRY,
    info: ModelInfo = INFO,
    api_key: str | None = "test",
) -> ChatModel:
    return chat_model(_PATH[0], info, api_base=server.base_url, api_key=api_key, retry=retry)


def events_of(
    model: ChatModel, request: ChatRequest = HELLO, cancel: CancelToken | None = None
) -> list[StreamEvent]:
    return list(model.stream(request, cancel))


def final(events: list[StreamEvent]) -> dict[str, Any]:
    assert isinstance(events[-1], Done)
    return events[-1].message


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_streamed_text_arrives_as_deltas_and_one_text_block(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="Hello there, friend"))
    events = events_of(model_for(scripted_server))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend"
    assert sum(isinstance(e, TextDelta) for e in events) > 1
    message = final(events)
    assert message["content"] == [{"type": "text", "text": "Hello there, friend"}]
    assert (message["stopReason"], message["provider"], message["model"]) == (
        "stop",
        "openai",
        "scripted",  # pi records the model id without its provider prefix
    )


def test_server_usage_is_mapped_to_pi_usage(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="ok", prompt_tokens=1200, completion_tokens=34, cached_tokens=200))
    usage = complete(model_for(scripted_server), HELLO)["usage"]
    assert {k: usage[k] for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")} == {
        "input": 1000,
        "output": 34,
        "cacheRead": 200,
        "cacheWrite": 0,
        "totalTokens": 1234,
    }


def test_cost_comes_from_the_bundled_price_map(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="ok", prompt_tokens=1000, completion_tokens=100))
    info = ModelInfo("openai/gpt-4o", "openai", 128000, 16384)
    cost = complete(model_for(scripted_server, info=info), HELLO)["usage"]["cost"]
    assert cost["input"] == pytest.approx(1000 * 2.5e-06)
    assert cost["output"] == pytest.approx(100 * 1e-05)
    assert cost["total"] == pytest.approx(1000 * 2.5e-06 + 100 * 1e-05)


def test_tool_calls_are_assembled_from_fragments(scripted_server: ScriptedServer) -> None:
    calls = (
        ToolCallReply("read", {"path": "src/app.py", "offset": 10}, id="call_a"),
        ToolCallReply("ls", {}),
    )
    scripted_server.enqueue(Reply(text="Let me look.", tool_calls=calls))
    events = events_of(model_for(scripted_server))
    assert sum(isinstance(e, ToolCallDelta) and e.index == 0 for e in events) > 2
    message = final(events)
    assert message["content"] == [
        {"type": "text", "text": "Let me look."},
        {
            "type": "toolCall",
            "id": "call_a",
            "name": "read",
            "arguments": {"path": "src/app.py", "offset": 10},
        },
        {"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {}},
    ]
    assert message["stopReason"] == "toolUse"


def test_reasoning_content_becomes_a_thinking_block(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(thinking="First, consider the file.", text="Done."))
    events = events_of(model_for(scripted_server))
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "First, consider the file."
    assert final(events)["content"] == [
        {"type": "thinking", "thinking": "First, consider the file."},
        {"type": "text", "text": "Done."},
    ]


def test_request_carries_system_messages_tools_max_tokens_and_usage_option(
    scripted_server: ScriptedServer,
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "list files", "timestamp": 1},
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {"path": "."}}],
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "ls",
            "content": [{"type": "text", "text": "a.py"}],
        },
    ]
    tool = ToolSpec("ls", "List a directory", {"type": "object", "properties": {"path": {"type": "string"}}})
    complete(model_for(scripted_server), ChatRequest("Be careful.", history, tools=[tool], max_tokens=321))
    body = scripted_server.requests[0]
    assert body["model"] == "scripted"
    assert body["messages"] == [
        {"role": "system", "content": "Be careful."},
        {"role": "user", "content": "list files"},
        {  # litellm leaves out the null content
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List a directory",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    assert body["max_tokens"] == 321
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_reasoning_level_is_sent_as_reasoning_effort(scripted_server: ScriptedServer) -> None:
    complete(model_for(scripted_server), ChatRequest("s", HELLO.messages, reasoning="high"))
    assert scripted_server.requests[0]["reasoning_effort"] == "high"


def test_rate_limit_is_retried_then_succeeds(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(rate_limit_reply(), Reply(text="finally"))
    events = events_of(model_for(scripted_server))
    assert len(scripted_server.requests) == 2
    retries = [e for e in events if isinstance(e, Retrying)]
    assert len(retries) == 1
    assert (retries[0].attempt, retries[0].max_attempts, retries[0].delay_ms) == (1, 2, 1)
    assert final(events)["content"] == [{"type": "text", "text": "finally"}]


def test_rate_limit_error_is_never_context_overflow(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(rate_limit_reply())
    message = complete(model_for(scripted_server, NO_RETRY), HELLO)
    assert message["stopReason"] == "error"
    assert "too many tokens" in message["errorMessage"]
    assert not is_context_overflow(message, INFO.context_window)


def test_server_error_forever_gives_up_after_max_retries_plus_one_requests(
    scripted_server: ScriptedServer,
) -> None:
    scripted_server.enqueue(server_error_reply(500, repeat=True))
    message = complete(model_for(scripted_server), HELLO)
    assert len(scripted_server.requests) == FAST_RETRY.max_retries + 1
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("500 ")


def test_disabled_retry_makes_a_single_request(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(server_error_reply(503, repeat=True))
    complete(model_for(scripted_server, NO_RETRY), HELLO)
    assert len(scripted_server.requests) == 1


def test_openai_context_length_error_is_detected_as_overflow(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(openai_context_overflow_reply())
    message = complete(model_for(scripted_server), HELLO)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith("context length exceeded: This model's maximum context length")
    assert is_context_overflow(message, INFO.context_window)
    assert len(scripted_server.requests) == 1  # overflow is not retried


def test_anthropic_prompt_too_long_via_openai_route_is_overflow(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(anthropic_prompt_too_long_reply())
    message = complete(model_for(scripted_server), HELLO)
    assert "prompt is too long: 210000 tokens > 200000 maximum" in message["errorMessage"]
    assert is_context_overflow(message, INFO.context_window)


def test_context_length_code_with_unusual_wording_is_overflow(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(error_reply(400, "Input too large", code="context_length_exceeded"))
    message = complete(model_for(scripted_server), HELLO)
    assert message["errorMessage"] == "context length exceeded: Input too large (context_length_exceeded)"
    assert is_context_overflow(message)


def test_anthropic_request_too_large_413_is_overflow(scripted_server: ScriptedServer) -> None:
    body = {
        "type": "error",
        "error": {"type": "request_too_large", "message": "Request exceeds the maximum size"},
    }
    scripted_server.enqueue(Reply(status=413, error_body=body))
    message = complete(model_for(scripted_server), HELLO)
    assert message["errorMessage"] == "413 Request exceeds the maximum size (request_too_large)"
    assert is_context_overflow(message)
    assert len(scripted_server.requests) == 1


def test_empty_400_body_reads_like_the_sdk_and_counts_as_overflow(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(status=400, raw_error_body=""))
    message = complete(model_for(scripted_server), HELLO)
    assert message["errorMessage"] == "400 status code (no body)"
    assert is_context_overflow(message)  # Cerebras reports overflow this way


def test_client_error_is_reported_with_status_and_not_retried(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(error_reply(401, "Incorrect API key provided", repeat=True))
    message = complete(model_for(scripted_server), HELLO)
    assert message["errorMessage"] == "401 Incorrect API key provided"
    assert len(scripted_server.requests) == 1


def test_connection_refused_names_the_endpoint() -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    model = chat_model(_PATH[0], INFO, api_base=base, api_key="test", retry=NO_RETRY)
    message = complete(model, HELLO)
    assert message["stopReason"] == "error"
    assert message["errorMessage"].startswith(f"Connection error: cannot reach {base}")
    assert "Connection refused" in message["errorMessage"]


def test_cancel_while_server_delays_first_byte_aborts_quickly(scripted_server: ScriptedServer) -> None:
    preload_litellm()  # the timing below must not include litellm's import
    scripted_server.enqueue(Reply(text="too late", delay_s=5))
    cancel = CancelToken()
    threading.Timer(0.2, cancel.cancel).start()
    started = time.monotonic()
    message = complete(model_for(scripted_server), HELLO, cancel)
    assert time.monotonic() - started < 1.0
    assert (message["stopReason"], message["errorMessage"]) == ("aborted", "Request was aborted")


def test_cancel_mid_stream_keeps_partial_text(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="abcdefghi", chunk_delay_s=0.4))
    cancel = CancelToken()
    events: list[StreamEvent] = []
    cancelled_at = 0.0
    for event in model_for(scripted_server).stream(HELLO, cancel):
        events.append(event)
        if isinstance(event, TextDelta) and not cancel.cancelled:
            cancel.cancel()
            cancelled_at = time.monotonic()
    assert time.monotonic() - cancelled_at < 0.3  # not waiting for the next chunk (0.4 s away)
    message = final(events)
    assert message["stopReason"] == "aborted"
    assert message["content"] == [{"type": "text", "text": "abc"}]


def test_cancel_during_retry_backoff_aborts_quickly(scripted_server: ScriptedServer) -> None:
    preload_litellm()  # the timing below must not include litellm's import
    scripted_server.enqueue(server_error_reply(500, repeat=True))
    slow = RetrySettings(enabled=True, max_retries=3, base_delay_ms=10000, max_delay_ms=60000)
    cancel = CancelToken()
    threading.Timer(0.3, cancel.cancel).start()
    started = time.monotonic()
    message = complete(model_for(scripted_server, slow), HELLO, cancel)
    assert time.monotonic() - started < 1.5
    assert message["stopReason"] == "aborted"
    assert len(scripted_server.requests) == 1


@pytest.mark.litellm_only
def test_missing_api_key_raises_auth_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model = LiteLLMModel(ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200000, 64000))
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        model.stream(HELLO)


def test_api_base_without_key_sends_a_placeholder_key(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scripted_server.enqueue(Reply(text="local"))
    message = complete(model_for(scripted_server, api_key=None), HELLO)
    assert message["content"] == [{"type": "text", "text": "local"}]
    assert scripted_server.request_headers[0]["authorization"] == "Bearer no-key"


def test_key_from_the_environment_is_used_when_none_is_given(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    complete(model_for(scripted_server, api_key=None), HELLO)
    assert scripted_server.request_headers[0]["authorization"] == "Bearer sk-from-env"

"""Request timeouts and unreadable answers, against misbehaving scripted servers (both model adapters).

Timeouts are about a second here so the tests stay fast; what is asserted is the outcome (error text,
retries, kept content), never how long anything took. litellm is warmed up first: its very first
streamed call in a process spends a good part of a second setting itself up, which would otherwise
count against the timeout under test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from model_paths import chat_model
from scripted_server import Reply, ScriptedServer

from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    ModelInfo,
    Retrying,
    StreamEvent,
    TextDelta,
    complete,
)
from pi_compact.settings import RetrySettings

INFO = ModelInfo("openai/scripted", "openai", 128000, None)
HELLO = ChatRequest(system="s", messages=[{"role": "user", "content": "hi", "timestamp": 1}])
# One retry, 1 s for the reply to start and 1 s of allowed silence once it streams.
QUICK = RetrySettings(enabled=True, max_retries=1, base_delay_ms=1, max_delay_ms=5, timeout_ms=1000,
                      idle_timeout_ms=1000)


@pytest.fixture(scope="module", autouse=True)
def _warm_litellm() -> Iterator[None]:
    server = ScriptedServer().start()
    try:
        server.enqueue(Reply(text="warm"))
        complete(LiteLLMModel(INFO, api_base=server.base_url, api_key="test"), HELLO)
        yield
    finally:
        server.stop()


_PATH = ["litellm"]  # the adapter the current test uses (set by ``_each_path``)


@pytest.fixture(autouse=True)
def _each_path(model_path: str) -> None:
    _PATH[0] = model_path


def model_for(server: ScriptedServer, retry: RetrySettings = QUICK, info: ModelInfo = INFO) -> ChatModel:
    return chat_model(_PATH[0], info, api_base=server.base_url, api_key="test", retry=retry)


def events_of(model: ChatModel) -> list[StreamEvent]:
    return list(model.stream(HELLO))


def final(events: list[StreamEvent]) -> dict[str, Any]:
    assert isinstance(events[-1], Done)
    return events[-1].message


def test_server_that_never_answers_times_out_and_is_retried(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(hang=True, repeat=True))
    events = events_of(model_for(scripted_server))
    message = final(events)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == (
        f"Request to {scripted_server.base_url} timed out: no reply within 1 s "
        "(raise retry.provider.timeoutMs for a slow server)"
    )
    assert [e.attempt for e in events if isinstance(e, Retrying)] == [1]
    assert len(scripted_server.requests) == 2  # the first try and the one retry QUICK allows


def test_server_that_never_answers_then_answers_succeeds_on_the_retry(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(hang=True), Reply(text="here now"))
    message = complete(model_for(scripted_server), HELLO)
    assert message["content"] == [{"type": "text", "text": "here now"}]


def test_keepalive_drip_without_content_times_out(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(drip_s=0.05, repeat=True))
    message = complete(model_for(scripted_server), HELLO)
    assert message["stopReason"] == "error"
    assert "timed out: no reply within 1 s" in message["errorMessage"]
    assert len(scripted_server.requests) == 2


def test_keepalive_drip_after_text_reports_a_stall_and_keeps_the_text(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="partial answer", drip_s=0.05))
    events = events_of(model_for(scripted_server))
    message = final(events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "partial answer"
    assert message["stopReason"] == "error"
    assert message["content"] == [{"type": "text", "text": "partial answer"}]
    assert message["errorMessage"].endswith(
        "timed out: the reply stalled: nothing new for 1 s (retry.provider.idleTimeoutMs)"
    )
    assert len(scripted_server.requests) == 1  # text was streamed: a retry would repeat it


def test_steady_stream_longer_than_the_idle_timeout_is_not_cut(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text="abcdefghi", chunk_delay_s=0.6))  # three gaps of 0.6 s: 1.8 s in all
    retry = RetrySettings(enabled=False, timeout_ms=5000, idle_timeout_ms=1500)
    message = complete(model_for(scripted_server, retry), HELLO)
    assert (message["stopReason"], message["content"]) == ("stop", [{"type": "text", "text": "abcdefghi"}])


def test_garbage_200_body_is_an_error_not_an_empty_answer(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(garbage_body="<html><body>Welcome to nginx!</body></html>", repeat=True))
    message = complete(model_for(scripted_server), HELLO)
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == (
        f"Empty reply from {scripted_server.base_url}: no text and no tool call (the answer was empty or not an "
        "OpenAI-compatible stream)."
    )
    assert len(scripted_server.requests) == 2  # retried like a 5xx


def test_empty_reply_is_retried_then_the_answer_is_used(scripted_server: ScriptedServer) -> None:
    scripted_server.enqueue(Reply(text=""), Reply(text="second try"))
    message = complete(model_for(scripted_server), HELLO)
    assert message["content"] == [{"type": "text", "text": "second try"}]
    assert len(scripted_server.requests) == 2


def test_empty_reply_past_the_window_stays_a_silent_overflow(scripted_server: ScriptedServer) -> None:
    small = ModelInfo("openai/scripted", "openai", 1000, None)
    scripted_server.enqueue(Reply(text="", prompt_tokens=1500))
    message = complete(model_for(scripted_server, info=small), HELLO)
    assert message["stopReason"] == "stop"  # left for overflow recovery to see, not turned into an error
    assert len(scripted_server.requests) == 1


@pytest.mark.litellm_only
def test_timeouts_are_passed_to_litellm_as_a_backstop(scripted_server: ScriptedServer) -> None:
    retry = RetrySettings(timeout_ms=30_000, idle_timeout_ms=90_000)
    model = LiteLLMModel(INFO, api_base=scripted_server.base_url, api_key="test", retry=retry)
    kwargs = model._completion_kwargs(HELLO, "test")
    assert kwargs["timeout"] == 91.0


@pytest.mark.litellm_only  # runs once: it is about the direct client, whatever the parameter says
def test_direct_client_socket_gets_the_same_backstop(scripted_server: ScriptedServer) -> None:
    retry = RetrySettings(timeout_ms=30_000, idle_timeout_ms=90_000)
    model = OpenAICompatModel(INFO, api_base=scripted_server.base_url, api_key="test", retry=retry)
    assert model._timeout_s() == 91.0

"""The Responses adapter's ``compact``: ``POST /responses/compact`` with the chat request's input, the window it
returns (user messages and one compaction item) and its usage, the window sent back in place of the compacted
messages to the same model and key only, and refusals raised as ``FailureRaised`` (against the validating fake)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fakes.responses_reply import error_reply, text_reply
from fakes.responses_server import FakeResponsesServer

from pi_compact.llm.failures import FailureRaised
from pi_compact.llm.openai.compact import CompactedWindow
from pi_compact.llm.openai.responses import ResponsesModel
from pi_compact.llm.protocol import ChatRequest, ModelInfo, complete
from pi_compact.llm.server_compaction import CompactionEdit, account_of, window_carrier
from pi_compact.messages import compaction_summary_message

INFO = ModelInfo("openai/gpt-5.1", "openai", 400_000, 128_000, reasoning=True)


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    fake = FakeResponsesServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def model_for(server: FakeResponsesServer, key: str = "sk-fake", info: ModelInfo = INFO) -> ResponsesModel:
    return ResponsesModel(info, api_base=server.base_url, api_key=key)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 0}


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "api": "openai-responses",
            "provider": "openai", "model": "gpt-5.1", "stopReason": "stop", "timestamp": 0}


HISTORY = [user("write the parser"), answer("parser.py is written"), user("and the lexer")]


def compacted(window: CompactedWindow) -> dict[str, Any]:
    message = compaction_summary_message("Parser written; lexer asked for.", 50_000, 0)
    message["providerCompaction"] = window_carrier("openai", "openai-responses", window.model, window.account,
                                                   window.items)
    return message


def test_compact_posts_the_chat_input_and_returns_the_window(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("Parser written; lexer asked for."))
    window = model_for(server).compact(ChatRequest("Be brief.", HISTORY, session_id="s1"))
    record = server.records[-1]
    assert record.path == "/v1/responses/compact" and server.rejections == []
    assert record.body["model"] == "gpt-5.1" and record.body["prompt_cache_key"] == "s1"
    assert [item.get("role", item.get("type")) for item in record.body["input"]] == [
        "developer", "user", "assistant", "user"]
    assert [item["type"] for item in window.items] == ["message", "message", "compaction"]
    assert (window.model, window.account) == ("gpt-5.1", account_of("sk-fake"))
    assert window.usage["output"] == 8 and window.usage["input"] > 0 and window.usage["cost"]["total"] > 0


def test_compact_sends_the_edit_instructions(server: FakeResponsesServer) -> None:
    request = ChatRequest("sys", HISTORY, compaction=CompactionEdit(50_000, instructions="Keep file paths."))
    model_for(server).compact(request)
    assert server.requests[-1]["instructions"] == "Keep file paths."


def test_the_window_goes_back_in_place_of_the_summary_to_the_same_model_and_key(server: FakeResponsesServer) -> None:
    model = model_for(server)
    window = model.compact(ChatRequest("sys", HISTORY))
    server.enqueue(text_reply("lexer.py is written"))
    reply = complete(model, ChatRequest("sys", [compacted(window), user("now the tests")]))
    sent = server.requests[-1]["input"]
    assert reply["stopReason"] == "stop" and server.rejections == []
    assert sent[1:4] == list(window.items) and sent[-1]["role"] == "user"


def test_another_key_gets_the_readable_summary(server: FakeResponsesServer) -> None:
    window = model_for(server).compact(ChatRequest("sys", HISTORY))
    server.enqueue(text_reply("ok"))
    reply = complete(model_for(server, key="sk-other"), ChatRequest("sys", [compacted(window), user("go on")]))
    sent = server.requests[-1]["input"]
    assert reply["stopReason"] == "stop" and all(item.get("type") != "compaction" for item in sent)
    assert "Parser written; lexer asked for." in sent[1]["content"][0]["text"]


def test_another_model_gets_the_readable_summary(server: FakeResponsesServer) -> None:
    window = model_for(server).compact(ChatRequest("sys", HISTORY))
    other = replace(INFO, model="openai/gpt-5.2")
    server.enqueue(text_reply("ok"))
    complete(model_for(server, info=other), ChatRequest("sys", [compacted(window), user("go on")]))
    assert server.rejections == [] and all(item.get("type") != "compaction" for item in server.requests[-1]["input"])


def test_a_refused_compaction_raises_the_providers_words(server: FakeResponsesServer) -> None:
    server.enqueue(error_reply(400, "Compaction is not available for this model.", "unsupported_model"))
    with pytest.raises(FailureRaised) as raised:
        model_for(server).compact(ChatRequest("sys", HISTORY))
    assert raised.value.failure.kind == "bad_request"
    assert "Compaction is not available for this model." in raised.value.failure.message


def test_a_server_error_raises_a_server_failure(server: FakeResponsesServer) -> None:
    server.enqueue(error_reply(500, "The server had an error while processing your request."))
    with pytest.raises(FailureRaised) as raised:
        model_for(server).compact(ChatRequest("sys", HISTORY))
    assert raised.value.failure.kind == "server"


def test_an_unreachable_server_raises_a_connection_failure() -> None:
    model = ResponsesModel(INFO, api_base="http://127.0.0.1:9/v1", api_key="sk-fake")
    with pytest.raises(FailureRaised) as raised:
        model.compact(ChatRequest("sys", HISTORY))
    assert raised.value.failure.kind == "connection"

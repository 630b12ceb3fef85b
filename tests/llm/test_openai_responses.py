"""OpenAI's own models go through the Responses API as pi drives them: store false, encrypted reasoning kept
in the session as pi records it and sent back, the developer role for reasoning models, efforts the model
takes. Every request goes to the validating fake server (``fakes/responses_server.py``)."""

from __future__ import annotations

import json

import pytest
from fakes.responses_reply import Message, ResponsesReply, call_reply, error_reply, text_reply
from fakes.responses_server import FakeResponsesServer, openai_server  # noqa: F401 (the ``server`` fixture)
from responses_harness import ask, calls_of, openai_model, openai_settings, tool_result, user

from pi_compact.errors import AuthError
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.openai.responses import ResponsesModel
from pi_compact.llm.overflow import is_context_overflow
from pi_compact.llm.protocol import ChatRequest, ModelInfo
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.llm.thinking import clamp_level, supported_levels
from pi_compact.providers import responses_url
from pi_compact.settings import Settings
from pi_compact.settings.pi_models import parse_pi_models


def test_an_openai_model_without_a_base_url_goes_to_openais_responses_endpoint() -> None:
    model = create_model(resolve_model("openai/o4-mini", settings=Settings()), settings=Settings())
    assert isinstance(model, ResponsesModel)
    assert (model.endpoint, model.info.api) == ("https://api.openai.com/v1", "openai-responses")


def test_a_base_url_of_the_users_own_server_keeps_chat_completions() -> None:
    info = ModelInfo("openai/qwen3-coder", "openai", 8000, None)
    model = create_model(info, api_base="http://127.0.0.1:8080/v1", settings=Settings())
    assert isinstance(model, OpenAICompatModel) and not isinstance(model, ResponsesModel)
    assert model.info.api == "openai-completions"


def test_the_model_path_variable_keeps_openais_models_on_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_COMPACT_MODEL_PATH", "litellm")
    assert isinstance(create_model(resolve_model("openai/o3", settings=Settings()), settings=Settings()),
                      LiteLLMModel)


def test_a_models_json_model_of_the_responses_api_is_served_by_it(server: FakeResponsesServer) -> None:
    tree = {"providers": {"lab": {"baseUrl": server.base_url, "api": "openai-responses", "apiKey": "sk-lab",
                                  "models": [{"id": "o4-mini", "reasoning": True, "contextWindow": 200000,
                                              "maxTokens": 100000}]}}}
    pi_models, _ = parse_pi_models(json.dumps(tree), "models.json")
    settings = Settings(pi_models=pi_models)
    model = create_model(resolve_model("lab/o4-mini", settings=settings), settings=settings)
    server.enqueue(text_reply("ok", reasoning="Fine."))
    reply = ask(model, [user("hi")])
    assert reply["stopReason"] == "stop" and server.rejections == []
    assert server.records[0].headers["authorization"] == "Bearer sk-lab"


def test_a_request_keeps_nothing_on_the_server_and_asks_for_encrypted_reasoning(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("ok", reasoning="Fine."))
    ask(openai_model(server, "openai/o4-mini"), [user("hi")], thinking="high")
    body = server.requests[0]
    assert (body["store"], body["stream"], body["include"]) == (False, True, ["reasoning.encrypted_content"])
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["prompt_cache_key"] == "session-1" and body["max_output_tokens"] > 0
    assert server.records[0].headers["session_id"] == "session-1"


def test_reasoning_and_ids_are_recorded_as_pi_records_them(server: FakeResponsesServer) -> None:
    server.enqueue(call_reply("read", {"path": "a.py"}, reasoning="Read it first.", text="Reading."))
    reply = ask(openai_model(server, "openai/o4-mini"), [user("read a.py")])
    output = server.records[0].output
    assert output is not None
    thinking, text, call = reply["content"]
    assert thinking == {"type": "thinking", "thinking": "Read it first.",
                        "thinkingSignature": json.dumps(output[0], separators=(",", ":"))}
    assert text == {"type": "text", "text": "Reading.",
                    "textSignature": json.dumps({"v": 1, "id": output[1]["id"]}, separators=(",", ":"))}
    assert call["id"] == f"{output[2]['call_id']}|{output[2]['id']}" and len(call["id"]) == 81
    assert (call["arguments"], reply["stopReason"], reply["api"]) == ({"path": "a.py"}, "toolUse", "openai-responses")


def test_reasoning_goes_back_unchanged_with_the_call_it_preceded(server: FakeResponsesServer) -> None:
    model = openai_model(server, "openai/o4-mini")
    server.enqueue(call_reply("read", {"path": "a.py"}, reasoning="Read it first."), text_reply("It says x."))
    first = ask(model, [user("read a.py")])
    second = ask(model, [user("read a.py"), first, tool_result(calls_of(first)[0], "x")])
    assert second["stopReason"] == "stop" and server.rejections == []
    sent = server.requests[1]["input"]
    output = server.records[0].output
    assert output is not None
    assert sent[2] == output[0]  # the reasoning item, encrypted content included, byte for byte
    assert sent[3] == {"type": "function_call", "id": output[1]["id"], "call_id": output[1]["call_id"],
                       "name": "read", "arguments": '{"path":"a.py"}'}
    assert sent[4] == {"type": "function_call_output", "call_id": output[1]["call_id"], "output": "x"}


@pytest.mark.parametrize("name", ["openai/o3-mini", "openai/o3", "openai/o4-mini", "openai/gpt-5"])
def test_reasoning_models_get_the_system_prompt_as_developer(server: FakeResponsesServer, name: str) -> None:
    server.enqueue(text_reply("ok"))
    ask(openai_model(server, name), [user("hi")])
    assert server.requests[0]["input"][0] == {"role": "developer", "content": "You are terse."}
    assert server.rejections == []


def test_a_chat_model_keeps_the_system_role_and_sends_no_reasoning(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("ok"))
    ask(openai_model(server, "openai/gpt-4o"), [user("hi")])
    body = server.requests[0]
    assert body["input"][0]["role"] == "system" and "reasoning" not in body and "include" not in body
    assert server.rejections == []


@pytest.mark.parametrize("name", ["openai/o3-mini", "openai/o3", "openai/o4-mini", "openai/gpt-5.1"])
def test_models_that_refuse_minimal_are_not_offered_it(name: str) -> None:
    info = resolve_model(name, settings=Settings())
    assert "minimal" not in supported_levels(info)
    assert clamp_level(info, "minimal").level == "low"


@pytest.mark.parametrize("name", ["openai/o4-mini", "openai/gpt-5.1"])
def test_minimal_asked_of_a_model_that_refuses_it_is_sent_as_low(server: FakeResponsesServer, name: str) -> None:
    server.enqueue(text_reply("ok"))
    ask(openai_model(server, name), [user("hi")], thinking="minimal")
    assert server.requests[0]["reasoning"]["effort"] == "low" and server.rejections == []


@pytest.mark.parametrize(("name", "least"), [("openai/o4-mini", "low"), ("openai/o3", "low"),
                                             ("openai/gpt-5", "minimal"), ("openai/gpt-5.1", "low")])
def test_thinking_off_on_a_model_that_always_reasons_sends_its_least_effort_not_the_apis_default(
        server: FakeResponsesServer, name: str, least: str) -> None:
    # Without a "reasoning" field the API reasons at its default, medium: "off" would cost more than "low".
    assert "off" not in supported_levels(resolve_model(name, settings=Settings()))
    server.enqueue(text_reply("ok"))
    ask(openai_model(server, name), [user("hi")], thinking="off")
    assert server.requests[0]["reasoning"]["effort"] == least and server.rejections == []


def test_gpt_5_2_takes_xhigh(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("ok"))
    ask(openai_model(server, "openai/gpt-5.2"), [user("hi")], thinking="xhigh")
    assert server.requests[0]["reasoning"]["effort"] == "xhigh" and server.rejections == []


def test_gpt_5_keeps_minimal(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("ok"))
    ask(openai_model(server, "openai/gpt-5"), [user("hi")], thinking="minimal")
    assert server.requests[0]["reasoning"]["effort"] == "minimal" and server.rejections == []


def test_openais_endpoint_without_a_key_is_refused_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = create_model(resolve_model("openai/o4-mini", settings=Settings()), settings=Settings())
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        model.stream(ChatRequest("s", [user("hi")]))


def test_a_refusal_ends_the_reply_with_the_apis_words(server: FakeResponsesServer) -> None:
    server.enqueue(error_reply(400, "Invalid 'input[3].call_id': string too long.", "string_above_max_length"))
    reply = ask(openai_model(server, "openai/o4-mini"), [user("hi")])
    assert reply["stopReason"] == "error" and "Invalid 'input[3].call_id': string too long." in reply["errorMessage"]


def test_cached_input_is_counted_as_cache_reads(server: FakeResponsesServer) -> None:
    model = openai_model(server, "openai/gpt-4o")
    long_prompt = user("x" * 8000)
    server.enqueue(text_reply("a"), text_reply("b"))
    first = ask(model, [long_prompt])
    second = ask(model, [long_prompt, first, user("more", 3)])
    usage = server.records[1].usage
    assert usage is not None
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert cached > 0 and second["usage"]["cacheRead"] == cached
    assert second["usage"]["input"] == usage["input_tokens"] - cached


def test_settings_move_provider_openai_to_the_models_json_base_url(server: FakeResponsesServer) -> None:
    settings = openai_settings(server)
    model = create_model(resolve_model("openai/o3", settings=settings), settings=settings)
    assert isinstance(model, ResponsesModel) and model.endpoint == server.base_url


def test_an_overflow_refusal_is_recognised_as_an_overflow(server: FakeResponsesServer) -> None:
    server.enqueue(error_reply(400, "Your input exceeds the context window of this model. Please adjust your input "
                                    "and try again.", "context_length_exceeded"))
    model = openai_model(server, "openai/o4-mini")
    reply = ask(model, [user("hi")])
    assert reply["stopReason"] == "error" and is_context_overflow(reply, model.info.context_window)


def test_a_failed_response_keeps_what_streamed_and_says_why(server: FakeResponsesServer) -> None:
    server.enqueue(ResponsesReply((Message("Partial answer"),), failure=("server_error", "The model crashed.")))
    reply = ask(openai_model(server, "openai/gpt-4o"), [user("hi")])
    assert reply["stopReason"] == "error" and "server_error: The model crashed." in reply["errorMessage"]
    assert reply["content"][0]["text"] == "Partial answer"


def test_a_reply_cut_at_max_output_tokens_stops_for_length(server: FakeResponsesServer) -> None:
    server.enqueue(ResponsesReply((Message("cut"),), incomplete=True))
    assert ask(openai_model(server, "openai/gpt-4o"), [user("hi")])["stopReason"] == "length"


def test_the_provider_table_says_where_responses_requests_go() -> None:
    assert responses_url("openai", None) == "https://api.openai.com/v1"
    assert responses_url("openai", "https://api.openai.com/v1") == "https://api.openai.com/v1"
    assert responses_url("openai", "http://127.0.0.1:8080/v1") is None  # the user's own server: chat completions
    assert responses_url("anthropic", None) is None and responses_url("deepseek", None) is None

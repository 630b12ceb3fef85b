"""OpenAI-compatible requests on both adapters (litellm, the direct client) against the scripted server: the
output cap fits the window, a thinking level is ``reasoning_effort``, no ``prompt_cache_key`` off OpenAI's own
endpoint, no Anthropic-only fields, and replies name the ``openai-completions`` api (issue 21)."""

from __future__ import annotations

from model_paths import chat_model
from scripted_server import Reply, ScriptedServer

from pi_compact.llm.protocol import ChatRequest, ModelInfo, complete

INFO = ModelInfo("openai/served-model", "openai", 32_768, 8192, reasoning=True)


def test_the_cap_effort_and_no_foreign_fields_on_both_paths(scripted_server: ScriptedServer, model_path: str) -> None:
    scripted_server.enqueue(Reply(text="hi"), Reply(text="hi"))
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url)
    hello = [{"role": "user", "content": "hi", "timestamp": 0}]
    reply = complete(model, ChatRequest("s", hello, thinking="high", session_id="sess-1"))
    body = scripted_server.requests[0]
    assert body["max_tokens"] == 8192 and body["reasoning_effort"] == "high"
    assert "prompt_cache_key" not in body and "thinking" not in body
    assert "cache_control" not in str(body)  # breakpoints are Anthropic's
    assert reply["api"] == "openai-completions"
    big = [{"role": "user", "content": "x" * (28_000 * 4), "timestamp": 0}]
    complete(model, ChatRequest("s", big))
    assert scripted_server.requests[1]["max_tokens"] == 32_768 - 28_001 - 655  # what the window leaves


REFUSAL = ("This model's maximum context length is 32768 tokens. However, you requested 38192 tokens (30000 in the "
           "messages, 8192 in the completion). Please reduce the length of the messages or completion.")


def test_a_prompt_plus_completion_refusal_is_refitted_on_both_paths(
    scripted_server: ScriptedServer, model_path: str
) -> None:
    error = {"error": {"message": REFUSAL, "type": "invalid_request_error", "code": "context_length_exceeded"}}
    scripted_server.enqueue(Reply(status=400, error_body=error), Reply(text="fits"))
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url)
    reply = complete(model, ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 0}]))
    assert reply["stopReason"] == "stop" and reply["content"] == [{"type": "text", "text": "fits"}]
    assert [body["max_tokens"] for body in scripted_server.requests] == [8192, 32_768 - 30_000 - 256]


def test_a_refusal_of_the_callers_own_cap_is_reported(scripted_server: ScriptedServer, model_path: str) -> None:
    error = {"error": {"message": REFUSAL, "type": "invalid_request_error", "code": "context_length_exceeded"}}
    scripted_server.enqueue(Reply(status=400, error_body=error))
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url)
    reply = complete(model, ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 0}], max_tokens=10_000))
    assert reply["stopReason"] == "error" and len(scripted_server.requests) == 1


def test_a_refusal_that_names_another_cap_is_an_overflow(scripted_server: ScriptedServer, model_path: str) -> None:
    other = REFUSAL.replace("38192", "40000").replace("8192 in the completion", "10000 in the completion")
    error = {"error": {"message": other, "code": "context_length_exceeded"}}
    scripted_server.enqueue(Reply(status=400, error_body=error))
    model = chat_model(model_path, INFO, api_base=scripted_server.base_url)
    reply = complete(model, ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 0}]))
    assert reply["stopReason"] == "error" and len(scripted_server.requests) == 1  # not about what we sent

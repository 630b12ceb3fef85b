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

"""The product's model layer against the fake Gemini server through litellm's real HTTP path: thought
signatures kept byte for byte on the toolCall (``thoughtSignature``, as pi stores them) with a clean id, each
request of a tool loop sent once, ``generationConfig`` with pi's output cap and thinking budget (issue 21)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.gemini_reply import FunctionCall, GeminiReply, call_reply, text_reply
from fakes.gemini_server import FakeGeminiServer, signatures_in

from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.protocol import ChatRequest, ModelInfo, ToolSpec, complete

INFO = ModelInfo("gemini/gemini-2.5-pro", "google", 1_048_576, 65_536, reasoning=True)
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    fake = FakeGeminiServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def model_for(server: FakeGeminiServer) -> LiteLLMModel:
    return LiteLLMModel(INFO, api_base=server.base_url, api_key="g-fake")


def run_loop(model: LiteLLMModel, **request: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the files.", "timestamp": 0}]
    for _ in range(20):
        reply = complete(model, ChatRequest("You are terse.", messages, [READ], **request))
        messages.append(reply)
        if reply["stopReason"] != "toolUse":
            break
        for block in reply["content"]:
            if block["type"] == "toolCall":
                messages.append({"role": "toolResult", "toolCallId": block["id"], "toolName": block["name"],
                                 "content": [{"type": "text", "text": "print(1)"}], "isError": False,
                                 "timestamp": 0})  # fmt: skip
    return messages


def test_a_ten_call_tool_loop_sends_no_request_twice(server: FakeGeminiServer) -> None:
    server.enqueue(*(call_reply("read", {"path": f"f{i}.py"}, thought=f"Look at f{i}.") for i in range(10)),
                   text_reply("Done."))  # fmt: skip
    messages = run_loop(model_for(server), thinking="medium")
    assert server.rejections == [] and server.max_sends == 1 and len(server.records) == 11
    assert messages[-1]["content"] == [{"type": "text", "text": "Done."}]
    issued = list(server.issued_signatures.values())
    replies = [m for m in messages if m["role"] == "assistant"]
    calls = [block for m in replies for block in m["content"] if block["type"] == "toolCall"]
    assert [call["thoughtSignature"] for call in calls] == issued  # byte for byte, on the block as pi keeps it
    assert all("__thought__" not in call["id"] and len(call["id"]) < 64 for call in calls)
    assert signatures_in(server.requests[-1]) == issued
    assert messages[1]["api"] == "google-generative-ai" and messages[1]["provider"] == "google"


def test_generation_config_carries_the_cap_and_pis_budget(server: FakeGeminiServer) -> None:
    server.enqueue(text_reply("hi"))
    hello = [{"role": "user", "content": "hi", "timestamp": 0}]
    complete(model_for(server), ChatRequest("s", hello, thinking="medium"))
    config = server.requests[0]["generationConfig"]
    assert config["max_output_tokens"] == 32_000 + 8192
    assert config["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}


def test_parallel_calls_keep_the_one_signature_on_the_first(server: FakeGeminiServer) -> None:
    server.enqueue(GeminiReply(parts=(FunctionCall("read", {"path": "a"}), FunctionCall("read", {"path": "b"}))),
                   text_reply("ok"))  # fmt: skip
    messages = run_loop(model_for(server))
    first, second = (b for b in messages[1]["content"] if b["type"] == "toolCall")
    assert first["thoughtSignature"] == next(iter(server.issued_signatures.values()))
    assert "thoughtSignature" not in second
    assert server.rejections == [] and server.max_sends == 1


def test_minimal_is_pis_smallest_budget(server: FakeGeminiServer) -> None:
    server.enqueue(text_reply("hi"))
    reply = complete(model_for(server), ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 0}],
                                                    thinking="minimal"))  # fmt: skip
    assert reply["stopReason"] == "stop" and server.rejections == []
    assert server.requests[0]["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 128


def test_off_on_a_model_that_always_thinks_sends_no_refused_budget(server: FakeGeminiServer) -> None:
    server.enqueue(text_reply("hi"))
    reply = complete(model_for(server), ChatRequest("s", [{"role": "user", "content": "hi", "timestamp": 0}],
                                                    thinking="off"))  # fmt: skip
    assert reply["stopReason"] == "stop" and server.rejections == []
    assert "thinkingConfig" not in server.requests[0]["generationConfig"]

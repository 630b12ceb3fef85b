"""The direct OpenAI-compatible client answers exactly as the litellm path does (differential tests).

Each scenario is a list of scripted server answers. It runs once through ``LiteLLMModel`` and once
through ``OpenAICompatModel`` against the same scripted server; the two must yield the same events,
the same final message (timestamps aside), the same number of requests and the same request bodies.
The corpus covers odd but real server behaviour: error bodies of many shapes and statuses, errors
and aborts inside a 200 stream, unknown finish reasons, missing usage, ``reasoning`` deltas...
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

import pytest
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

from pi_compact.llm.litellm_model import LiteLLMModel, estimate_stream_usage
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.llm.protocol import ChatModel, ChatRequest, Done, ModelInfo, StreamEvent, ToolCallDelta, ToolSpec
from pi_compact.settings import RetrySettings

_TIMESTAMP_ID = re.compile(r"call_\d+_")  # the id the assembler gives a call the server sent without one
INFO = ModelInfo("openai/scripted", "openai", 128000, None)
RETRY = RetrySettings(enabled=True, max_retries=1, base_delay_ms=1, max_delay_ms=2, timeout_ms=5000,
                      idle_timeout_ms=5000)
HELLO = ChatRequest(system="You are terse.", messages=[{"role": "user", "content": "hi there", "timestamp": 1}])
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
RICH = ChatRequest(
    system="sys",
    messages=[
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image", "data": "QUJD", "mimeType": "image/png"}], "timestamp": 1},
        {"role": "assistant", "stopReason": "toolUse", "timestamp": 2,
         "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"},
                     {"type": "toolCall", "id": "c|1", "name": "read", "arguments": {"path": "a"}}]},
        {"role": "toolResult", "toolCallId": "c|1", "toolName": "read", "isError": False, "timestamp": 3,
         "content": [{"type": "text", "text": "x"}, {"type": "image", "data": "REVG", "mimeType": "image/jpeg"}]},
        {"role": "assistant", "stopReason": "toolUse", "timestamp": 4,
         "content": [{"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "b"}}]},
        {"role": "toolResult", "toolCallId": "c2", "toolName": "read", "isError": True, "timestamp": 5,
         "content": [{"type": "text", "text": "no such file"}]},
        {"role": "user", "content": "next ünïcode ☃", "timestamp": 6},
    ],
    tools=[READ],
    max_tokens=77,
    reasoning="low",
)


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return json.dumps(body)


def usage_chunk(**usage: Any) -> str:
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
                       "choices": [], "usage": usage})


@dataclass(frozen=True)
class Scenario:
    replies: tuple[Reply, ...]
    request: ChatRequest = HELLO
    retry: RetrySettings = RETRY
    # Error texts are compared up to this marker only (what follows is a Python repr on the litellm path).
    cut_error_at: str | None = None


def raw(*events: str, done: bool = True) -> Reply:
    return Reply(raw_events=events, raw_done=done)


SCENARIOS: dict[str, Scenario] = {
    # Answers
    "text": Scenario((Reply(text="Hello there, friend", prompt_tokens=12, completion_tokens=4),)),
    "thinking_and_text": Scenario((Reply(thinking="Consider it.", text="Done.", cached_tokens=3),)),
    "tool_calls": Scenario((Reply(text="Let me look.", tool_calls=(
        ToolCallReply("read", {"path": "a.py"}, id="call_a"), ToolCallReply("ls", {}))),)),
    "rich_request": Scenario((Reply(text="fine"),), request=RICH),
    "no_system_prompt": Scenario((Reply(text="x"),), request=ChatRequest("", HELLO.messages)),
    "reasoning_field": Scenario((raw(chunk({"role": "assistant", "reasoning": "think"}), chunk({"content": "hi"}),
                                     chunk({}, "stop"), usage_chunk(prompt_tokens=5, completion_tokens=2)),)),
    "length_stop": Scenario((Reply(text="cut", finish_reason="length"),)),
    "unknown_finish_reason": Scenario((Reply(text="w", finish_reason="weird"),)),
    "zai_window_finish_reason": Scenario((Reply(text="w", finish_reason="model_context_window_exceeded"),)),
    "content_filter": Scenario((Reply(text="w", finish_reason="content_filter"),)),
    "eos_finish": Scenario((Reply(text="w", finish_reason="eos"),)),
    "tool_calls_finish_without_calls": Scenario((Reply(text="w", finish_reason="tool_calls"),)),
    "stop_with_calls": Scenario((Reply(tool_calls=(ToolCallReply("ls", {}),), finish_reason="stop"),)),
    "call_without_index_or_id": Scenario((raw(
        chunk({"tool_calls": [{"function": {"name": "ls", "arguments": "{\"a\":"}}]}),
        chunk({"tool_calls": [{"function": {"arguments": " 1}"}}]}), chunk({}, "tool_calls"),
        usage_chunk(prompt_tokens=9, completion_tokens=3)),)),
    "usage_in_every_chunk": Scenario((raw(
        chunk({"content": "a"}, usage={"prompt_tokens": 20, "completion_tokens": 1}),
        chunk({"content": "b"}, usage={"prompt_tokens": 20, "completion_tokens": 2}),
        chunk({}, "stop", usage={"prompt_tokens": 20, "completion_tokens": 3})),)),
    "zero_usage_then_real": Scenario((raw(
        chunk({"content": "a"}, usage={"prompt_tokens": 0, "completion_tokens": 0}),
        chunk({}, "stop"), usage_chunk(prompt_tokens=31, completion_tokens=7)),)),
    "anthropic_cache_fields": Scenario((raw(chunk({"content": "a"}), chunk({}, "stop"), usage_chunk(
        prompt_tokens=100, completion_tokens=5, cache_read_input_tokens=40, cache_creation_input_tokens=10)),)),
    "no_usage_text": Scenario((Reply(text="Hello world, a reply", send_usage=False),)),
    "no_usage_tool_call": Scenario((Reply(tool_calls=(ToolCallReply("ls", {"path": "."}, id="a"),),
                                          send_usage=False),)),
    "no_usage_thinking": Scenario((Reply(thinking="Let me think about it", text="ok", send_usage=False),)),
    "no_usage_rich_request": Scenario((Reply(text="ok", send_usage=False),), request=RICH),
    "prompt_tokens_only": Scenario((raw(chunk({"content": "abc def"}), chunk({}, "stop"),
                                        usage_chunk(prompt_tokens=50)),)),
    "empty_choices_chunk": Scenario((raw(json.dumps({"id": "c", "choices": []}), chunk({"content": "x"}),
                                         chunk({}, "stop"), usage_chunk(prompt_tokens=1, completion_tokens=1)),)),
    "null_content_delta": Scenario((raw(chunk({"role": "assistant", "content": None}), chunk({"content": "x"}),
                                        chunk({}, "stop"), usage_chunk(prompt_tokens=1, completion_tokens=1)),)),
    "crlf_and_comments": Scenario((Reply(raw_events=(chunk({"content": "x"}) + "\r\n: ping\r",
                                                     chunk({}, "stop")),),)),
    "chunked_text": Scenario((Reply(text="Hello over chunks", thinking="hm", chunked=True),)),
    "chunked_tool_calls": Scenario((Reply(tool_calls=(ToolCallReply("read", {"path": "x"}),), chunked=True),)),
    "chunked_eof_without_finish": Scenario((Reply(raw_events=(chunk({"content": "hi"}),), chunked=True),)),
    "large_event": Scenario((raw(chunk({"content": "ü" * 300_000}), chunk({}, "stop"),
                                 usage_chunk(prompt_tokens=3, completion_tokens=9)),)),
    "large_event_chunked": Scenario((Reply(raw_events=(chunk({"content": "x" * 200_000}), chunk({}, "stop"),
                                                       usage_chunk(prompt_tokens=3, completion_tokens=9)),
                                           chunked=True),)),
    "usage_then_error_event": Scenario((raw(
        chunk({"content": "a"}, usage={"prompt_tokens": 20, "completion_tokens": 1}),
        json.dumps({"error": {"message": "died"}})),)),
    "empty_reply_then_answer": Scenario((Reply(text=""), Reply(text="second try"))),
    "empty_reply_past_window": Scenario((Reply(text="", prompt_tokens=200_000),)),
    "garbage_body": Scenario((Reply(garbage_body="<html>Welcome to nginx!</html>", repeat=True),)),
    "json_body_not_stream": Scenario((Reply(garbage_body=json.dumps(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "plain"}, "finish_reason": "stop"}]}),
        repeat=True),)),
    "only_done": Scenario((raw(),)),
    # Failures inside a 200 stream
    "error_event_after_text": Scenario((raw(chunk({"content": "hi"}),
                                            json.dumps({"error": {"message": "boom in stream", "code": 503}})),)),
    "error_event_first": Scenario((raw(json.dumps({"error": {"message": "boom", "code": 503}})), Reply(text="ok"))),
    "error_event_string": Scenario((raw(json.dumps({"error": "plain string"})), Reply(text="ok"))),
    "error_event_overflow": Scenario((raw(json.dumps(
        {"error": {"message": "This model's maximum context length is 100 tokens"}})),)),
    "error_event_rate_limit": Scenario((raw(json.dumps({"error": {"message": "Rate limit reached"}})),
                                        Reply(text="ok"))),
    "abort_finish": Scenario((raw(chunk({"content": "hi"}), chunk({}, "abort")),)),
    "abort_first": Scenario((raw(chunk({}, "abort")), Reply(text="ok"))),
    "eof_without_finish": Scenario((raw(chunk({"content": "hi"})),)),
    "eof_without_finish_or_done": Scenario((raw(chunk({"content": "hi"}), done=False),)),
    "eof_before_content": Scenario((raw(chunk({"role": "assistant"})), Reply(text="ok"))),
    "invalid_json_event": Scenario((raw(chunk({"content": "hi"}), "not json"),)),
    "invalid_json_first": Scenario((raw("{oops"), Reply(text="ok"))),
    "repeating_chunks": Scenario((raw(*[chunk({"content": "same"})] * 105, chunk({}, "stop")),)),
    "repeating_short_chunks": Scenario((raw(*[chunk({"content": "ab"})] * 105, chunk({}, "stop"),
                                            usage_chunk(prompt_tokens=3, completion_tokens=105)),)),
    "finish_error": Scenario((raw(chunk({"content": "hi"}), chunk({}, "error"),
                                  usage_chunk(prompt_tokens=1, completion_tokens=1)),),
                             cut_error_at="Received Chunk="),
    # HTTP errors
    "openai_overflow": Scenario((openai_context_overflow_reply(),)),
    "anthropic_prompt_too_long": Scenario((anthropic_prompt_too_long_reply(),)),
    "overflow_code_unusual_text": Scenario((error_reply(400, "Input too large", code="context_length_exceeded"),)),
    "string_above_max_length": Scenario((error_reply(400, "Invalid 'user': string too long",
                                                     code="string_above_max_length"),)),
    "request_too_large_413": Scenario((Reply(status=413, error_body={"type": "error", "error": {
        "type": "request_too_large", "message": "Request exceeds the maximum size"}}),)),
    "empty_400": Scenario((Reply(status=400, raw_error_body=""),)),
    "empty_500": Scenario((Reply(status=500, raw_error_body="", repeat=True),)),
    "text_502": Scenario((Reply(status=502, raw_error_body="Bad Gateway", repeat=True),)),
    "html_500": Scenario((Reply(status=500, raw_error_body="<html><body>oops</body></html>", repeat=True),)),
    "unauthorized": Scenario((error_reply(401, "Incorrect API key provided", repeat=True),)),
    "forbidden": Scenario((error_reply(403, "You are not allowed", repeat=True),)),
    "not_found": Scenario((error_reply(404, "The model `x` does not exist", code="model_not_found"),)),
    "not_found_text": Scenario((Reply(status=404, raw_error_body="404 page not found"),)),
    "timeout_408": Scenario((error_reply(408, "Request timed out"), Reply(text="ok"))),
    "gateway_timeout_504": Scenario((Reply(status=504, raw_error_body=""), Reply(text="ok"))),
    "unprocessable_422": Scenario((Reply(status=422, error_body={"detail": [
        {"loc": ["body", "messages"], "msg": "field required", "type": "value_error.missing"}]}),)),
    "unprocessable_422_names_reasoning": Scenario((Reply(status=422, error_body={"error": {"message": json.dumps(
        {"detail": [{"loc": ["body", "reasoning_effort"], "msg": "extra fields not permitted"}]})}}),
        Reply(text="without it")), request=replace(HELLO, reasoning="high")),
    "rate_limit_then_answer": Scenario((rate_limit_reply(), Reply(text="finally"))),
    "rate_limit_forever": Scenario((rate_limit_reply(repeat=True),)),
    "rate_limit_in_400": Scenario((error_reply(400, "rate limit exceeded for this key"),)),
    "bare_429_in_400": Scenario((error_reply(400, "token 429 is not allowed"),)),
    "quota_429": Scenario((error_reply(429, "You exceeded your current quota", repeat=True),)),
    "server_error_forever": Scenario((server_error_reply(500, repeat=True),)),
    "service_unavailable": Scenario((server_error_reply(503), Reply(text="ok"))),
    "overloaded_529": Scenario((Reply(status=529, error_body={"type": "error", "error": {
        "type": "overloaded_error", "message": "Overloaded"}}), Reply(text="ok"))),
    "request_too_large_text": Scenario((error_reply(400, "Request too large for gpt-4o"),)),
    "content_policy": Scenario((error_reply(400, "Invalid prompt: your prompt was flagged as violating our usage "
                                                 "policy"),)),
    "llama_cpp_overflow": Scenario((Reply(status=400, error_body={"error": {
        "code": 400, "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}),)),
    "vllm_overflow": Scenario((Reply(status=400, error_body={
        "object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested "
        "5000 tokens.", "type": "BadRequestError", "param": None, "code": 400}),)),
    "string_error_body": Scenario((Reply(status=400, error_body={"error": "model not loaded"}),)),
    "detail_error_body": Scenario((Reply(status=400, error_body={"detail": "bad things"}),)),
    "hang_up_without_answer": Scenario((Reply(close_without_answer=True), Reply(text="ok"))),
    "hang_up_forever": Scenario((Reply(close_without_answer=True, repeat=True),)),
    "echoed_key_is_redacted": Scenario((Reply(status=401, echo_authorization=True),)),
}


@dataclass
class Outcome:
    events: list[Any]
    requests: list[dict[str, Any]]


def normalized(event: StreamEvent, cut_error_at: str | None) -> Any:
    """The event without what differs between two runs: timestamps, and ids made from them."""
    if isinstance(event, Done):
        message = dict(event.message)
        message.pop("timestamp")
        if cut_error_at and cut_error_at in message.get("errorMessage", ""):
            message["errorMessage"] = message["errorMessage"].split(cut_error_at)[0]
        return ("done", json.loads(_TIMESTAMP_ID.sub("call_T_", json.dumps(message))))
    if isinstance(event, ToolCallDelta):
        return replace(event, id=_TIMESTAMP_ID.sub("call_T_", event.id))
    return event


def run(model: ChatModel, server: ScriptedServer, scenario: Scenario) -> Outcome:
    before = len(server.requests)
    server.enqueue(*scenario.replies)
    events = [normalized(e, scenario.cut_error_at) for e in model.stream(scenario.request)]
    return Outcome(events, server.requests[before:])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_direct_client_matches_litellm(name: str, scripted_server: ScriptedServer) -> None:
    scenario = SCENARIOS[name]
    key = "sk-test-key-0123456789"
    via_litellm = run(LiteLLMModel(INFO, api_base=scripted_server.base_url, api_key=key, retry=scenario.retry),
                      scripted_server, scenario)
    _drain(scripted_server)
    direct = run(OpenAICompatModel(INFO, api_base=scripted_server.base_url, api_key=key, retry=scenario.retry,
                                   estimate_usage=estimate_stream_usage),  # as resolve.create_model wires it
                 scripted_server, scenario)
    assert direct.events == via_litellm.events
    assert direct.requests == via_litellm.requests


def _drain(server: ScriptedServer) -> None:
    """Forget a repeating reply left at the head of the queue, so the second run starts like the first."""
    with server._lock:
        server._queue.clear()

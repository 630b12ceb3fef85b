"""The fake OpenAI Responses server: each validation rule refuses with the API's wording and lets a valid
request through; the stream has the API's event shapes; reasoning comes back encrypted only when asked."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.http_client import Response, post
from fakes.responses_reply import call_reply, text_reply
from fakes.responses_server import FakeResponsesServer

AUTH = {"Authorization": "Bearer sk-fake"}
USER = {"role": "user", "content": [{"type": "input_text", "text": "hi"}]}
REASONING = {"effort": "medium", "summary": "auto"}
ENCRYPTED = ["reasoning.encrypted_content"]


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    fake = FakeResponsesServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def send(server: FakeResponsesServer, items: list[dict[str, Any]], **fields: Any) -> Response:
    body = {"model": "o4-mini", "input": items, "stream": True, "store": False, **fields}
    return post(server.base_url + "/responses", body, AUTH)


def error_of(response: Response) -> tuple[int, str]:
    return response.status, response.json()["error"]["message"]


def first_turn(server: FakeResponsesServer) -> list[dict[str, Any]]:
    """The items of a reasoning + tool call reply, as a client sends them back next time."""
    server.enqueue(call_reply("read", {"path": "a.py"}, reasoning="Read first."))
    send(server, [USER], reasoning=REASONING, include=ENCRYPTED)
    output = server.records[-1].output
    assert output is not None
    return output


def test_a_tool_loop_with_encrypted_reasoning_sent_back_is_accepted(server: FakeResponsesServer) -> None:
    items = first_turn(server)
    call = items[1]
    answer = send(server, [USER, *items, {"type": "function_call_output", "call_id": call["call_id"], "output": "x"}],
                  reasoning=REASONING, include=ENCRYPTED)
    assert answer.status == 200 and server.rejections == []


def test_the_stream_ends_with_usage_and_the_output_items(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("hello there", reasoning="Think."))
    events = send(server, [USER], reasoning=REASONING, include=ENCRYPTED).events()
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.reasoning_summary_text.delta" in kinds and "response.output_text.delta" in kinds
    final = events[-1][1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][0]["summary"] == [{"type": "summary_text", "text": "Think."}]
    assert final["usage"]["input_tokens"] > 0 and "cached_tokens" in final["usage"]["input_tokens_details"]


def test_reasoning_is_encrypted_only_when_the_request_includes_it(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("a", reasoning="Think."), text_reply("b", reasoning="Think."))
    send(server, [USER], reasoning=REASONING)
    send(server, [USER], reasoning=REASONING, include=ENCRYPTED)
    plain, encrypted = (record.output[0] for record in server.records if record.output)
    assert "encrypted_content" not in plain and encrypted["encrypted_content"]


def test_reasoning_without_its_encrypted_content_is_not_found_when_nothing_is_stored(
        server: FakeResponsesServer) -> None:
    items = first_turn(server)
    bare = {key: value for key, value in items[0].items() if key != "encrypted_content"}
    output = {"type": "function_call_output", "call_id": items[1]["call_id"], "output": "x"}
    status, message = error_of(send(server, [USER, bare, items[1], output]))
    assert status == 404
    assert message == (f"Item with id '{bare['id']}' not found. Items are not persisted when `store` is set to false. "
                       "Try again with `store` set to true, or remove this item from your input.")


def test_altered_encrypted_content_is_refused(server: FakeResponsesServer) -> None:
    items = first_turn(server)
    other = {**items[0], "id": "rs_" + "0" * 48}
    output = {"type": "function_call_output", "call_id": items[1]["call_id"], "output": "x"}
    status, message = error_of(send(server, [USER, other, items[1], output]))
    assert (status, message) == (400, f"The encrypted content for item {other['id']} could not be verified.")


def test_a_call_id_over_64_characters_is_too_long(server: FakeResponsesServer) -> None:
    long_id = "call_" + "a" * 76
    call = {"type": "function_call", "call_id": long_id, "name": "read", "arguments": "{}"}
    status, message = error_of(send(server, [USER, call, {"type": "function_call_output", "call_id": long_id,
                                                          "output": "x"}]))
    assert (status, message) == (400, "Invalid 'input[1].call_id': string too long. Expected a string with maximum "
                                      "length 64, but got a string with length 81 instead.")


def test_a_function_call_id_must_begin_with_fc(server: FakeResponsesServer) -> None:
    call = {"type": "function_call", "id": "call_1", "call_id": "call_1", "name": "read", "arguments": "{}"}
    status, message = error_of(send(server, [USER, call, {"type": "function_call_output", "call_id": "call_1",
                                                          "output": "x"}]))
    assert (status, message) == (400, "Invalid 'input[1].id': 'call_1'. Expected an ID that begins with 'fc'.")


def test_an_unknown_item_type_is_refused(server: FakeResponsesServer) -> None:
    status, message = error_of(send(server, [USER, {"type": "thinking", "thinking": "x"}]))
    assert status == 400 and message.startswith("Invalid value: 'thinking'. Supported values are: 'message'")


def test_reasoning_must_be_followed_by_its_item(server: FakeResponsesServer) -> None:
    items = first_turn(server)
    status, message = error_of(send(server, [USER, items[0], USER]))
    assert (status, message) == (400, f"Item '{items[0]['id']}' of type 'reasoning' was provided without its "
                                      "required following item.")


def test_every_call_needs_its_output_and_every_output_its_call(server: FakeResponsesServer) -> None:
    call = {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"}
    assert error_of(send(server, [USER, call])) == (400, "No tool output found for function call call_1.")
    orphan = {"type": "function_call_output", "call_id": "call_2", "output": "x"}
    assert error_of(send(server, [USER, orphan])) == (
        400, "No tool call found for function call output with call_id call_2.")


def test_an_o_series_model_refuses_minimal_effort(server: FakeResponsesServer) -> None:
    status, message = error_of(send(server, [USER], reasoning={"effort": "minimal"}))
    assert (status, message) == (400, "Unsupported value: 'minimal' is not supported with the 'o4-mini' model. "
                                      "Supported values are: 'low', 'medium', and 'high'.")


def test_gpt_5_1_refuses_minimal_and_takes_none(server: FakeResponsesServer) -> None:
    status, message = error_of(send(server, [USER], model="gpt-5.1", reasoning={"effort": "minimal"}))
    assert (status, message) == (400, "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. "
                                      "Supported values are: 'none', 'low', 'medium', and 'high'.")
    assert send(server, [USER], model="gpt-5.1", reasoning={"effort": "none"}).status == 200


def test_an_assistant_message_takes_output_text_only(server: FakeResponsesServer) -> None:
    said = {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}
    assert error_of(send(server, [USER, said, USER])) == (
        400, "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.")


def test_a_repeated_prefix_is_reported_as_cached(server: FakeResponsesServer) -> None:
    long_user = {"role": "user", "content": [{"type": "input_text", "text": "x" * 8000}]}
    send(server, [long_user])
    send(server, [long_user, {"role": "assistant", "content": "ok"}, USER])
    first, second = (record.usage for record in server.records)
    assert first is not None and second is not None
    assert first["input_tokens_details"]["cached_tokens"] == 0
    assert second["input_tokens_details"]["cached_tokens"] == 1920


def test_a_refused_request_keeps_its_scripted_reply(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("kept"))
    send(server, [USER], reasoning={"effort": "minimal"})
    send(server, [USER])
    assert server.pending == 0
    output = server.records[-1].output
    assert output is not None and output[0]["content"][0]["text"] == "kept"


def test_a_request_without_a_key_is_unauthorized(server: FakeResponsesServer) -> None:
    answer = post(server.base_url + "/responses", {"model": "o3", "input": "hi"}, {})
    assert answer.status == 401 and "didn't provide an API key" in answer.json()["error"]["message"]

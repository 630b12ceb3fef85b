"""The fake Gemini server on the wire: each validation rule rejects with Gemini's wording and lets a valid
request through, thought signatures are bound to their call, the stream has Gemini's chunk shapes, and
every conversation sent is counted."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from fakes.gemini_checks import Limits
from fakes.gemini_reply import FunctionCall, GeminiReply, Text, Thought, call_reply, text_reply
from fakes.gemini_server import FakeGeminiServer
from fakes.http_client import Response, post

KEY = {"x-goog-api-key": "g-fake"}
QUESTION = [{"role": "user", "parts": [{"text": "read a.py"}]}]


@pytest.fixture
def server() -> Iterator[FakeGeminiServer]:
    fake = FakeGeminiServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def send(
    server: FakeGeminiServer,
    headers: dict[str, str] = KEY,
    method: str = "generateContent",
    query: str = "",
    **fields: Any,
) -> Response:
    body = {"contents": QUESTION, **fields}
    return post(f"{server.base_url}/models/gemini-2.5-pro:{method}{query}", body, headers)


def rejection(response: Response, code: int = 400) -> str:
    assert response.status == code, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["status"] in ("INVALID_ARGUMENT", "PERMISSION_DENIED")
    return str(error["message"])


def signed_call(server: FakeGeminiServer, args: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model turn with a function call, as the server answered it."""
    server.enqueue(call_reply("read", args or {"path": "a.py"}, thought="Look first."))
    content = send(server).json()["candidates"][0]["content"]
    return {"role": "model", "parts": [part for part in content["parts"] if not part.get("thought")]}


def loop(model_turn: dict[str, Any], responses: int = 1) -> list[dict[str, Any]]:
    answer = {"functionResponse": {"name": "read", "response": {"content": "print(1)"}}}
    return [*QUESTION, model_turn, {"role": "user", "parts": [answer] * responses}]


# --- key, path, fields ----------------------------------------------------------------------------------


def test_missing_api_key_is_rejected_with_403(server: FakeGeminiServer) -> None:
    assert rejection(send(server, headers={}), 403).startswith("Method doesn't allow unregistered callers")


def test_api_key_as_query_parameter_is_accepted(server: FakeGeminiServer) -> None:
    assert send(server, headers={}, query="?key=g-fake").status == 200


def test_wrong_api_key_is_rejected_when_one_is_configured() -> None:
    with FakeGeminiServer(api_key="right").start() as fake:
        assert rejection(send(fake)) == "API key not valid. Please pass a valid API key."


def test_valid_request_gets_a_candidate_and_usage(server: FakeGeminiServer) -> None:
    server.enqueue(GeminiReply(parts=(Thought("Hm."), Text("Hello.")), thoughts_tokens=30, cached_tokens=4))
    answer = send(server).json()
    candidate = answer["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "Hm.", "thought": True}, {"text": "Hello."}]}
    assert candidate["finishReason"] == "STOP"
    usage = answer["usageMetadata"]
    assert usage["thoughtsTokenCount"] == 30 and usage["cachedContentTokenCount"] == 4
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"] + 30


def test_unknown_path_is_not_found(server: FakeGeminiServer) -> None:
    assert send(server, method="predict").status == 404


def test_max_output_tokens_above_the_model_limit_is_rejected(server: FakeGeminiServer) -> None:
    message = rejection(send(server, generationConfig={"maxOutputTokens": 65537}))
    assert message == (
        "Unable to submit request because it has a maxOutputTokens value of 65537 but the supported range is "
        "from 1 (inclusive) to 65537 (exclusive). Update the value and try again."
    )
    assert send(server, generation_config={"max_output_tokens": 65536}).status == 200  # snake_case is read too


def test_thinking_cannot_be_turned_off_on_pro(server: FakeGeminiServer) -> None:
    message = rejection(send(server, generationConfig={"thinkingConfig": {"thinkingBudget": 0}}))
    assert message == "Budget 0 is invalid. This model only works in thinking mode."


def test_thinking_budget_out_of_range_is_rejected_dynamic_accepted(server: FakeGeminiServer) -> None:
    message = rejection(send(server, generationConfig={"thinkingConfig": {"thinkingBudget": 52428}}))
    assert message == "The thinking budget (52428) is invalid."
    assert send(server, generationConfig={"thinkingConfig": {"thinkingBudget": -1}}).status == 200


def test_input_over_the_context_window_is_rejected() -> None:
    with FakeGeminiServer(limits=Limits(context_window=100)).start() as fake:
        message = rejection(send(fake, contents=[{"role": "user", "parts": [{"text": "x" * 800}]}]))
        assert message == "The input token count (200) exceeds the maximum number of tokens allowed (100)."


# --- function call turns --------------------------------------------------------------------------------


def test_function_call_without_a_function_response_is_rejected(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    history = [*QUESTION, turn, {"role": "user", "parts": [{"text": "never mind"}]}]
    message = rejection(send(server, contents=history))
    assert message == (
        "Please ensure that the number of function response parts is equal to the number of function call parts "
        "of the function call turn."
    )
    assert send(server, contents=loop(turn)).status == 200


def test_too_many_function_responses_are_rejected(server: FakeGeminiServer) -> None:
    assert "number of function response parts" in rejection(send(server, contents=loop(signed_call(server), 2)))


def test_function_response_without_a_call_is_rejected(server: FakeGeminiServer) -> None:
    history = loop({"role": "model", "parts": [{"text": "no call"}]})
    message = rejection(send(server, contents=history))
    assert message == "Please ensure that function response turn comes immediately after a function call turn."


def test_function_call_after_a_model_turn_is_rejected(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    history = [*QUESTION, {"role": "model", "parts": [{"text": "thinking aloud"}]}, *loop(turn)[1:]]
    assert rejection(send(server, contents=history)).startswith("Please ensure that function call turn comes")


# --- thought signatures ---------------------------------------------------------------------------------


def test_signatures_look_like_real_ones(server: FakeGeminiServer) -> None:
    signature = signed_call(server)["parts"][0]["thoughtSignature"]
    assert len(signature) == 296 and {"+", "/", "="} <= set(signature)
    assert base64.b64decode(signature)


def test_signature_sent_back_exactly_is_accepted(server: FakeGeminiServer) -> None:
    assert send(server, contents=loop(signed_call(server))).status == 200


def test_altered_signature_is_corrupted(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    signature = turn["parts"][0]["thoughtSignature"]
    turn["parts"][0]["thoughtSignature"] = signature[:100] + ("A" if signature[100] != "A" else "B") + signature[101:]
    assert rejection(send(server, contents=loop(turn))) == "Corrupted thought signature."


def test_truncated_signature_is_corrupted(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    turn["parts"][0]["thoughtSignature"] = turn["parts"][0]["thoughtSignature"][:20]
    assert rejection(send(server, contents=loop(turn))) == "Corrupted thought signature."


def test_signature_moved_to_another_call_is_corrupted(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    turn["parts"][0]["functionCall"]["args"] = {"path": "b.py"}
    assert rejection(send(server, contents=loop(turn))) == "Corrupted thought signature."


def test_signed_call_sent_back_without_its_signature_is_rejected(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    del turn["parts"][0]["thoughtSignature"]
    message = rejection(send(server, contents=loop(turn)))
    assert message.startswith("Function call is missing a thought_signature in functionCall parts.")
    assert "function call `default_api:read` , position 2." in message


def test_missing_signature_is_accepted_where_the_model_does_not_require_one() -> None:
    with FakeGeminiServer(limits=Limits(signatures_required=False)).start() as fake:
        turn = signed_call(fake)
        del turn["parts"][0]["thoughtSignature"]
        assert send(fake, contents=loop(turn)).status == 200


def test_only_the_first_parallel_call_is_signed(server: FakeGeminiServer) -> None:
    server.enqueue(GeminiReply(parts=(FunctionCall("read", {"path": "a"}), FunctionCall("read", {"path": "b"}))))
    parts = send(server).json()["candidates"][0]["content"]["parts"]
    assert "thoughtSignature" in parts[0] and "thoughtSignature" not in parts[1]
    assert send(server, contents=loop({"role": "model", "parts": parts}, 2)).status == 200


def test_skip_validator_placeholder_is_accepted(server: FakeGeminiServer) -> None:
    turn = signed_call(server)
    turn["parts"][0]["thoughtSignature"] = base64.b64encode(b"skip_thought_signature_validator").decode()
    assert send(server, contents=loop(turn)).status == 200


# --- stream shapes, counting, queue ---------------------------------------------------------------------


def test_stream_chunks_have_gemini_shapes(server: FakeGeminiServer) -> None:
    server.enqueue(call_reply("read", {"path": "a.py"}, thought="Look at it.", text="Reading now."))
    chunks = [data for _, data in send(server, method="streamGenerateContent", query="?alt=sse").events()]
    parts = [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
    assert "".join(part["text"] for part in parts if part.get("thought")) == "Look at it."
    assert "".join(part["text"] for part in parts if "text" in part and not part.get("thought")) == "Reading now."
    [call] = [part for part in parts if "functionCall" in part]
    assert call["functionCall"] == {"name": "read", "args": {"path": "a.py"}} and len(call["thoughtSignature"]) == 296
    assert all("promptTokenCount" in chunk["usageMetadata"] for chunk in chunks)
    assert [("finishReason" in chunk["candidates"][0]) for chunk in chunks][-2:] == [False, True]
    assert "candidatesTokenCount" in chunks[-1]["usageMetadata"]


def test_stream_without_alt_sse_is_a_json_array(server: FakeGeminiServer) -> None:
    server.enqueue(text_reply("Hi."))
    chunks = send(server, method="streamGenerateContent").json()
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_the_same_conversation_sent_twice_is_counted(server: FakeGeminiServer) -> None:
    send(server)
    assert server.max_sends == 1
    send(server, contents=[{"role": "user", "parts": [{"text": "other"}]}])
    assert server.max_sends == 1
    send(server)
    assert server.max_sends == 2


def test_a_resend_that_only_swaps_signatures_counts_as_the_same_request(server: FakeGeminiServer) -> None:
    history = loop(signed_call(server))
    send(server, contents=history)
    history[1]["parts"][0]["thoughtSignature"] = "skip_thought_signature_validator"
    send(server, contents=history)
    assert server.max_sends == 2


def test_a_rejected_request_does_not_use_up_the_scripted_reply(server: FakeGeminiServer) -> None:
    server.enqueue(text_reply("kept"))
    assert send(server, headers={}).status == 403
    assert send(server).json()["candidates"][0]["content"]["parts"] == [{"text": "kept"}]


def test_scripted_error_has_googles_body(server: FakeGeminiServer) -> None:
    server.enqueue(GeminiReply(status=503, error_status="UNAVAILABLE", error_message="The model is overloaded."))
    response = send(server)
    assert response.status == 503
    assert response.json() == {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}

"""The fake OpenAI Responses server's compaction: ``POST /v1/responses/compact`` returns the user messages and
one compaction item bound to the model and the key (an HMAC), ``compaction_trigger`` and ``compact_threshold``
compact inside ``/v1/responses``, and ``previous_response_id`` must name a kept response."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.http_client import Response, post
from fakes.responses_reply import error_reply, text_reply
from fakes.responses_server import FakeResponsesServer

AUTH = {"Authorization": "Bearer sk-fake"}
MODEL = "gpt-5.1"
USER = {"role": "user", "content": [{"type": "input_text", "text": "build the parser"}]}
REPLY = {"role": "assistant", "content": [{"type": "output_text", "text": "Done: parser.py"}]}
NEXT = {"role": "user", "content": [{"type": "input_text", "text": "now the tests"}]}


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    fake = FakeResponsesServer().start()
    try:
        yield fake
    finally:
        fake.stop()


def compact(server: FakeResponsesServer, items: list[dict[str, Any]], headers: dict[str, str] = AUTH,
            **fields: Any) -> Response:
    return post(server.base_url + "/responses/compact", {"model": MODEL, "input": items, **fields}, headers)


def respond(server: FakeResponsesServer, items: list[dict[str, Any]], headers: dict[str, str] = AUTH,
            **fields: Any) -> Response:
    body = {"model": MODEL, "input": items, "store": False, **fields}
    return post(server.base_url + "/responses", body, headers)


def refusal(response: Response) -> tuple[str, str | None]:
    assert response.status == 400, response.text
    error = response.json()["error"]
    return error["message"], error["code"]


def window(server: FakeResponsesServer) -> list[dict[str, Any]]:
    answer = compact(server, [USER, REPLY])
    assert answer.status == 200, answer.text
    return list(answer.json()["output"])


def test_compact_returns_the_user_messages_then_one_compaction_item(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("The user asked for a parser; it is written."))
    answer = compact(server, [USER, REPLY]).json()
    assert answer["object"] == "response.compaction" and answer["id"].startswith("resp_")
    user, item = answer["output"]
    assert user["role"] == "user" and user["content"] == USER["content"]
    assert item["type"] == "compaction" and item["id"].startswith("cmp_") and item["encrypted_content"]
    assert server.summaries[item["id"]] == "The user asked for a parser; it is written."
    assert answer["usage"]["input_tokens"] > 0 and answer["usage"]["output_tokens"] == 10


def test_the_window_goes_back_to_the_same_model_with_the_same_key(server: FakeResponsesServer) -> None:
    assert respond(server, [*window(server), NEXT]).status == 200
    assert server.rejections == []


def test_a_compaction_item_sent_to_another_model_is_refused(server: FakeResponsesServer) -> None:
    items = window(server)
    message, code = refusal(respond(server, [*items, NEXT], model="gpt-5.2"))
    assert message == (f"The encrypted content for item {items[-1]['id']} could not be verified. Reason: Encrypted "
                       "content could not be decrypted or parsed.")
    assert code == "invalid_encrypted_content"


def test_a_compaction_item_sent_with_another_key_is_refused(server: FakeResponsesServer) -> None:
    items = window(server)
    _, code = refusal(respond(server, [*items, NEXT], {"Authorization": "Bearer sk-other-account"}))
    assert code == "invalid_encrypted_content"


def test_an_altered_compaction_item_is_refused(server: FakeResponsesServer) -> None:
    *users, item = window(server)
    altered = {**item, "encrypted_content": item["encrypted_content"][:-8] + "AAAAAAA="}
    assert refusal(respond(server, [*users, altered, NEXT]))[1] == "invalid_encrypted_content"


def test_a_compaction_item_without_its_id_is_named_by_its_content(server: FakeResponsesServer) -> None:
    *users, item = window(server)
    message, _ = refusal(respond(server, [*users, {"type": "compaction", "encrypted_content": "gAAAAbogus=="},
                                          NEXT]))
    assert message.startswith("The encrypted content gAAA...us== could not be verified.")
    assert respond(server, [*users, {"type": "compaction", "encrypted_content": item["encrypted_content"]},
                            NEXT]).status == 200


def test_a_compaction_item_without_encrypted_content_is_refused(server: FakeResponsesServer) -> None:
    message, code = refusal(respond(server, [{"type": "compaction", "id": "cmp_1"}, NEXT]))
    assert (message, code) == ("Missing required parameter: 'input[0].encrypted_content'.",
                               "missing_required_parameter")


def test_compact_refuses_a_foreign_compaction_item_too(server: FakeResponsesServer) -> None:
    items = window(server)
    assert refusal(compact(server, [*items, NEXT], model="gpt-5.2"))[1] == "invalid_encrypted_content"


def test_compact_needs_an_api_key(server: FakeResponsesServer) -> None:
    assert compact(server, [USER], headers={}).status == 401


def test_a_scripted_error_answers_compact_with_it(server: FakeResponsesServer) -> None:
    server.enqueue(error_reply(500, "The server had an error while processing your request."))
    answer = compact(server, [USER])
    assert answer.status == 500 and answer.json()["error"]["type"] == "server_error"


def test_a_compaction_trigger_as_the_last_item_answers_one_compaction_item(server: FakeResponsesServer) -> None:
    events = respond(server, [USER, REPLY, {"type": "compaction_trigger"}], stream=True).events()
    final = events[-1][1]["response"]
    assert events[-1][0] == "response.completed" and [item["type"] for item in final["output"]] == ["compaction"]
    assert respond(server, [USER, *final["output"], NEXT]).status == 200


def test_a_compaction_trigger_before_other_items_is_refused(server: FakeResponsesServer) -> None:
    message, _ = refusal(respond(server, [{"type": "compaction_trigger"}, USER]))
    assert message == "Invalid 'input[0]': a compaction_trigger item must be the final input item."


def test_compact_refuses_a_compaction_trigger(server: FakeResponsesServer) -> None:
    message, _ = refusal(compact(server, [USER, {"type": "compaction_trigger"}]))
    assert message.startswith("Invalid value: 'compaction_trigger'.")


def test_a_request_reaching_its_compact_threshold_starts_with_a_compaction_item(server: FakeResponsesServer) -> None:
    server.enqueue(text_reply("next step"))
    long_user = {"role": "user", "content": [{"type": "input_text", "text": "x" * 8000}]}
    output = respond(server, [long_user], context_management=[{"type": "compaction", "compact_threshold": 1000}])
    assert [item["type"] for item in output.json()["output"]] == ["compaction", "message"]


def test_a_request_below_its_compact_threshold_is_not_compacted(server: FakeResponsesServer) -> None:
    output = respond(server, [USER], context_management=[{"type": "compaction", "compact_threshold": 100_000}])
    assert [item["type"] for item in output.json()["output"]] == ["message"]


def test_a_compact_threshold_below_one_thousand_is_refused(server: FakeResponsesServer) -> None:
    _, code = refusal(respond(server, [USER], context_management=[{"type": "compaction", "compact_threshold": 10}]))
    assert code == "integer_below_min_value"


def test_previous_response_id_of_a_response_made_with_store_false_is_refused(server: FakeResponsesServer) -> None:
    first = respond(server, [USER]).json()["id"]
    message, code = refusal(respond(server, [NEXT], store=True, previous_response_id=first))
    assert (message, code) == (f"Previous response with id '{first}' not found.", "previous_response_not_found")


def test_previous_response_id_of_a_stored_response_is_accepted(server: FakeResponsesServer) -> None:
    first = respond(server, [USER], store=True).json()["id"]
    assert respond(server, [NEXT], store=True, previous_response_id=first).status == 200


def test_compact_refuses_an_unknown_previous_response_id(server: FakeResponsesServer) -> None:
    assert refusal(compact(server, [NEXT], previous_response_id="resp_nothing"))[1] == "previous_response_not_found"

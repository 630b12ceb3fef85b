"""The Responses ``input`` built from pi-shaped messages (pure): what goes back for the target model's own
replies, for other models' replies, and for results, images and unanswered calls."""

from __future__ import annotations

import json
from typing import Any

from pi_compact.llm.convert import NO_RESULT_TEXT, Target
from pi_compact.llm.openai.responses_input import to_input

O4 = Target("openai", "o4-mini", "openai-responses", "developer")
REASONING = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-opaque"}


def assistant(*blocks: dict[str, Any], provider: str = "openai", model: str = "o4-mini",
              api: str = "openai-responses", stop: str = "toolUse") -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "provider": provider, "model": model, "api": api,
            "stopReason": stop, "timestamp": 1}


def thinking(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "thinking", "thinking": "", "thinkingSignature": json.dumps(item)}


def call(call_id: str) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "a"}}


def result(call_id: str, *content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": list(content) or [{"type": "text", "text": "ok"}], "isError": False, "timestamp": 2}


def test_reasoning_without_encrypted_content_is_left_out() -> None:
    bare = {key: value for key, value in REASONING.items() if key != "encrypted_content"}
    items = to_input("", [assistant(thinking(bare), call("call_a|fc_a")), result("call_a|fc_a")], O4)
    assert [item["type"] for item in items] == ["function_call", "function_call_output"]


def test_reasoning_not_followed_by_its_item_is_left_out() -> None:
    items = to_input("", [assistant(thinking(REASONING), stop="length")], O4)
    assert items == []


def test_an_id_from_another_provider_gets_a_hashed_item_id_and_a_clean_call_id() -> None:
    foreign = "call a+b|item/with=odd+chars"
    items = to_input("", [assistant(call(foreign), provider="openai-codex", api="openai-codex-responses"),
                          result(foreign)], O4)
    sent = items[0]
    assert sent["call_id"] == "call_a_b" and sent["id"].startswith("fc_") and len(sent["id"]) <= 64
    assert items[1]["call_id"] == "call_a_b"


def test_foreign_ids_of_only_unsafe_characters_get_distinct_call_ids_that_are_never_empty() -> None:
    reply = assistant(call("___"), call("..."), provider="mistral", model="devstral", api="openai-completions")
    items = to_input("", [reply, result("___"), result("...")], O4)
    calls = [item["call_id"] for item in items if item["type"] == "function_call"]
    outputs = [item["call_id"] for item in items if item["type"] == "function_call_output"]
    assert all(calls) and len(set(calls)) == 2 and outputs == calls


def test_an_anthropic_tool_id_goes_as_a_call_id_without_an_item_id() -> None:
    items = to_input("", [assistant(call("toolu_01abc"), provider="anthropic", model="claude-sonnet-4-5",
                                    api="anthropic-messages"), result("toolu_01abc")], O4)
    assert items[0] == {"type": "function_call", "call_id": "toolu_01abc", "name": "read",
                        "arguments": '{"path":"a"}'}


def test_a_call_left_without_a_result_gets_pis_stand_in() -> None:
    items = to_input("", [assistant(call("call_a|fc_a")), {"role": "user", "content": "go on", "timestamp": 3}], O4)
    assert items[1] == {"type": "function_call_output", "call_id": "call_a", "output": NO_RESULT_TEXT}


def test_failed_replies_and_orphan_results_are_skipped() -> None:
    items = to_input("", [assistant(call("call_a|fc_a"), stop="error"), result("call_a|fc_a")], O4)
    assert items == []


def test_images_go_as_input_images_in_user_messages_and_results() -> None:
    image = {"type": "image", "data": "QUJD", "mimeType": "image/png"}
    items = to_input("", [{"role": "user", "content": [{"type": "text", "text": "see"}, image], "timestamp": 1},
                          assistant(call("call_a|fc_a")), result("call_a|fc_a", image)], O4)
    expected = {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,QUJD"}
    assert items[0]["content"][1] == expected
    assert items[-1]["output"] == [expected]


def test_a_text_without_its_message_id_gets_one_by_its_place() -> None:
    items = to_input("", [{"role": "user", "content": "hi", "timestamp": 1},
                          assistant({"type": "text", "text": "hello"}, stop="stop")], O4)
    assert items[1]["id"] == "msg_1" and items[1]["content"][0]["text"] == "hello"


def test_own_ids_too_long_for_the_api_are_hashed_apart_and_results_still_pair() -> None:
    first, second = "call_" + "c" * 100 + "|fc_" + "f" * 100, "call_" + "c" * 100 + "x|fc_" + "f" * 100 + "x"
    items = to_input("", [assistant(call(first), call(second)), result(first), result(second)], O4)
    calls = [(item["call_id"], item["id"]) for item in items if item["type"] == "function_call"]
    outputs = [item["call_id"] for item in items if item["type"] == "function_call_output"]
    assert all(len(call_id) <= 64 and len(item_id) <= 64 for call_id, item_id in calls)
    assert len(set(calls)) == 2 and outputs == [call_id for call_id, _ in calls]
    again = to_input("", [assistant(call(first), call(second)), result(first), result(second)], O4)
    assert again == items


def test_own_reasoning_with_an_id_too_long_for_the_api_is_left_out() -> None:
    long_id = {**REASONING, "id": "rs_" + "r" * 100}
    items = to_input("", [assistant(thinking(long_id), call("call_a|fc_a")), result("call_a|fc_a")], O4)
    assert [item["type"] for item in items] == ["function_call", "function_call_output"]

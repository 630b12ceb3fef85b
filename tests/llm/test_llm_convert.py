"""pi messages -> OpenAI chat messages (what litellm receives)."""

from __future__ import annotations

from typing import Any

from pi_compact.llm.convert import (
    NO_RESULT_TEXT,
    TOOL_IMAGES_INTRO,
    Target,
    safe_tool_call_id,
    to_openai_messages,
    to_openai_tools,
)
from pi_compact.llm.protocol import ToolSpec
from pi_compact.providers import ANTHROPIC


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, "timestamp": 1}


def assistant(*blocks: dict[str, Any], stop_reason: str = "stop") -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), "stopReason": stop_reason, "timestamp": 2}


def call(call_id: str, name: str = "read", **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, *blocks: dict[str, Any], name: str = "read") -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": list(blocks),
        "isError": False,
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image(data: str = "QUJD", mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime}


def test_system_prompt_comes_first() -> None:
    out = to_openai_messages("be brief", [user("hi")])
    assert out == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


def test_empty_system_prompt_is_omitted() -> None:
    assert to_openai_messages("", [user("hi")]) == [{"role": "user", "content": "hi"}]


def test_user_blocks_become_parts_with_data_uri_images() -> None:
    out = to_openai_messages("", [user([text("look"), image("AAAA", "image/jpeg")])])
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
            ],
        }
    ]


def test_assistant_text_and_tool_calls_with_json_string_arguments() -> None:
    message = assistant(text("Reading."), call("call_1", path="a.txt"), stop_reason="toolUse")
    out = to_openai_messages("", [user("go"), message, result("call_1", text("contents"))])
    assert out[1] == {
        "role": "assistant",
        "content": "Reading.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
            }
        ],
    }
    assert out[2] == {"role": "tool", "tool_call_id": "call_1", "content": "contents"}


def test_assistant_with_only_tool_calls_has_null_content() -> None:
    out = to_openai_messages("", [assistant(call("c1"), stop_reason="toolUse"), result("c1", text("x"))])
    assert out[0]["content"] is None


def test_thinking_blocks_are_not_sent_back() -> None:
    message = assistant({"type": "thinking", "thinking": "secret plan"}, text("Answer"))
    assert to_openai_messages("", [message]) == [{"role": "assistant", "content": "Answer"}]


def test_thinking_only_assistant_message_is_dropped() -> None:
    message = assistant({"type": "thinking", "thinking": "hmm"})
    assert to_openai_messages("", [user("a"), message]) == [{"role": "user", "content": "a"}]


def test_error_and_aborted_assistant_messages_are_skipped() -> None:
    failed = assistant(text("partial"), stop_reason="error")
    aborted = assistant(text("half"), stop_reason="aborted")
    out = to_openai_messages("", [user("a"), failed, aborted, user("b")])
    assert out == [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]


def test_results_of_a_skipped_assistant_message_are_dropped() -> None:
    aborted = assistant(call("c1"), stop_reason="aborted")
    out = to_openai_messages("", [user("a"), aborted, result("c1", text("late")), user("b")])
    assert [m["role"] for m in out] == ["user", "user"]


def test_unanswered_tool_call_gets_synthetic_error_result_before_next_user_message() -> None:
    out = to_openai_messages(
        "",
        [
            user("a"),
            assistant(call("c1"), call("c2"), stop_reason="toolUse"),
            result("c1", text("one")),
            user("next"),
        ],
    )
    assert out[2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": NO_RESULT_TEXT},
        {"role": "user", "content": "next"},
    ]


def test_unanswered_tool_call_at_the_end_is_left_alone() -> None:
    out = to_openai_messages("", [user("a"), assistant(call("c1"), stop_reason="toolUse")])
    assert [m["role"] for m in out] == ["user", "assistant"]


def test_tool_result_images_follow_the_tool_messages_as_one_user_message() -> None:
    messages = [
        assistant(call("c1"), call("c2"), stop_reason="toolUse"),
        result("c1", text("a screenshot"), image("IMG1")),
        result("c2", image("IMG2")),
        assistant(text("done")),
    ]
    out = to_openai_messages("", messages)
    assert [m["role"] for m in out] == ["assistant", "tool", "tool", "user", "assistant"]
    assert out[2]["content"] == "(the result is the image attached below)"
    assert out[3]["content"] == [
        {"type": "text", "text": TOOL_IMAGES_INTRO},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,IMG1"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,IMG2"}},
    ]


def test_tool_call_ids_are_made_safe_for_calls_and_results_alike() -> None:
    odd = "call_abc|fc_123"
    history = [assistant(call(odd), stop_reason="toolUse"), result(odd, text("ok"))]
    out = to_openai_messages("", history, Target(api=ANTHROPIC))
    assert out[0]["tool_calls"][0]["id"] == "call_abc_fc_123"
    assert out[1]["tool_call_id"] == "call_abc_fc_123"


def test_chat_completions_keep_the_call_part_of_a_responses_id_within_40_characters() -> None:
    responses_id = "call_" + "a" * 24 + "|fc_" + "b" * 48  # 81 characters, as pi records OpenAI's ids
    out = to_openai_messages("", [assistant(call(responses_id), stop_reason="toolUse"), result(responses_id,
                                                                                           text("ok"))])
    assert out[0]["tool_calls"][0]["id"] == out[1]["tool_call_id"] == "call_" + "a" * 24
    assert to_openai_messages("", [assistant(call("x" * 70), stop_reason="toolUse")])[0]["tool_calls"][0]["id"] == (
        "x" * 40)


def test_safe_tool_call_id_is_at_most_64_chars() -> None:
    assert len(safe_tool_call_id("x" * 100)) == 64


def test_agent_roles_are_converted_to_user_messages() -> None:
    summary = {"role": "compactionSummary", "summary": "S", "tokensBefore": 10, "timestamp": 1}
    out = to_openai_messages("", [summary])
    assert out[0]["role"] == "user"
    assert "<summary>\nS\n</summary>" in out[0]["content"][0]["text"]


def test_tools_use_the_function_shape() -> None:
    spec = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})
    assert to_openai_tools([spec]) == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]

"""Per-call work that must not grow with the context: incremental conversion and encoding, quiet litellm."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pi_compact.llm.convert import ConvertedHistory, to_openai_messages
from pi_compact.llm.openai import body as openai_body
from pi_compact.llm.openai.body import RequestEncoder, request_body, without_null_content
from pi_compact.llm.protocol import ChatRequest, ToolSpec
from pi_compact.messages import Message


def user(text: str) -> Message:
    return {"role": "user", "content": text, "timestamp": 1}


def calls(*ids: str) -> Message:
    blocks = [{"type": "toolCall", "id": i, "name": "read", "arguments": {"path": i}} for i in ids]
    return {"role": "assistant", "content": [{"type": "text", "text": "reading"}, *blocks], "stopReason": "toolUse",
            "timestamp": 2}


def result(call_id: str, image: bool = False) -> Message:
    content: list[dict[str, Any]] = [{"type": "text", "text": f"body of {call_id}"}]
    if image:
        content.append({"type": "image", "data": "QUJD", "mimeType": "image/png"})
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read", "content": content, "timestamp": 3}


def summary() -> Message:
    """An agent-only message: rebuilt as a new (equal) dict for every request, as the session does."""
    return {"role": "compactionSummary", "summary": "earlier work", "tokensBefore": 100, "timestamp": 0}


def growing_histories() -> list[list[Message]]:
    """Each history is the previous one plus what a tool loop appends, with odd cases on the way."""
    steps: list[list[Message]] = [
        [user("start")],
        [calls("a", "b")],  # ends with calls still waiting for results
        [result("a", image=True)],  # ends with a tool image waiting to be sent
        [result("b")],
        [{"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "x", "timestamp": 4}],
        [calls("c")],
        [user("interrupting")],  # answers "c" with a synthetic result
        [result("c")],  # a result whose call was already answered: dropped
        [{"role": "bashExecution", "command": "ls", "output": "a.py", "exitCode": 0, "timestamp": 5}],
    ]
    histories: list[list[Message]] = []
    appended: list[Message] = []  # the same objects in every history, as in a session's context
    for step in steps:
        appended = [*appended, *step]
        histories.append([summary(), *appended])
    return histories


def test_incremental_conversion_equals_a_full_one_at_every_step() -> None:
    history = ConvertedHistory()
    for messages in growing_histories():
        assert history.convert("sys", messages) == to_openai_messages("sys", messages)


def test_the_converted_prefix_is_reused_not_rebuilt() -> None:
    history = ConvertedHistory()
    first, second = growing_histories()[4:6]
    before = history.convert("sys", first)
    after = history.convert("sys", second)
    prefix = before[:-1]  # the last one is the pending tool images, sent at the end of each request
    assert len(after) > len(prefix)
    assert all(a is b for a, b in zip(prefix, after[: len(prefix)], strict=True))


@pytest.mark.parametrize("change", ["system prompt", "dropped last message", "replaced message"])
def test_a_history_that_did_not_just_grow_is_converted_from_scratch(change: str) -> None:
    history = ConvertedHistory()
    messages = growing_histories()[-1]
    history.convert("sys", messages)
    system = "other" if change == "system prompt" else "sys"
    if change == "dropped last message":
        messages = messages[:-1]
    elif change == "replaced message":
        messages = [messages[0], user("something else"), *messages[2:]]
    assert history.convert(system, messages) == to_openai_messages(system, messages)


TOOL = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


@pytest.mark.parametrize(
    "request_",
    [
        ChatRequest("sys", [user("hi")]),
        ChatRequest("", []),
        ChatRequest("sys", growing_histories()[-1], tools=[TOOL], max_tokens=99, reasoning="high"),
    ],
)
def test_the_encoded_body_is_the_json_of_the_body(request_: ChatRequest) -> None:
    data, messages = RequestEncoder().encode(request_, "local")
    expected = request_body(request_, "local", [without_null_content(m) for m in messages])
    assert data == json.dumps(expected).encode("utf-8")
    assert all("content" in m or m.get("tool_calls") for m in json.loads(data)["messages"])


def test_each_message_is_encoded_once_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = RequestEncoder()
    histories = growing_histories()
    encoder.encode(ChatRequest("sys", histories[-2]), "local")
    converted_before = to_openai_messages("sys", histories[-2])
    converted_after = to_openai_messages("sys", histories[-1])
    encoded: list[Any] = []
    real_dumps = json.dumps

    def counting_dumps(value: Any, **kwargs: Any) -> str:
        encoded.append(value)
        return real_dumps(value, **kwargs)

    monkeypatch.setattr(openai_body.json, "dumps", counting_dumps)
    data, _ = encoder.encode(ChatRequest("sys", histories[-1]), "local")
    monkeypatch.undo()
    assert len(converted_after) == len(converted_before) + 1
    # The model name, the new message and the options: nothing of the history before.
    assert len(encoded) == 3
    assert json.loads(data)["messages"][-1] == converted_after[-1]


def test_litellm_skips_its_per_call_copy_of_the_messages_for_logging() -> None:
    from litellm.litellm_core_utils import logging_utils

    from pi_compact.llm.litellm_model import preload_litellm

    preload_litellm()
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,"
                                                                                  + "A" * 200}}]}]
    assert logging_utils.truncate_base64_in_messages(messages) is messages  # returned as is: no copy made


def test_litellm_hands_no_log_record_per_streamed_chunk() -> None:
    import litellm

    from pi_compact.llm.litellm_model import preload_litellm

    preload_litellm()
    assert litellm.disable_streaming_logging is True

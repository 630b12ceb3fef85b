"""The fake Anthropic server's server-side compaction (``compact_20260112``): each rule refuses with the API's
wording, a request reaching its trigger is answered with a ``compaction`` block billed per iteration, the
prompt is read from the last block on, and the block is cached like any other block."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fakes.anthropic_cache import SONNET_4_6, cost
from fakes.anthropic_server import FakeAnthropicServer, usage_of
from fakes.anthropic_stream import AnthropicReply, Compaction, Text, text_reply
from fakes.http_client import ANTHROPIC_HEADERS, Response, post

MODEL = "claude-sonnet-4-6"
BETA = {**ANTHROPIC_HEADERS, "anthropic-beta": "compact-2026-01-12"}
EDIT = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}
LONG = "word " * 60_000  # 75,000 tokens at four characters a token


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(min_cache_tokens=0).start()
    try:
        yield fake
    finally:
        fake.stop()


def send(server: FakeAnthropicServer, headers: dict[str, str] = BETA, **fields: Any) -> Response:
    body = {"model": MODEL, "max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}], **fields}
    return post(server.base_url + "/v1/messages", body, headers)


def managed(*edits: dict[str, Any]) -> dict[str, Any]:
    return {"edits": list(edits)}


def refusal(response: Response) -> str:
    assert response.status == 400, response.text
    return str(response.json()["error"]["message"])


def with_block(block: dict[str, Any], then: str = "go on") -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [block]}, {"role": "user", "content": then}]


SUMMARY = {"type": "compaction", "content": "We built the parser; next: tests."}


# --- what it refuses ------------------------------------------------------------------------------------


def test_context_management_without_a_beta_header_is_an_extra_input(server: FakeAnthropicServer) -> None:
    response = send(server, ANTHROPIC_HEADERS, context_management=managed(EDIT))
    assert refusal(response) == "context_management: Extra inputs are not permitted"


def test_the_compact_edit_under_only_the_context_management_beta_is_an_unknown_tag(server: FakeAnthropicServer) -> None:
    headers = {**ANTHROPIC_HEADERS, "anthropic-beta": "context-management-2025-06-27"}
    message = refusal(send(server, headers, context_management=managed(EDIT)))
    assert message.startswith("context_management.edits.0: Input tag 'compact_20260112' found using 'type' does not")


def test_a_trigger_below_fifty_thousand_tokens_is_refused(server: FakeAnthropicServer) -> None:
    edit = {**EDIT, "trigger": {"type": "input_tokens", "value": 49_999}}
    assert refusal(send(server, context_management=managed(edit))) == (
        "context_management.edits.0.trigger.value: Input should be greater than or equal to 50000")


def test_a_trigger_of_another_type_is_refused(server: FakeAnthropicServer) -> None:
    edit = {**EDIT, "trigger": {"type": "tool_uses", "value": 60_000}}
    assert refusal(send(server, context_management=managed(edit))) == (
        "context_management.edits.0.trigger.type: Input should be 'input_tokens'")


def test_an_unknown_field_of_the_edit_is_an_extra_input(server: FakeAnthropicServer) -> None:
    edit = {**EDIT, "keep": {"type": "tool_uses", "value": 3}}
    assert refusal(send(server, context_management=managed(edit))) == (
        "context_management.edits.0.keep: Extra inputs are not permitted")


def test_pause_after_compaction_must_be_a_boolean(server: FakeAnthropicServer) -> None:
    edit = {**EDIT, "pause_after_compaction": "yes"}
    assert refusal(send(server, context_management=managed(edit))) == (
        "context_management.edits.0.pause_after_compaction: Input should be a valid boolean")


def test_instructions_must_be_a_string(server: FakeAnthropicServer) -> None:
    edit = {**EDIT, "instructions": ["summarize"]}
    assert refusal(send(server, context_management=managed(edit))) == (
        "context_management.edits.0.instructions: Input should be a valid string")


def test_a_model_without_server_side_compaction_is_refused(server: FakeAnthropicServer) -> None:
    response = send(server, model="claude-sonnet-4-5", context_management=managed(EDIT))
    assert refusal(response) == (
        "'claude-sonnet-4-5' does not support the 'compact_20260112' context management strategy.")


@pytest.mark.parametrize("model", ["claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-7",
                                   "claude-opus-4-7-20260416"])
def test_the_listed_models_take_the_edit(server: FakeAnthropicServer, model: str) -> None:
    assert send(server, model=model, context_management=managed(EDIT)).status == 200


def test_a_block_without_the_beta_header_is_an_unknown_tag(server: FakeAnthropicServer) -> None:
    message = refusal(send(server, ANTHROPIC_HEADERS, messages=with_block(SUMMARY)))
    assert message.startswith("messages.0.content.0: Input tag 'compaction' found using 'type' does not match any")


def test_a_block_in_a_request_that_does_not_declare_the_edit_is_refused(server: FakeAnthropicServer) -> None:
    assert refusal(send(server, messages=with_block(SUMMARY))) == (
        "messages.0.content.0: `compaction` blocks require a `compact_20260112` strategy in "
        "`context_management.edits`.")


def test_a_block_with_encrypted_content_is_an_extra_input(server: FakeAnthropicServer) -> None:
    block = {**SUMMARY, "encrypted_content": "EpwBCioIDxgC"}
    response = send(server, messages=with_block(block), context_management=managed(EDIT))
    assert refusal(response) == "messages.0.content.0.compaction.encrypted_content: Extra inputs are not permitted"


def test_a_block_with_empty_content_is_refused(server: FakeAnthropicServer) -> None:
    response = send(server, messages=with_block({"type": "compaction", "content": ""}),
                    context_management=managed(EDIT))
    assert refusal(response) == "messages.0.content.0.compaction.content: content cannot be empty"


def test_a_block_without_content_is_refused(server: FakeAnthropicServer) -> None:
    response = send(server, messages=with_block({"type": "compaction"}), context_management=managed(EDIT))
    assert refusal(response) == "messages.0.content.0.compaction.content: Field required"


def test_a_valid_block_with_the_edit_and_the_beta_is_accepted(server: FakeAnthropicServer) -> None:
    block = {**SUMMARY, "cache_control": {"type": "ephemeral"}}
    assert send(server, messages=with_block(block), context_management=managed(EDIT)).status == 200
    assert server.rejections == []


def test_a_refusal_uses_up_no_scripted_reply(server: FakeAnthropicServer) -> None:
    server.enqueue(text_reply("kept"))
    send(server, messages=with_block(SUMMARY))
    assert send(server, messages=with_block(SUMMARY), context_management=managed(EDIT)).json()["content"] == [
        {"type": "text", "text": "kept"}]


# --- what it answers ------------------------------------------------------------------------------------


def test_a_request_below_its_trigger_is_answered_without_compacting(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction("unused"), Text("plain"))))
    answer = send(server, context_management=managed(EDIT)).json()
    assert answer["content"] == [{"type": "text", "text": "plain"}] and answer["stop_reason"] == "end_turn"
    assert "iterations" not in answer["usage"]


def test_reaching_the_trigger_with_pause_answers_the_block_alone(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction("The user pasted a long list."), Text("never sent"))))
    edit = {**EDIT, "pause_after_compaction": True}
    answer = send(server, messages=[{"role": "user", "content": LONG}], context_management=managed(edit)).json()
    assert answer["content"] == [{"type": "compaction", "content": "The user pasted a long list."}]
    assert answer["stop_reason"] == "compaction"
    [summary] = answer["usage"]["iterations"]
    assert summary["type"] == "compaction" and summary["input_tokens"] == 75_000 and summary["output_tokens"] == 7


def test_reaching_the_trigger_without_pause_answers_over_the_compacted_context(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction("The user pasted a long list."), Text("Done."))))
    answer = send(server, messages=[{"role": "user", "content": LONG}], context_management=managed(EDIT)).json()
    assert [block["type"] for block in answer["content"]] == ["compaction", "text"]
    assert answer["stop_reason"] == "end_turn"
    first, second = answer["usage"]["iterations"]
    assert (first["type"], first["input_tokens"]) == ("compaction", 75_000)
    assert second["type"] == "message" and second["input_tokens"] == 7  # the block: 28 characters
    assert answer["usage"]["input_tokens"] == second["input_tokens"]  # the top level leaves the summary pass out


def test_without_a_scripted_summary_the_server_writes_its_own(server: FakeAnthropicServer) -> None:
    edit = {**EDIT, "pause_after_compaction": True}
    answer = send(server, messages=[{"role": "user", "content": LONG}], context_management=managed(edit)).json()
    assert answer["content"] == [{"type": "compaction", "content": "Summary of the conversation so far."}]


def test_a_scripted_null_summary_answers_the_failed_compaction_block(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction(None),)))
    edit = {**EDIT, "pause_after_compaction": True}
    answer = send(server, messages=[{"role": "user", "content": LONG}], context_management=managed(edit)).json()
    assert answer["content"] == [{"type": "compaction", "content": None}]


def test_the_stream_sends_the_block_as_a_start_and_one_compaction_delta(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction("Short summary."),)))
    edit = {**EDIT, "pause_after_compaction": True}
    events = send(server, messages=[{"role": "user", "content": LONG}], context_management=managed(edit),
                  stream=True).events()
    data = [payload for _, payload in events]
    assert data[2] == {"type": "content_block_start", "index": 0,
                       "content_block": {"type": "compaction", "content": None}}
    assert data[3]["delta"] == {"type": "compaction_delta", "content": "Short summary."}
    delta = next(payload for payload in data if payload["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "compaction" and delta["usage"]["iterations"][0]["type"] == "compaction"


def test_a_cut_stream_ends_without_a_stop(server: FakeAnthropicServer) -> None:
    server.enqueue(AnthropicReply(blocks=(Compaction("Short summary."),), cut_after=3))
    edit = {**EDIT, "pause_after_compaction": True}
    events = send(server, messages=[{"role": "user", "content": LONG}], context_management=managed(edit),
                  stream=True).events()
    assert [name for name, _ in events] == ["message_start", "ping", "content_block_start"]


def test_the_prompt_is_counted_from_the_last_block_on(server: FakeAnthropicServer) -> None:
    history = [{"role": "user", "content": LONG * 3}, {"role": "assistant", "content": "ok"}]  # 225k: over the window
    response = send(server, messages=[*history, *with_block(SUMMARY)], context_management=managed(EDIT))
    assert response.status == 200
    assert server.records[-1].prompt_tokens == 11  # the summary's 9 tokens and "go on"'s 2


def test_a_block_with_null_content_is_a_no_op(server: FakeAnthropicServer) -> None:
    history = [{"role": "user", "content": LONG * 3}, {"role": "assistant", "content": "ok"}]
    failed = {"type": "compaction", "content": None}
    response = send(server, messages=[*history, *with_block(failed)], context_management=managed(EDIT))
    assert refusal(response) == "prompt is too long: 225003 tokens > 200000 maximum"


def test_a_marked_block_is_written_then_read_from_the_cache(server: FakeAnthropicServer) -> None:
    block = {"type": "compaction", "content": "S" * 8000, "cache_control": {"type": "ephemeral"}}
    send(server, messages=with_block(block, "first"), context_management=managed(EDIT))
    send(server, messages=with_block(block, "second"), context_management=managed(EDIT))
    first, second = (usage_of(record) for record in server.records)
    assert first["cache_creation_input_tokens"] == 2000 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == 2000 and second["cache_creation_input_tokens"] == 0


def test_cost_bills_every_iteration_of_a_compacted_answer() -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "iterations": [
        {"type": "compaction", "input_tokens": 100_000, "output_tokens": 2_000, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0},
        {"type": "message", "input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0}]}
    assert cost(usage, SONNET_4_6) == pytest.approx((100_010 * 3 + 2_005 * 15) / 1_000_000)

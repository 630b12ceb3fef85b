"""The streamed dry-run report and the message digests behind it equal the report built in one piece."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import (
    assistant,
    bash_execution,
    branch_summary,
    chain,
    custom_message_entry,
    tool_call,
    tool_result,
    user,
    write_session,
)

from pi_compact.compaction.digest import MessageDigest, digest_estimator, digest_message, serialized_text
from pi_compact.compaction.preview import dry_run
from pi_compact.compaction.serialize import (
    conversation_chunks,
    message_text,
    serialize_conversation,
    serialize_message,
)
from pi_compact.compaction.tokens import estimate_tokens_chars4
from pi_compact.jstext import dumps_json, json_string_body_utf8
from pi_compact.messages import convert_to_llm
from pi_compact.settings import CompactionSettings

SETTINGS = CompactionSettings(keep_recent_tokens=60, reserve_tokens=100, token_estimator="chars4")


def _session() -> list[dict[str, Any]]:
    call = tool_call("edit", {"path": "src/\u00e9.py", "oldText": 'a "q" \\ b', "newText": "x\ty"}, call_id="c1")
    return chain(
        user("first question \U0001f600 \u4e0a\u4e0b\u6587"),
        assistant("looking", tool_calls=[call], stop_reason="toolUse", thinking="hmm\nok"),
        tool_result("line\r\nnext\x00\x1f\ud800" + "r" * 3000, tool_call_id="c1", tool_name="edit"),
        bash_execution("ls", "a\nb"),
        custom_message_entry("an extension's note"),
        branch_summary("the other branch"),
        user("second question " + "q" * 200),
        assistant("answer " + "a" * 200),
        user("third question " + "q" * 200),
        assistant("answer " + "a" * 200),
    )


def _whole_report(path: list[dict[str, Any]], window: int) -> str:
    """The report as it was built before streaming: one object with both texts, then dumps_json."""
    preview = dry_run(path, SETTINGS, window)
    report = preview.report()
    plan = preview.plan
    if plan is not None:
        report["plan"]["serialized_history"] = serialize_conversation(convert_to_llm(plan.messages_to_summarize))
        report["plan"]["serialized_turn_prefix"] = serialize_conversation(convert_to_llm(plan.turn_prefix_messages))
    return dumps_json(report)


def test_streamed_json_equals_the_report_dumped_in_one_piece() -> None:
    path = _session()
    preview = dry_run(path, SETTINGS, 1000)
    assert preview.plan is not None and preview.plan.summarize_entry_ids  # a plan with texts to stream
    assert b"".join(preview.json_chunks()) == _whole_report(path, 1000).encode("utf-8")


def test_streamed_json_without_a_plan_is_the_small_report() -> None:
    path = _session()[:1]
    preview = dry_run(path, SETTINGS, 1000)
    assert b"".join(preview.json_chunks()) == _whole_report(path, 1000).encode("utf-8")


@pytest.mark.parametrize(
    "text",
    ["", "plain", 'quote " and \\ backslash', "new\nline\ttab\rreturn", "\b\f\x00\x1f\x7f", "\u00e9\u4e0a\U0001f600",
     "lone \ud800 and \udfff", "\u2028\u2029", "\\n is not a newline"],
)
def test_fast_json_escaping_equals_json_escaping(text: str) -> None:
    assert json_string_body_utf8(text) == dumps_json(text)[1:-1].encode("utf-8")


def test_conversation_chunks_concatenate_to_the_whole_conversation() -> None:
    texts = ["[User]: a", "", "[Assistant]: bb", "[Tool result]: ccc", "", "[User]: d"]
    chunks = list(conversation_chunks(texts, chunk_chars=10))
    assert len(chunks) == 3
    assert "".join(chunks) == "[User]: a\n\n[Assistant]: bb\n\n[Tool result]: ccc\n\n[User]: d"


def test_serialize_conversation_joins_all_blocks_with_blank_lines() -> None:
    messages = convert_to_llm([m["message"] for m in _session() if m["type"] == "message"])
    assert serialize_conversation(messages) == "\n\n".join(part for m in messages for part in serialize_message(m))


def test_a_digest_keeps_what_planning_reads_and_the_text() -> None:
    message = _session()[1]["message"]
    digest = digest_message(message, source=7)
    assert isinstance(digest, MessageDigest)
    assert dict(digest) == {
        "role": "assistant", "provider": message["provider"], "model": message["model"], "stopReason": "toolUse",
        "usage": {"totalTokens": 0, "output": 0},
        "content": [{"type": "toolCall", "name": "edit", "arguments": {"path": "src/\u00e9.py"}}],
    }
    assert serialized_text(digest) == message_text(message)


def test_a_digest_made_without_its_text_cannot_be_serialized() -> None:
    digest = digest_message(user("hello"), source=0, text=False)
    with pytest.raises(ValueError, match="without its text"):
        serialized_text(digest)


def test_agent_messages_are_not_digested() -> None:
    message = bash_execution("ls", "a\nb")
    assert digest_message(message, source=0) is message


def test_digest_estimates_come_from_the_whole_message_once() -> None:
    message = tool_result("r" * 401)
    loads: list[Any] = []

    def load(source: Any) -> dict[str, Any]:
        loads.append(source)
        return message

    estimate = digest_estimator(estimate_tokens_chars4, load)
    digest = digest_message(message, source="line 3")
    assert [estimate(digest), estimate(digest)] == [estimate_tokens_chars4(message)] * 2
    assert loads == ["line 3"]


def test_a_digest_cannot_be_estimated_without_its_reader() -> None:
    estimate = digest_estimator(estimate_tokens_chars4, None)
    with pytest.raises(ValueError, match="without the reader"):
        estimate(digest_message(user("hello"), source=0))


def _cli(session: Path, encoding: str) -> bytes:
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    out = subprocess.run(
        [sys.executable, "-m", "pi_compact", "compact", str(session), "--dry-run", "--json", "--context-window", "1000",
         "--keep-recent-tokens", "60", "--token-estimator", "chars4"],
        capture_output=True, env=env, check=True,
    )
    return out.stdout


def test_json_output_follows_a_stdout_that_is_not_utf8(tmp_path: Path) -> None:
    entries = chain(user("caf\u00e9 " + "q" * 300), assistant("ok " + "a" * 300), user("again"), assistant("fine"))
    session = tmp_path / "s.jsonl"
    write_session(session, entries)
    utf8, latin1 = _cli(session, "utf-8"), _cli(session, "latin-1")
    assert b"caf\xc3\xa9" in utf8 and b"caf\xe9" in latin1
    assert json.loads(latin1.decode("latin-1")) == json.loads(utf8.decode("utf-8"))

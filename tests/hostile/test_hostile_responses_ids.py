"""A session's own ids longer than the Responses API takes are shortened, the same way on every request (issue 42,
item 8): a session whose ids were 5,000 characters sent them at that length, so the real API refused every
request of it. Through the real CLI, against the fake server that validates ids as the API does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, chain, header, tool_call, tool_result, user, write_session
from capped_cli import run_capped
from fakes.responses_reply import text_reply
from fakes.responses_server import FakeResponsesServer

CALL_ID = "call_" + "c" * 5000 + "|fc_" + "f" * 5000
MESSAGE_ID = "msg_" + "m" * 5000


@pytest.fixture()
def server() -> Iterator[FakeResponsesServer]:
    fake = FakeResponsesServer().start()
    yield fake
    fake.stop()


def _own(**fields: Any) -> dict[str, Any]:
    message = assistant(provider="openai", model="gpt-4o", **fields)
    message["api"] = "openai-responses"
    return message


def _session(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    text = {"type": "text", "text": "Reading it.", "textSignature": json.dumps({"v": 1, "id": MESSAGE_ID})}
    entries = chain(user("read a.txt"),
                    _own(stop_reason="toolUse", content=[text, tool_call("read", {"path": "a.txt"}, CALL_ID)]),
                    tool_result("alpha", tool_call_id=CALL_ID, tool_name="read"),
                    _own(text="It says alpha."))
    path = tmp_path / "s.jsonl"
    write_session(path, entries, {**header(), "cwd": str(project)})
    return path


def _ask(tmp_path: Path, server: FakeResponsesServer, session: Path, prompt: str) -> Any:
    return run_capped(tmp_path, ["--model", "openai/gpt-4o", "--api-key", "sk-test", "--session", str(session),
                                 "-p", prompt], cwd=tmp_path / "project",
                      models={"providers": {"openai": {"baseUrl": server.base_url}}})


def _ids(body: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    return [(item.get("type") or "message", item.get("id"), item.get("call_id")) for item in body["input"]
            if item.get("type") in ("function_call", "function_call_output") or item.get("role") == "assistant"]


def test_a_sessions_own_long_ids_are_shortened_the_same_way_on_every_request(
    tmp_path: Path, server: FakeResponsesServer
) -> None:
    session = _session(tmp_path)
    server.enqueue(text_reply("Still alpha."), text_reply("Yes."))
    first = _ask(tmp_path, server, session, "and again?")
    assert (first.returncode, first.stdout.strip()) == (0, "Still alpha."), first.stderr
    second = _ask(tmp_path, server, session, "sure?")
    assert (second.returncode, second.stdout.strip()) == (0, "Yes."), second.stderr
    assert server.rejections == []
    sent = [_ids(record.body) for record in server.records]
    old = sent[0][:3]  # the message, the call and its output of the session's first turn
    assert sent[1][:3] == old  # the same ids again: the prompt cache still matches
    (_, message_id, _), (_, item_id, call_id), (_, _, output_call_id) = old
    assert all(len(value) <= 64 for value in (message_id, item_id, call_id))  # type: ignore[arg-type]
    assert call_id == output_call_id and call_id.startswith("call_") and item_id.startswith("fc_")  # type: ignore[union-attr]
    assert message_id.startswith("msg_")  # type: ignore[union-attr]

"""Signed thinking and thought signatures cross the two tools (issue 21): pi 0.73.1 continues a session whose
replies came from our model layer and replays their signatures as its own, and our model layer continues pi's.
Skipped when pi is not installed in the checkout (``node_modules``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import chain, header, write_session
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import text_reply, tool_reply
from fakes.gemini_reply import call_reply
from fakes.gemini_reply import text_reply as gemini_text
from fakes.gemini_server import FakeGeminiServer, signatures_in
from fakes.pi_probe import pi_installed, run_pi

from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.protocol import ChatRequest, ModelInfo, ToolSpec, complete

pytestmark = pytest.mark.skipif(not pi_installed(), reason="pi is not installed (node_modules)")

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
GEMINI = ModelInfo("gemini/gemini-2.5-pro", "google", 1_048_576, 65_536, reasoning=True)
READ = ToolSpec("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def our_tool_loop(model: LiteLLMModel) -> list[dict[str, Any]]:
    """One tool call and the answer, on our model layer: the messages as our session would hold them."""
    messages = [user("read hello.txt")]
    reply = complete(model, ChatRequest("You are terse.", messages, [READ], thinking="medium"))
    [call] = [block for block in reply["content"] if block["type"] == "toolCall"]
    result = {"role": "toolResult", "toolCallId": call["id"], "toolName": "read",
              "content": [{"type": "text", "text": "hello world"}], "isError": False, "timestamp": 2}  # fmt: skip
    messages += [reply, result]
    messages.append(complete(model, ChatRequest("You are terse.", messages, [READ], thinking="medium")))
    return messages


def session_file(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(*messages), {**header(), "cwd": str(tmp_path)})
    return path


def pi_messages(path: Path) -> list[dict[str, Any]]:
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [entry["message"] for entry in entries if entry.get("type") == "message"]


def test_pi_continues_our_anthropic_session_and_replays_our_signed_thinking(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        server.enqueue(tool_reply("read", {"path": "hello.txt"}, thinking="Read it first."), text_reply("Hello."),
                       text_reply("Still hello."))  # fmt: skip
        messages = our_tool_loop(LiteLLMModel(SONNET, api_base=server.base_url, api_key="sk-fake"))
        path = session_file(tmp_path, messages)
        run = run_pi("anthropic", server.base_url, "and again?", tmp_path, extra_args=("--session", str(path)))
        records = server.records
    assert run.returncode == 0 and run.stdout.strip() == "Still hello.", run.stderr
    assert [record.error for record in records] == [None, None, None]
    signature = messages[1]["content"][0]["thinkingSignature"]
    replayed = records[-1].body["messages"][1]["content"][0]
    assert replayed == {"type": "thinking", "thinking": "Read it first.", "signature": signature}


def test_we_continue_pis_anthropic_session_and_replay_its_signed_thinking(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello world\n", encoding="utf-8")
    path = tmp_path / "pi.jsonl"
    with FakeAnthropicServer().start() as server:
        server.enqueue(tool_reply("read", {"path": "hello.txt"}, thinking="Read it first."), text_reply("Hello."))
        run = run_pi("anthropic", server.base_url, "read hello.txt", tmp_path, extra_args=("--session", str(path)))
        assert run.returncode == 0, run.stderr
        messages = pi_messages(path)
        server.enqueue(tool_reply("read", {"path": "hello.txt"}, thinking="Once more."), text_reply("Same."))
        model = LiteLLMModel(SONNET, api_base=server.base_url, api_key="sk-fake")
        history = [*messages, user("again")]
        reply = complete(model, ChatRequest("You are terse.", history, [READ], thinking="medium"))
        assert server.rejections == [] and reply["stopReason"] == "toolUse"
        sent = server.records[-1].body["messages"][1]["content"][0]
    assert sent["type"] == "thinking" and sent["signature"] == messages[1]["content"][0]["thinkingSignature"]


def test_pi_continues_our_gemini_session_with_our_thought_signature(tmp_path: Path) -> None:
    with FakeGeminiServer().start() as server:
        server.enqueue(call_reply("read", {"path": "hello.txt"}, thought="Look."), gemini_text("Hello."),
                       gemini_text("Still hello."))  # fmt: skip
        messages = our_tool_loop(LiteLLMModel(GEMINI, api_base=server.base_url, api_key="g-fake"))
        path = session_file(tmp_path, messages)
        run = run_pi("gemini", server.base_url, "and again?", tmp_path, extra_args=("--session", str(path)))
        records = server.records
    assert run.returncode == 0 and run.stdout.strip() == "Still hello.", run.stderr
    assert [record.error for record in records] == [None, None, None] and server.max_sends == 1
    assert signatures_in(records[-1].body) == list(server.issued_signatures.values())


def test_we_continue_pis_gemini_session_with_its_thought_signature(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello world\n", encoding="utf-8")
    path = tmp_path / "pi.jsonl"
    with FakeGeminiServer().start() as server:
        server.enqueue(call_reply("read", {"path": "hello.txt"}, thought="Look."), gemini_text("Hello."))
        run = run_pi("gemini", server.base_url, "read hello.txt", tmp_path, extra_args=("--session", str(path)))
        assert run.returncode == 0, run.stderr
        messages = pi_messages(path)
        server.enqueue(gemini_text("Same."))
        model = LiteLLMModel(GEMINI, api_base=server.base_url, api_key="g-fake")
        reply = complete(model, ChatRequest("You are terse.", [*messages, user("again")], [READ], thinking="medium"))
        assert reply["stopReason"] == "stop" and server.rejections == [] and server.max_sends == 1
        assert signatures_in(server.records[-1].body) == list(server.issued_signatures.values())
